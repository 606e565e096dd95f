"""What a batch runner records about itself between batches (docs/runtime.md#liveness-between-batches).

A Connect worker's tasks run all the time, so its statuses say both who runs an instance and
that it runs. A batch worker runs tasks only during a tick's batch; its statuses say who runs
the connectors (RUNNING while its loop lives, UNASSIGNED once it stops, as Java writes on
shutdown, see `statuses.release_records`), and `batch/<name>` in our own topic says when each
connector's data last moved and how that went. Pure: live state and outcomes in, records out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.core.live import InstanceState, LastBatch, LiveConnector, LiveState, TaskBatch
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.records import Record
from reconciler.runtime.statuses import releasing

if TYPE_CHECKING:
    from reconciler.runtime.tasks import TaskOutcome


def batch_records(live: LiveState, outcomes: Sequence[TaskOutcome], worker_id: str, now_ms: int) -> list[Record]:
    """`batch/<name>` for each connector whose tasks ran; tombstones for deleted connectors' ones.
    Tasks that waited did not run: LAST BATCH keeps saying when the data last moved."""
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
    return records + [own.batch_tombstone(name) for name in gone]


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
