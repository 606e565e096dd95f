"""The runtime's marks in `<group>-reconciler`: which restart requests it executed, when it
started on the group, and when a connector failed. Pure: records in and out, and the rule that
tells which restart records are pending.

Why a batch worker needs them, and the rules: docs/runtime.md#restarts (restart marks,
`runtime-started`), docs/compatibility.md#status-generation-and-no-safe-put (failure marks);
their records: docs/record-formats.md#reconciler-topic (codecs in `kafka.formats.own_records`).
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


@dataclass(frozen=True, slots=True, kw_only=True)
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
        self.records.append(
            RestartRecord(
                connector=connector, include_tasks=flags.include_tasks, only_failed=flags.only_failed, offset=offset
            )
        )

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
