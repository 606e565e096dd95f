"""One batch of a sink connector: Kafka offset ranges, Spark partitions, the sink's writer.

`job` on the driver (topics, ranges, commits after the job), `reset` (where a range starts:
the group's offset or `auto.offset.reset`), `ranges` (what one Spark partition is asked and
reports), `task` (the range runner, in a Python worker: start, open, write, `pre_commit`, stop),
and its two readers: `reader` (confluent-kafka, the default) and `spark_reader` (Spark's Kafka
data source, `runtime.spark.data_source`).

May import `batch` (the task interface, task logs), `spark` (jobs and the session, the only
way to Spark: never `pyspark` itself), `kafka`, `connectors`, `core` and the leaves.
"""
