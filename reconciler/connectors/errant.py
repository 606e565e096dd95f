"""Connect's error handling for sink records that cannot be written: `errors.tolerance`, the
dead letter queue (`errors.deadletterqueue.*`) and the error log (`errors.log.*`), for every
sink that decodes or checks records (docs/connectors.md#records-that-fail).

A task hands each failed record to its `ErrantReporter` (`SinkTask.errant_reporter`, set by the
runtime; `reporter_for(task)` makes one without a dead letter queue when there is none):

- `errors.tolerance=none` (the default): `report` raises `RecordFailed`, one line naming the
  record's topic, partition and offset, the stage (key, value, the task's write) and Java's
  reason. The task fails; nothing past the record is committed.
- `errors.tolerance=all`: the record is skipped; logged when `errors.log.enable` (with the
  record's coordinates when `errors.log.include.messages`, as Java's `LogReporter`); queued as a
  `DeadLetter` when `errors.deadletterqueue.topic.name` is set, and produced by `flush`, which
  the task calls before the data it skipped the records from is durable.

Pure: the producing is a `DeadLetters` the runtime gives (`kafka.io.dead_letters`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from reconciler.connectors.api import ConnectorError, RecordFailure, SinkTask, Stage
from reconciler.connectors.configdef import ConfigDef, Type, topic_names
from reconciler.connectors.settings import ConnectorSettings, setting
from reconciler.kafka.formats.dead_letter import DeadLetter, ErrorContext, java_trace

LOG = logging.getLogger(__name__)


class Tolerance(StrEnum):
    NONE = "none"
    ALL = "all"


# The keys as Connect's ConnectorConfig and SinkConnectorConfig define them (connectors.framework).
CONFIG_DEF = (
    ConfigDef()
    .define("errors.tolerance", Type.STRING, "none: a failed record fails the task; all: it is skipped.",
            default="none", choices=tuple(Tolerance))
    .define("errors.log.enable", Type.BOOLEAN, "Log each failed record.", default=False)
    .define("errors.log.include.messages", Type.BOOLEAN, "Name the failed record in the log.", default=False)
    .define("errors.deadletterqueue.topic.name", Type.STRING, "Dead letter queue topic (none when blank).",
            default="", validator=topic_names)
    .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT,
            "Replication factor of the dead letter queue topic when it is created.", default=3)
    .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN,
            "Add error context headers to dead letter queue records.", default=False)
)


@dataclass(frozen=True, kw_only=True)
class ErrorHandling(ConnectorSettings):
    config_def = CONFIG_DEF

    tolerance: str = setting("errors.tolerance")
    log: bool = setting("errors.log.enable")
    log_messages: bool = setting("errors.log.include.messages")
    dlq_topic: str = setting("errors.deadletterqueue.topic.name")
    dlq_replication_factor: int = setting("errors.deadletterqueue.topic.replication.factor")
    context_headers: bool = setting("errors.deadletterqueue.context.headers.enable")

    @property
    def tolerates(self) -> bool:
        return self.tolerance == Tolerance.ALL

    @property
    def dead_letter_topic(self) -> str | None:
        """The DLQ topic, when records go to one (Java: only with tolerance all)."""
        topic = self.dlq_topic.strip()
        return topic or None


class RecordFailed(ConnectorError):
    """A record failed and `errors.tolerance` is `none`: the task fails, naming it."""


class DeadLetters(Protocol):
    """Produces a task's dead letters, so that a retry after a crash does not produce them twice."""

    def send(self, letters: Sequence[DeadLetter]) -> None: ...


_WHAT = {
    Stage.KEY_CONVERTER: "the key of record {where} cannot be read by {cls}",
    Stage.VALUE_CONVERTER: "the value of record {where} cannot be read by {cls}",
    Stage.HEADER_CONVERTER: "the headers of record {where} cannot be read by {cls}",
    Stage.TASK_PUT: "record {where} cannot be written",
}


def failed_line(failure: RecordFailure) -> str:
    """One line: the record, the stage and the reason, and what to set to go on."""
    record = failure.record
    where = f"{record.topic}-{record.partition}@{record.offset}"
    what = _WHAT[failure.stage].format(where=where, cls=failure.executing_class)
    return (f"{what}: {failure.message} (errors.tolerance=none; errors.tolerance=all skips such records, "
            "errors.deadletterqueue.topic.name keeps them)")


def log_line(failure: RecordFailure, connector: str, task_id: int, include_record: bool) -> str:
    """Java's `LogReporter` message, then the error."""
    record = failure.record
    coordinates = (f", where consumed record is {{topic='{record.topic}', partition={record.partition}, "
                   f"offset={record.offset}, timestamp={record.timestamp_ms}, timestampType=CreateTime}}"
                   if include_record else "")
    return (f"Error encountered in task {connector}-{task_id}. Executing stage '{failure.stage}' with class "
            f"'{failure.executing_class}'{coordinates}. {failure.exception_class}: {failure.message}")


def dead_letter(failure: RecordFailure, context: ErrorContext | None) -> DeadLetter:
    record = failure.record
    return DeadLetter(topic=record.topic, partition=record.partition, offset=record.offset,
                      timestamp=record.timestamp_ms, key=record.key, value=record.value,
                      headers=tuple(record.headers or ()), context=context)


class ErrantReporter:
    """A task's `ErrantRecordReporter`: `errors.tolerance`, the log, and the DLQ's queue."""

    def __init__(self, handling: ErrorHandling, *, connector: str, task_id: int,
                 dead_letters: DeadLetters | None = None) -> None:
        self.handling, self.connector, self.task_id = handling, connector, task_id
        self.dead_letters = dead_letters
        self.queued: list[DeadLetter] = []
        self.skipped = 0

    def report(self, failure: RecordFailure) -> None:
        if not self.handling.tolerates:
            raise RecordFailed(failed_line(failure))
        self.skipped += 1
        if self.handling.log:
            LOG.error("%s", log_line(failure, self.connector, self.task_id, self.handling.log_messages))
        if self.handling.dead_letter_topic is not None:
            self.queued.append(dead_letter(failure, self._context(failure) if self.handling.context_headers else None))

    def flush(self) -> None:
        if not self.queued:
            return
        if self.dead_letters is None:
            raise ConnectorError(f"errors.deadletterqueue.topic.name is {self.handling.dead_letter_topic}, and the "
                                 "task was given no producer for it (run it in the reconciler's runtime)")
        self.dead_letters.send(self.queued)
        self.queued = []

    def _context(self, failure: RecordFailure) -> ErrorContext:
        trace = java_trace(failure.exception_class, failure.message, failure.trace)
        return ErrorContext(connector=self.connector, task_id=self.task_id, stage=failure.stage,
                            executing_class=failure.executing_class, exception_class=failure.exception_class,
                            message=failure.message, trace=trace)


def reporter_for(task: SinkTask, task_config: Mapping[str, str], connector: str = "", task_id: int = 0) -> ErrantReporter:
    """The task's reporter: the runtime's, else one of its config's `errors.*` with no DLQ producer."""
    given = task.errant_reporter
    if isinstance(given, ErrantReporter):
        return given
    return ErrantReporter(ErrorHandling.parse(task_config), connector=connector, task_id=task_id)
