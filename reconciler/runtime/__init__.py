"""The runtime: one batch of what a Connect worker does, with the tasks run on Spark.

- `batch/`: the worker's batch on the driver (`worker.BatchWorker`): statuses, restarts and
  auto-restarts, fencing, liveness, reports, starting and stopping connectors
  (`lifecycle`), and the task interface (`tasks`: `TaskWork` in, `TaskOutcome` out,
  `TaskExecutor`). No Spark.
- `executor`: `SparkExecutor`, the `TaskExecutor` that runs a batch's tasks on Spark, one job
  per connector, through the jobs below.
- `sink/` and `source/`: one batch of a sink or a source connector, on the driver and in the
  Python workers (sinks read ranges with confluent-kafka or Spark's Kafka data source).
- `spark/`: Spark itself: the session, how jobs run, what is shipped to executors, the driver
  JVM's class-data-sharing archive, the local workers' daemon, the JVM's output, and Spark's
  Kafka data source.

Inside, top to bottom: `executor` > `sink` | `source` > `spark` | `batch` (`lint-imports`).
Names: a `Plan` is the reconciler's plan (made in `app`, never here); a `RestartPlan` is
Connect's word for what one restart request restarts; the work of a batch is `TaskWork`.

May import `kafka`, `connectors`, `core`, `toolchain` and the leaves (`errors`, `heap`, `logs`,
`masking`, `failpoints`); not the offsets package, the REST API, the use cases or the CLI. In
the product, only this package imports Spark (`devtools` does, to run a cluster for tests).
"""
