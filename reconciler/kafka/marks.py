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

The keys sit beside the planner's records; the name is everything after the prefix, so any
Connect connector name fits (docs/record-formats.md#reconciler-topic).
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from reconciler.kafka import records as rec
from reconciler.kafka.records import Invalid, Record

PROCESSED_PREFIX = "restart-processed/"
STARTED_KEY = "runtime-started"
FAILED_PREFIX = "connector-failed/"
_PROCESSED = PROCESSED_PREFIX.encode()
_STARTED = STARTED_KEY.encode()
_FAILED = FAILED_PREFIX.encode()
_RESTART = rec.RESTART_PREFIX.encode()


# --- restarts ---------------------------------------------------------------------------------------


def restart_impact(include_tasks: bool, only_failed: bool) -> int:
    """Java's ranking (docs/state-machine.md#restart-requests):
    onlyFailed∧¬tasks < onlyFailed∧tasks < ¬onlyFailed∧¬tasks < ¬onlyFailed∧tasks."""
    return (0 if only_failed else 2) + (1 if include_tasks else 0)


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
            started = None if value is None else decode_started(value)
            self.started = None if isinstance(started, Invalid) else started
            return True
        if key is None or not key.startswith(_PROCESSED):
            return False
        name = key.decode("utf-8", "replace")[len(PROCESSED_PREFIX) :]
        offset = None if value is None else decode_processed(value)
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
        old = pending.get(record.connector)
        if old is not None and _impact(old) >= _impact(new):
            new = PendingRestart(old.include_tasks, old.only_failed, max(old.offset, new.offset))
        pending[record.connector] = new
    return pending


def _impact(request: PendingRestart) -> int:
    return restart_impact(request.include_tasks, request.only_failed)


def processed_record(connector: str, offset: int, processed_at_ms: int) -> Record:
    """`restart-processed/<name>`: restart records up to `offset` were executed."""
    if not connector:
        raise ValueError("a restart mark needs a connector name")
    value = rec.dumps({"offset": offset, "processed-at": processed_at_ms})
    return Record("reconciler", (PROCESSED_PREFIX + connector).encode("utf-8"), value)


def started_record(config_offset: int) -> Record:
    """`runtime-started`: restart records below `config_offset` predate this runtime."""
    value = rec.dumps({"config-offset": config_offset})
    return Record("reconciler", _STARTED, value)


def decode_started(value: bytes) -> int | Invalid:
    obj = rec.loads(value)
    offset = obj.get("config-offset") if type(obj) is dict else None
    return offset if type(offset) is int else Invalid("'config-offset' should be an integer")


def decode_processed(value: bytes) -> int | Invalid:
    obj = rec.loads(value)
    if isinstance(obj, Invalid):
        return obj
    offset = obj.get("offset") if type(obj) is dict else None
    return offset if type(offset) is int else Invalid("'offset' should be an integer")


# --- failures ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FailureMark:
    config_end: int  # the config topic's end offset when the FAILED status was written
    trace_digest: str

    def holds_for(self, trace: str | None) -> bool:
        return self.trace_digest == trace_digest(trace)


def trace_digest(trace: str | None) -> str:
    return hashlib.sha256((trace or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def failure_mark_record(connector: str, config_end: int, trace: str | None) -> Record:
    value = rec.dumps({"config-end": config_end, "trace-sha256": trace_digest(trace)})
    return Record("reconciler", (FAILED_PREFIX + connector).encode("utf-8"), value)


def failure_mark_tombstone(connector: str) -> Record:
    return Record("reconciler", (FAILED_PREFIX + connector).encode("utf-8"), None)


def decode_failure_mark(value: bytes) -> FailureMark | Invalid:
    obj = rec.loads(value)
    end = obj.get("config-end") if type(obj) is dict else None
    digest = obj.get("trace-sha256") if type(obj) is dict else None
    if type(end) is not int or type(digest) is not str:
        return Invalid("a failure mark needs 'config-end' and 'trace-sha256'")
    return FailureMark(end, digest)


class FailureLog:
    """Collects the failure marks while our topic is read."""

    def __init__(self) -> None:
        self.marks: dict[str, FailureMark] = {}

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> bool:
        """Take a record of our topic if it is a failure mark; whether it was one."""
        if key is None or not key.startswith(_FAILED):
            return False
        name = key.decode("utf-8", "replace")[len(FAILED_PREFIX) :]
        mark = None if value is None else decode_failure_mark(value)
        if isinstance(mark, FailureMark):
            self.marks[name] = mark
        else:
            self.marks.pop(name, None)
        return True
