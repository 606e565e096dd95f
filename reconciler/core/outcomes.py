"""What one task's batch did (`TaskOutcome`): made by the runtime, read by the REST API's
counters (`api.observer`) and the tick's report; a plain value, so both import it from here."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class TaskOutcome:
    connector: str
    task_id: int
    records: int  # records moved in this batch
    error: str | None = None  # full Python traceback text when the task failed (-> FAILED trace)
    bytes: int = 0  # key and value bytes of those records
    # Sinks: records between where the ranges start (`sink.reset`) and the ends snapshotted at batch
    # start, largest over the task's partitions (what the batch had to catch up); None: a source.
    lag: int | None = None
    offsets_committed: bool = False  # sinks: the batch committed offsets of the task's partitions
    # Why the task did not run and waits for the next batch (a cluster its clients cannot reach,
    # an open transaction over the offsets); None: it ran. A wait is neither a batch nor a failure.
    waited: str | None = None
    # KIP-558: the topics the task read records of (a sink) or committed records to (a source)
    # in this batch, sorted; the worker records them as the connector's active topics.
    topics: tuple[str, ...] = ()
