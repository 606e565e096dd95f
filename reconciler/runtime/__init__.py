"""The runtime: one batch of what a Connect worker does, with the tasks run on Spark.

- the batch (`worker.BatchWorker`): `statuses` (what to report, which tasks run),
  `restarts` and `auto_restart` (KIP-745 and `spec.autoRestart`; the marks they read are
  `kafka.replay.marks`), `fencing` (KIP-618), `plugins` (starting and stopping connectors),
  `liveness`, `reports`;
- the tasks: `tasks` (the work and outcome of each, the executor interface), `executor`
  (`SparkExecutor`), `spark`, `spark_jobs`, `spark_ship`, `executor_probe`, `spark_cds` and
  `spark_cds_build` (the driver JVM's class-data-sharing archive), `spark_daemon` (local
  workers' daemon), `jvm_output` (the JVM's stderr as JSON lines), `task_logs` (a task's log
  records in its worker, as the CLI writes its own); sources
  (`source_driver` and `source_job` on the driver, `source_batch` in a worker) and sinks
  (`sink_job`, `sink_range`, `sink_task`, `sink_reader`, `sink_spark`, `spark_kafka`), and
  `maven` for the Kafka data source's jars;
- `loop`: ticks until a signal.

Names: a `Plan` is the reconciler's plan (made in `app`, never here); a `RestartPlan` is
Connect's word for what one restart request restarts; `sink_ranges` are the offset ranges a
sink batch reads; the work of a batch is `TaskWork`.

May import `kafka`, `connectors`, `core` and the leaves (`errors`, `heap`, `logs`, `masking`,
`failpoints`); not the offsets package, the REST API, the use cases or the CLI. In the product,
only this package imports Spark (`devtools` does, to run a cluster for tests).
"""
