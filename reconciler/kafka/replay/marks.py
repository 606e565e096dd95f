"""The runtime's marks in `<group>-reconciler`: which restart requests it executed, when it
started on the group, and when a connector failed. Pure: records in and out, and the rule that
tells which restart records are pending.

KIP-745 restarts in a batch worker. A Connect worker consumes `restart-connector-<name>` records
as they arrive, and ignores those it reads while catching up at start-up (`KafkaConfigBackingStore`:
a restart request reaches the herder only once the store has `started`). A batch worker starts
on every tick, so it cannot tell "new" from "old" by when it read a record. It keeps two kinds of
marks in our own topic:

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
record is pending even below S (`apply` wrote it, and meant it for this runtime). Several pending
records for one connector merge as Connect merges them: the higher-impact request is kept
(`restart_impact`), and the merged request covers every record up to the newest offset.

Failure marks, `connector-failed/<name>`: Connect restarts a FAILED connector when its config is
updated. A batch worker tells "updated since it failed" by offsets: the mark holds the config
topic's end offset at the tick that wrote the FAILED status, and a `connector-` record at or
above it came later. The mark also holds a digest of the failure's trace, so a mark is only
believed for the failure it was written for (another worker, e.g. Java's, may have written a
FAILED status of its own since). It cannot be the status record's `generation`: Java's status
store compares generations across workers (docs/compatibility.md).

The records' codecs are `kafka.formats.own_records`' (with the rest of our topic), the merge rule is
`core.transitions.merge_restart`; this module holds what reading needs: the logs that collect
them and the rule for which restart records are pending (docs/record-formats.md#reconciler-topic).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from reconciler.core.transitions import PendingRestart, merge_restart
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.own_records import FailureMark
from reconciler.kafka.formats.records import Invalid

_PROCESSED = own.RESTART_PROCESSED_PREFIX.encode()
_STARTED = own.RUNTIME_STARTED_KEY.encode()
_FAILED = own.CONNECTOR_FAILED_PREFIX.encode()
_RESTART = rec.RESTART_PREFIX.encode()


# --- restarts ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RestartRecord:
    """One `restart-connector-<name>` record as read from the config topic."""

    connector: str
    include_tasks: bool
    only_failed: bool
    offset: int


class RestartLog:
    """Restart records (config topic) and the runtime's marks (our topic), collected while reading."""

    def __init__(self) -> None:
        self.records: list[RestartRecord] = []
        self.processed: dict[str, int] = {}
        self.started: int | None = None  # the `runtime-started` mark: S

    def on_config(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None or value is None or not key.startswith(_RESTART):
            return
        flags = rec.decode_restart(value)
        if isinstance(flags, Invalid):  # Java skips it too (the config replay logs it)
            return
        self.add(key.decode("utf-8", "replace")[len(rec.RESTART_PREFIX) :], flags, offset)

    def add(self, connector: str, flags: rec.RestartFlags, offset: int) -> None:
        """A readable restart record (the config replay calls this for each it reads)."""
        self.records.append(RestartRecord(connector, flags.include_tasks, flags.only_failed, offset))

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> bool:
        """Take a record of our topic if it is a restart mark; whether it was one."""
        if key == _STARTED:
            started = None if value is None else own.decode_runtime_started(value)
            self.started = None if isinstance(started, Invalid) else started
            return True
        if key is None or not key.startswith(_PROCESSED):
            return False
        name = key.decode("utf-8", "replace")[len(own.RESTART_PROCESSED_PREFIX) :]
        offset = None if value is None else own.decode_restart_processed(value)
        if isinstance(offset, int):
            self.processed[name] = offset
        elif offset is None:
            self.processed.pop(name, None)
        return True

    def pending(self, config_end: int, applied: Collection[str] = ()) -> dict[str, PendingRestart]:
        """What to execute now; `config_end`: the config topic's end offset this read reached (S
        on the first tick); `applied`: connectors our `apply` recorded a restart id for."""
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


# --- failures ---------------------------------------------------------------------------------------


class FailureLog:
    """Collects the failure marks while our topic is read."""

    def __init__(self) -> None:
        self.marks: dict[str, FailureMark] = {}

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> bool:
        """Take a record of our topic if it is a failure mark; whether it was one."""
        if key is None or not key.startswith(_FAILED):
            return False
        name = key.decode("utf-8", "replace")[len(own.CONNECTOR_FAILED_PREFIX) :]
        mark = None if value is None else own.decode_connector_failed(value)
        if isinstance(mark, FailureMark):
            self.marks[name] = mark
        else:
            self.marks.pop(name, None)
        return True
