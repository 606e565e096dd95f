"""KIP-745 restarts in a batch worker: which restart records are pending, and what they restart.

A Connect worker consumes `restart-connector-<name>` records as they arrive, and ignores those
it reads while catching up at start-up (`KafkaConfigBackingStore`: a restart request reaches the
herder only once the store has `started`). A batch worker starts on every tick, so it cannot
tell "new" from "old" by when it read a record. It keeps two kinds of marks in our own topic:

- `runtime-started` = `{"config-offset":S}`, written by the first tick that ever ran on the
  group: S is the config topic's end offset that tick read. Restart records below S were
  written before this runtime started, and are ignored as Java ignores its start-up backlog;
- `restart-processed/<name>` = `{"offset":N,"processed-at":ms}`: the offset of the newest
  restart record of the connector this runtime executed (or skipped). Records above it are
  pending; at or below it, done.

A connector's records are pending above its processed mark, or, with no mark yet, from S on.
One exception keeps a manifest's one-shot `restart` block working when it was applied before
the runtime ever ran: if our own `apply` recorded a restart id for the connector (an
`applied/restart/…` record) and no tick has executed a restart of it yet, its newest restart
record is pending even below S (`apply` wrote it, and meant it for this runtime).

The processed mark is written in the same transaction as the statuses the restart produced, so
a crash before that commit re-executes the restart on the next tick, and one after it never
does: each request takes effect exactly once. (The keys live in `<group>-reconciler` beside the
planner's records, encoded in `kafka.own_records`; the planner's reader skips them as unknown
keys, at debug level. The name is everything after the prefix, so any Connect connector name
fits.)

Several pending records for one connector merge as Connect merges them
(`core.transitions.merge_restart`: the higher-impact request is kept, covering every record up
to the newest offset). The plan itself is Connect's rule, `core.transitions.restart_targets`, applied
to the statuses read at the start of the tick. Pure: records in, plans out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from reconciler.core.live import InstanceState, InstanceStatus
from reconciler.core.transitions import PendingRestart, merge_restart, restart_targets
from reconciler.kafka import own_records as own
from reconciler.kafka import records as rec
from reconciler.kafka.records import Invalid

_STARTED_KEY = own.RUNTIME_STARTED_KEY.encode()
_PROCESSED_PREFIX = own.RESTART_PROCESSED_PREFIX.encode()


@dataclass(frozen=True, slots=True)
class RestartRecord:
    """One `restart-connector-<name>` record as read from the config topic."""

    connector: str
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
        self.started: int | None = None  # the `runtime-started` mark: S

    def on_config(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None or value is None or not key.startswith(rec.RESTART_PREFIX.encode()):
            return
        flags = rec.decode_restart(value)
        if isinstance(flags, Invalid):  # Java skips it too (the config replay logs it)
            return
        name = key.decode("utf-8", "replace")[len(rec.RESTART_PREFIX) :]
        self.records.append(RestartRecord(name, flags.include_tasks, flags.only_failed, offset))

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> None:
        if key == _STARTED_KEY:
            started = None if value is None else own.decode_runtime_started(value)
            self.started = None if isinstance(started, Invalid) else started
            return
        if key is None or not key.startswith(_PROCESSED_PREFIX):
            return
        name = key.decode("utf-8", "replace")[len(_PROCESSED_PREFIX) :]
        if value is None:
            self.processed.pop(name, None)
            return
        offset = own.decode_restart_processed(value)
        if not isinstance(offset, Invalid):
            self.processed[name] = offset

    def pending(self, config_end: int, applied: Collection[str] = ()) -> dict[str, PendingRestart]:
        """What to execute now; `config_end`: the config topic's end offset this tick read (S on
        the first tick); `applied`: connectors our `apply` recorded a restart id for."""
        started = config_end if self.started is None else self.started
        return pending_restarts(self.records, self.processed, started, applied)


def pending_restarts(
    records: Sequence[RestartRecord],
    processed: Mapping[str, int],
    started: int = 0,
    applied: Collection[str] = (),
) -> dict[str, PendingRestart]:
    """Per connector, the merged request of its records above its processed mark (no mark: at
    or above `started`), plus the newest record of an applied, never-processed connector."""
    newest: dict[str, RestartRecord] = {record.connector: record for record in records}
    pending: dict[str, PendingRestart] = {}
    for record in records:
        name = record.connector
        floor = processed[name] + 1 if name in processed else started
        ours = name in applied and name not in processed and record is newest[name]
        if record.offset < floor and not ours:
            continue
        new = PendingRestart(record.include_tasks, record.only_failed, record.offset)
        pending[name] = merge_restart(pending.get(name), new)
    return pending


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
