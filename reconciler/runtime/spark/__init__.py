"""Spark itself: every other part of the runtime reaches Spark through this package.

`session` (starting Spark: local, a cluster master or a Spark Connect server), `handle` (`Spark`:
a classic context whose SparkSession is built only when asked for, or a Connect session), `jobs` (the
one way a function runs over work items or a DataFrame's partitions), `ship` and `probe` (what
executors need, shipped and checked), `connect_sessions` and `connect_attach` (a Spark Connect
server session kept across runs, and attaching to it), `cds` and `cds_build` (the class-data-sharing
archives of the driver's JVM and of spark-submit's launcher), `daemon` (local workers' Python
daemon) and `prefork` (that daemon, started beside the JVM), `jvm_output` (the JVM's stderr as JSON
lines) and `data_source` (Spark's Kafka data source: its jars, a DataFrame over offset ranges).

May import `pyspark`, `toolchain`, `connectors` (the probe loads plugin classes), `kafka`'s
settings and the leaves; nothing of the batch, the sinks or the sources.
"""
