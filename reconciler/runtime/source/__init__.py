"""One batch of a source connector: each task polls and produces from its own Spark partition.

`driver` (before the job, on the driver: take over the tasks' transactional ids, check for
open transactions, read the offsets stores), `committed` (a connector's committed offsets as its
tasks get them, read by the driver, or by a task after its own fence when a failed job's tasks
may still commit), `job` (the Spark job over the tasks) and `task` (one task's batch in a
Python worker: poll, then produce records and offsets in one Kafka transaction, KIP-618).

May import `batch` (the task interface, task logs), `spark` (jobs and the session, the only
way to Spark: never `pyspark` itself), `kafka`, `connectors`, `core` and the leaves.
"""
