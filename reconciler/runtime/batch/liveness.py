"""What a batch runner records about itself between batches (docs/runtime.md#liveness-between-batches).

A Connect worker's tasks run all the time, so its statuses say both who runs an instance and
that it runs. A batch worker runs tasks only during a tick's batch; its statuses say who runs
the connectors (RUNNING while its loop lives, UNASSIGNED once it stops, as Java writes on
shutdown, see `statuses.release_records`), `batch/<name>` in our own topic says when each
connector's data last moved and how that went, and `wait/<name>` why it does not move now when
its tasks waited at the last batch (until they run, or the worker that wrote it stops). Pure:
live state and outcomes in, records out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.core.live import (
    ConnectTargetState,
    InstanceState,
    LastBatch,
    LiveConnector,
    LiveState,
    TaskBatch,
    Waiting,
)
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.records import Record
from reconciler.runtime.batch.statuses import releasing

if TYPE_CHECKING:
    from reconciler.runtime.batch.tasks import TaskOutcome


def batch_records(live: LiveState, outcomes: Sequence[TaskOutcome], worker_id: str, now_ms: int) -> list[Record]:
    """`batch/<name>` for each connector whose tasks ran; tombstones for deleted connectors' ones.
    Tasks that waited did not run: LAST BATCH keeps saying when the data last moved, and
    `wait/<name>` says why they wait (`_wait_records`)."""
    by_connector: dict[str, dict[int, TaskBatch]] = {}
    for outcome in outcomes:
        if outcome.waited is not None:
            continue
        by_connector.setdefault(outcome.connector, {})[outcome.task_id] = TaskBatch(
            records=outcome.records, bytes=outcome.bytes, failed=outcome.error is not None
        )
    records = [
        own.batch_record(name, LastBatch(finished_at_ms=now_ms, worker_id=worker_id, tasks=tasks))
        for name, tasks in sorted(by_connector.items())
    ]
    gone = [name for name in sorted(live.last_batches) if not _exists(live.connector(name))]
    return records + [own.batch_tombstone(name) for name in gone] + _wait_records(live, outcomes, worker_id, now_ms)


def _wait_records(live: LiveState, outcomes: Sequence[TaskOutcome], worker_id: str, now_ms: int) -> list[Record]:
    """`wait/<name>` for each connector whose tasks waited in this batch (its `since` kept while
    the wait goes on, rewritten only when the reason or the worker changes: the runner that
    writes it is the one whose stop removes it, `released_waits`); tombstones once a connector's
    tasks ran, or it is no longer to run (deleted, paused, stopped). A connector absent from a
    batch that does run keeps its record: the runner may have stopped before the batch."""
    waited = {o.connector: o.waited for o in outcomes if o.waited is not None}
    ran = {o.connector for o in outcomes if o.waited is None}
    records = []
    for name, reason in sorted(waited.items()):
        current = live.waiting.get(name)
        if current is None or current.reason != reason or current.worker_id != worker_id:
            since = now_ms if current is None else current.since_ms
            records.append(own.wait_record(name, Waiting(since_ms=since, worker_id=worker_id, reason=reason)))
    over = [name for name in sorted(live.waiting) if name not in waited and (name in ran or not _to_run(live.connector(name)))]
    return records + [own.wait_tombstone(name) for name in over]


def released_waits(live: LiveState, worker_id: str) -> list[Record]:
    """Tombstones for the `wait/<name>` this worker wrote, when it stops: they say the tasks
    wait for the next batch, and this worker runs no next batch (its statuses turn UNASSIGNED
    in the same transaction). The next runner writes the wait again if it still holds."""
    return [own.wait_tombstone(name) for name, wait in sorted(live.waiting.items()) if wait.worker_id == worker_id]


def running_here(live: LiveState, worker_id: str) -> list[LiveConnector]:
    """Connectors this worker reports RUNNING: their plugin's `stop()` is due when it stops."""
    return [
        connector
        for _, connector in sorted(live.connectors.items())
        if connector.connector_status is not None
        and connector.connector_status.state is InstanceState.RUNNING
        and releasing(connector, worker_id)[0]
    ]


def _exists(connector: LiveConnector | None) -> bool:
    return connector is not None and connector.exists


def _to_run(connector: LiveConnector | None) -> bool:
    return connector is not None and connector.exists and connector.target_state is ConnectTargetState.STARTED
