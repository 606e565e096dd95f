"""The worker's batch on the driver: what a Connect worker does for its group, with no Spark.

`worker.BatchWorker` runs it: `statuses` (what each connector and task reports, which tasks
run), `restarts` and `auto_restart` (KIP-745 and `spec.autoRestart`; the marks they read are
`kafka.replay.marks`), `fencing` (KIP-618), `lifecycle` (starting and stopping connectors, on
the driver), `active_topics` (KIP-558: the topics each connector's tasks used), `liveness` (what a batch runner records between batches) and `reports` (what a
batch reports). `tasks` is the seam to whatever runs the tasks: `TaskWork` in, `TaskOutcome`
out, the `TaskExecutor` interface; `task_logs` is how a task logs in the worker that runs it.

May import `kafka`, `connectors`, `core` and the leaves; never Spark nor the rest of the
runtime (`lint-imports`): the sink and source jobs and the executor build on it.
"""
