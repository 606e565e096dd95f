"""A dead letter queue record as Connect's `DeadLetterQueueReporter` writes it. Pure.

The original record's key, value, timestamp and headers, unchanged, to the DLQ topic with no
partition given (the producer's murmur2 places it, as Java's default partitioner does). With
`errors.deadletterqueue.context.headers.enable=true` these headers follow the original ones,
each value the UTF-8 text Java writes (`toBytes(String.valueOf(…))`):

    __connect.errors.topic / .partition / .offset      where the record was read
    __connect.errors.connector.name / .task.id          who failed it
    __connect.errors.stage                              Connect's `Stage` name (VALUE_CONVERTER…)
    __connect.errors.class.name                         the class that failed (the converter's)
    __connect.errors.exception.class.name / .message    the error
    __connect.errors.exception.stacktrace               the error's trace, when there is one
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

HEADER_PREFIX: Final = "__connect.errors."
ORIG_TOPIC: Final = HEADER_PREFIX + "topic"
ORIG_PARTITION: Final = HEADER_PREFIX + "partition"
ORIG_OFFSET: Final = HEADER_PREFIX + "offset"
CONNECTOR_NAME: Final = HEADER_PREFIX + "connector.name"
TASK_ID: Final = HEADER_PREFIX + "task.id"
STAGE: Final = HEADER_PREFIX + "stage"
EXECUTING_CLASS: Final = HEADER_PREFIX + "class.name"
EXCEPTION: Final = HEADER_PREFIX + "exception.class.name"
EXCEPTION_MESSAGE: Final = HEADER_PREFIX + "exception.message"
EXCEPTION_STACK_TRACE: Final = HEADER_PREFIX + "exception.stacktrace"
NO_TIMESTAMP: Final = -1  # Kafka's RecordBatch.NO_TIMESTAMP: the DLQ record then gets the producer's time

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True, kw_only=True)
class ErrorContext:
    """What `populateContextHeaders` reads of Java's `ProcessingContext` and task id."""

    connector: str
    task_id: int
    stage: str
    executing_class: str
    exception_class: str
    message: str | None
    trace: str | None


@dataclass(frozen=True, kw_only=True)
class DeadLetter:
    """One record for the DLQ: where it was read, its bytes, and why it failed (None: no
    context headers)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()
    context: ErrorContext | None = None

    def all_headers(self) -> list[tuple[str, bytes | None]]:
        """The original headers, then the context headers (when there is a context)."""
        return [*self.headers, *context_headers(self)]


def context_headers(letter: DeadLetter) -> list[tuple[str, bytes | None]]:
    """Java's `populateContextHeaders`, in its order."""
    context = letter.context
    if context is None:
        return []
    found: list[tuple[str, bytes | None]] = [
        (ORIG_TOPIC, _utf8(letter.topic)),
        (ORIG_PARTITION, _utf8(str(letter.partition))),
        (ORIG_OFFSET, _utf8(str(letter.offset))),
        (CONNECTOR_NAME, _utf8(context.connector)),
        (TASK_ID, _utf8(str(context.task_id))),
        (STAGE, _utf8(context.stage)),
        (EXECUTING_CLASS, _utf8(context.executing_class)),
        (EXCEPTION, _utf8(context.exception_class)),
        (EXCEPTION_MESSAGE, _utf8(context.message)),
    ]
    if context.trace is not None:
        found.append((EXCEPTION_STACK_TRACE, _utf8(context.trace)))
    return found


def java_trace(exception_class: str, message: str | None, frames: str | None = None) -> str:
    """A trace shaped as Java's `printStackTrace` prints one: `Throwable.toString()` on the first
    line (`class: message`), then the frames, each line `\\tat …`."""
    head = exception_class if message is None else f"{exception_class}: {message}"
    lines = [head] + [f"\tat {line.strip()}" for line in (frames or "").splitlines() if line.strip()]
    return "\n".join(lines) + "\n"


def _utf8(text: str | None) -> bytes | None:
    """Java's `toBytes(String)`: UTF-8, null for null (Java would lose a lone surrogate to '?')."""
    return None if text is None else text.encode("utf-8", errors="replace")
