"""A sink task over one range in its Spark partition: the one range runner both readers feed.

The task is given its errant record reporter (the connector's `errors.*`, with a transactional
dead letter queue producer for its partition, `kafka.io.dead_letters`), started, opened on its
one partition (the start is the larger of what it holds and the range's start,
`ranges.task_start`), fed Arrow batches, asked to `pre_commit(…, closing=True)` — a batch
closes its tasks —, asked what its driver must commit (`committable()`, table sinks) and
stopped. Dead letters a task queued and did not flush are produced before `committable()`, so
before any driver commit. Only a summary (`SinkPartitionResult`) leaves the
worker. What feeds it is a `RangeFeed`: `reader.RangeReader` (confluent-kafka, `sink_partition`)
or the batches of Spark's Kafka data source (`spark_reader`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Protocol

from reconciler import failpoints
from reconciler.connectors.api import ConnectorError, SinkConnector, SinkTask
from reconciler.connectors.errant import ErrantReporter, ErrorHandling
from reconciler.connectors.registry import load_connector
from reconciler.heap import building
from reconciler.kafka.io.dead_letters import TransactionalDeadLetters
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.kafka.io.overrides import PRODUCER, client_settings
from reconciler.runtime.batch.task_logs import task_logging
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork, task_start
from reconciler.runtime.sink.reader import RangeReader

if TYPE_CHECKING:
    import pyarrow as pa


class RangeFeed(Protocol):
    """A range's records from where the task reads (`sink_schema()` batches)."""

    @property
    def done(self) -> bool:
        """Read to the range's end: nothing but offsets without records lies past `delivered`."""

    @property
    def delivered(self) -> int | None:
        """The offset after the last record yielded (None before the first): what Connect commits."""

    def batches(self) -> Iterator[pa.RecordBatch]: ...


def sink_partition(item: SinkPartitionWork) -> SinkPartitionResult:
    """Runs in a Python worker: the range read with confluent-kafka, through its task."""
    return run_range(item, lambda start: RangeReader(item, start))


def run_range(item: SinkPartitionWork, feed: Callable[[int], RangeFeed]) -> SinkPartitionResult:
    """Runs in a Python worker: the range through its task (`feed(start)` reads it), the offset
    to commit reported. A failure is the result's `error`, never raised."""
    started, records, size = time.monotonic(), 0, 0
    offset: int | None = None
    scanned: int | None = None
    error: str | None = None
    committable: str | None = None
    try:
        # No cyclic collection meanwhile (a partition body run by `spark.jobs` pauses it already;
        # the data source's is not one), and a failure's cycles are never frozen (`heap`).
        with building(), task_logging(item.logging, item.connector, item.task_id):
            reporter, letters = errant_reporter(item)
            task = start_sink_task(item, reporter)
            try:
                records, size, offset, scanned = _deliver(task, item, feed)
                reporter.flush()
                committable = task.committable()
            finally:
                task.stop()
                if letters is not None:
                    letters.close()
    except Exception:
        offset, scanned, committable, error = None, None, None, traceback.format_exc()
    seconds = time.monotonic() - started
    return SinkPartitionResult(
        task_id=item.task_id,
        topic=item.topic,
        partition=item.partition,
        records=records,
        offset=offset,
        error=error,
        seconds=seconds,
        bytes=size,
        scanned_to=scanned,
        committable=committable,
    )


def start_sink_task(item: SinkPartitionWork, reporter: ErrantReporter | None = None) -> SinkTask:
    connector = load_connector(item.connector_class)
    if not issubclass(connector, SinkConnector):
        raise ConnectorError(f"{item.connector_class!r} is not a sink connector")
    task = connector.task_class()
    task.errant_reporter = reporter
    task.start(item.task_config)
    return task


def errant_reporter(item: SinkPartitionWork) -> tuple[ErrantReporter, TransactionalDeadLetters | None]:
    """The range's reporter of the connector's `errors.*`, and its dead letter producer (only
    with `errors.tolerance=all` and a DLQ topic; on the connector's producer cluster). Keys
    `validate` refused, or a plugin's own `errors.*` of another meaning: Connect's defaults."""
    handling, problems = ErrorHandling.read(item.task_config)
    if problems:
        handling = ErrorHandling.parse({})
    topic = handling.dead_letter_topic if handling.tolerates else None
    letters = None
    if topic is not None:
        letters = TransactionalDeadLetters(
            client_settings(item.settings, item.task_config, PRODUCER), connector=item.connector,
            sink_group=sink_group(item.connector, item.task_config), source=(item.topic, item.partition),
            topic=topic, replication_factor=handling.dlq_replication_factor, end=item.end)
    return ErrantReporter(handling, connector=item.connector, task_id=item.task_id, dead_letters=letters), letters


def _deliver(
    task: SinkTask, item: SinkPartitionWork, feed: Callable[[int], RangeFeed]
) -> tuple[int, int, int | None, int | None]:
    """(records written, their key and value bytes, the offset to commit, the end read to when
    nothing but offsets without records lie between the two). The offset is Java's: the last
    record delivered + 1, or where the range started when none was (its files or the group say
    everything below is done)."""
    tp = (item.topic, item.partition)
    start, done = task_start(item, task.open([tp]).get(tp))
    reader = feed(start)
    records = size = 0
    for batch in reader.batches():
        task.write(batch)
        records += batch.num_rows
        size += payload_bytes(batch)
        if records == batch.num_rows and not reader.done:  # the first batch, and more may follow
            failpoints.hit(failpoints.SINK_MID_WRITE)
    point = reader.delivered if reader.delivered is not None else done
    safe = None if point is None else task.pre_commit({tp: point}, closing=True).get(tp)
    failpoints.hit(failpoints.SINK_AFTER_FILES)
    scanned = item.end if reader.done and safe is not None and safe == point else None
    return records, size, safe, scanned


def payload_bytes(batch: pa.RecordBatch) -> int:
    """Key and value bytes of a `sink_schema()` batch: one C kernel per column, no per-record
    Python work, exact for sliced or filtered batches (nulls count 0)."""
    import pyarrow.compute as pc

    total = 0
    for name in ("key", "value"):
        column = batch.column(name)
        if len(column):
            total += pc.sum(pc.binary_length(column)).as_py() or 0
    return total
