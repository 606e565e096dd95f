"""One Spark partition of a sink batch: one task, one Kafka partition, a bounded offset range.

`SinkPartitionWork` is what the driver (`job`) asks of it, `SinkPartitionResult` what it
reports back, whichever reader fed the task (`task` with confluent-kafka, `spark_reader` with
Spark's Kafka data source). What is committed is Java's `WorkerSinkTask` offset, the last record
delivered + 1; the commit's metadata also says how far the range was read when offsets that hold
no record (markers, aborted or compacted records) follow it (`commit_metadata`, `scanned_to`).
Where a range starts is decided on the driver (`reset`), the same for both readers.
Plain values: shipped to the Python workers and back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.task_logs import TaskLogging


@dataclass(frozen=True, kw_only=True)
class SinkPartitionWork:
    """What one Spark partition does: one task, one Kafka partition, up to `end`."""

    settings: KafkaSettings
    connector: str
    connector_class: str
    task_id: int
    task_config: dict[str, str]
    topic: str
    partition: int
    start: int  # the group's offset, or where `auto.offset.reset` puts it (`reset.sink_start`)
    # False: the group holds no offset and `start` is not committed (never committed, `earliest`).
    committed: bool
    end: int  # the end offset snapshotted at batch start (exclusive)
    consumer_config: dict[str, str] = field(default_factory=dict)
    logging: TaskLogging = TaskLogging()  # how the task logs in its worker


@dataclass(frozen=True, kw_only=True)
class SinkPartitionResult:
    task_id: int
    topic: str
    partition: int
    records: int
    offset: int | None  # what pre_commit called safe to commit; None: nothing to commit
    error: str | None = None
    seconds: float = 0.0  # time spent in the partition (debug log: job overhead = job - max)
    bytes: int = 0  # key and value bytes read
    # The end read to, when everything from `offset` to it holds no record (markers, aborted or
    # compacted records): the commit says so, and the next batch skips the range.
    scanned_to: int | None = None
    # What the task's `committable()` returned after its closing pre_commit: a table sink's
    # files, for the driver's commit (`tables`); None for a sink that commits itself.
    committable: str | None = None


def task_start(item: SinkPartitionWork, held: int | None) -> tuple[int, int | None]:
    """(where the task reads from, the offset it offers `pre_commit` if it is delivered nothing).

    Reading starts at the larger of the range's start and what the task holds (`open()`). The
    offset offered stands for "everything below was done", so a range whose start only the
    reset policy chose (never committed, `earliest`) offers nothing unless the task holds some.
    """
    start = item.start if held is None else max(held, item.start)
    return start, (start if item.committed or held is not None else None)


SCANNED_PREFIX = "reconciler scanned-to="


def commit_metadata(result: SinkPartitionResult) -> str:
    """The commit's metadata: empty (as Java commits) unless records-free offsets follow."""
    if result.offset is None or result.scanned_to is None or result.scanned_to <= result.offset:
        return ""
    return f"{SCANNED_PREFIX}{result.scanned_to}"


def scanned_to(metadata: str) -> int | None:
    """How far a commit says its range was read (None: no such claim, e.g. Java's commits)."""
    text = metadata.removeprefix(SCANNED_PREFIX)
    return int(text) if text != metadata and text.isascii() and text.isdigit() else None
