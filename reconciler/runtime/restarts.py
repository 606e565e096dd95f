"""KIP-745 restarts in a batch worker: which restart records are pending, and what they restart.

A Connect worker consumes `restart-connector-<name>` records as they arrive and ignores those
it reads during its start-up catch-up (docs/state-machine.md#restart-requests). A batch worker starts on
every tick, so it cannot tell "new" from "old" by when it read a record. Instead it keeps, per
connector, the config-topic offset of the newest restart record it has executed, in our own
topic under `restart-processed/<name>` = `{"offset":N,"processed-at":ms}`. A record above
that offset is pending; a record at or below it was executed (or skipped) by an earlier tick.
The mark is written in the same transaction as the statuses the restart produced, so a crash
before that commit re-executes the restart on the next tick, and one after it never does:
each request takes effect exactly once.

(The key lives in `<group>-reconciler` beside the planner's records; the planner's reader
skips it as an unknown key, at debug level. The name is everything after the prefix, so any
Connect connector name fits. A connector never restarted has no mark, so every
restart record of it is pending — including records written before this reconciler ever ran
on the group, which a Connect worker would have executed when they were written.)

Several pending records for one connector merge as Connect merges them: the higher-impact
request is kept (`restart_impact`), and the merged request covers every record up to the
newest offset. The plan itself is Connect's rule, `core.transitions.restart_targets`, applied
to the statuses read at the start of the tick. Pure: records in, plans and records out.
(docs/runtime.md#restarts; the mark's format: docs/record-formats.md#reconciler-topic.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reconciler.core.live import InstanceState, InstanceStatus
from reconciler.core.transitions import restart_impact, restart_targets
from reconciler.kafka import records as rec
from reconciler.kafka.records import Invalid, Record

PROCESSED_PREFIX = "restart-processed/"


@dataclass(frozen=True, slots=True)
class RestartRecord:
    """One `restart-connector-<name>` record as read from the config topic."""

    connector: str
    include_tasks: bool
    only_failed: bool
    offset: int


@dataclass(frozen=True, slots=True)
class PendingRestart:
    """The request to execute for a connector; `offset` = newest record it covers."""

    include_tasks: bool
    only_failed: bool
    offset: int


@dataclass(frozen=True, slots=True)
class RestartPlan:
    """What one pending request restarts, per the statuses at the start of the tick."""

    connector: bool
    tasks: tuple[int, ...]
    offset: int

    @property
    def restarts_anything(self) -> bool:
        return self.connector or bool(self.tasks)


class RestartLog:
    """Collects restart records (config topic) and processed marks (our topic) while reading."""

    def __init__(self) -> None:
        self.records: list[RestartRecord] = []
        self.processed: dict[str, int] = {}

    def on_config(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None or value is None or not key.startswith(rec.RESTART_PREFIX.encode()):
            return
        flags = rec.decode_restart(value)
        if isinstance(flags, Invalid):  # Java skips it too (the config replay logs it)
            return
        name = key.decode("utf-8", "replace")[len(rec.RESTART_PREFIX) :]
        self.records.append(RestartRecord(name, flags.include_tasks, flags.only_failed, offset))

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or not key.startswith(PROCESSED_PREFIX.encode()):
            return
        name = key.decode("utf-8", "replace")[len(PROCESSED_PREFIX) :]
        if value is None:
            self.processed.pop(name, None)
            return
        offset = decode_processed(value)
        if not isinstance(offset, Invalid):
            self.processed[name] = offset

    def pending(self) -> dict[str, PendingRestart]:
        return pending_restarts(self.records, self.processed)


def pending_restarts(
    records: Iterable[RestartRecord], processed: Mapping[str, int]
) -> dict[str, PendingRestart]:
    """Per connector, the merged request of its records newer than its processed mark."""
    pending: dict[str, PendingRestart] = {}
    for record in records:
        if record.offset <= processed.get(record.connector, -1):
            continue
        new = PendingRestart(record.include_tasks, record.only_failed, record.offset)
        old = pending.get(record.connector)
        if old is not None and _impact(old) >= _impact(new):
            new = PendingRestart(old.include_tasks, old.only_failed, max(old.offset, new.offset))
        pending[record.connector] = new
    return pending


def _impact(request: PendingRestart) -> int:
    return restart_impact(request.include_tasks, request.only_failed)


def plan_restart(
    request: PendingRestart,
    connector_status: InstanceStatus | None,
    task_statuses: Mapping[int, InstanceStatus],
) -> RestartPlan:
    """Connect's plan: the connector iff `!onlyFailed || FAILED`, task t iff `includeTasks &&
    (!onlyFailed || t FAILED)`; nothing when the connector has no status (Connect skips it)."""
    state = None if connector_status is None else connector_status.state
    states: dict[int, InstanceState] = {task: status.state for task, status in task_statuses.items()}
    connector, tasks = restart_targets(request.include_tasks, request.only_failed, state, states)
    return RestartPlan(connector, tuple(tasks), request.offset)


def processed_record(connector: str, offset: int, processed_at_ms: int) -> Record:
    """`restart-processed/<name>`: restart records up to `offset` were executed."""
    if not connector:
        raise ValueError("a restart mark needs a connector name")
    value = rec.dumps({"offset": offset, "processed-at": processed_at_ms})
    return Record("reconciler", (PROCESSED_PREFIX + connector).encode("utf-8"), value)


def decode_processed(value: bytes) -> int | Invalid:
    obj = rec.loads(value)
    if isinstance(obj, Invalid):
        return obj
    offset = obj.get("offset") if type(obj) is dict else None
    return offset if type(offset) is int else Invalid("'offset' should be an integer")
