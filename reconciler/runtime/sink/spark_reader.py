"""A sink batch whose records come from Spark's Kafka data source (`runtime.spark.data_source`).

Driver: `run_ranges` builds one DataFrame over the batch's planned ranges and runs
`sink_batches` over each of its partitions (one per Kafka partition range), collecting one
`SinkPartitionResult` per range.

Worker: `sink_batches` gets the Arrow batches of one range from the JVM, finds its work item
by the (topic, partition) in them, and feeds them to the range runner the confluent-kafka path
uses (`task.run_range`, docs/runtime.md#exactly-once-output): start, `open`, `write` the records
at or past the start (the larger of the range's start and what the task holds),
`pre_commit(…, closing=True)` with the last delivered record + 1, stop. The batches are only re-shaped to `sink_schema()`
with Arrow compute (timestamps to ms, the headers list), never turned into Python objects.
A range in which the data source finds no record reaches no worker; its commit stays where it
was, marked as read to the range's end (`_nothing_read`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING

from reconciler.connectors.api import sink_schema
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork
from reconciler.runtime.sink.task import run_range
from reconciler.runtime.spark.data_source import read_ranges
from reconciler.runtime.spark.jobs import run_over_dataframe

if TYPE_CHECKING:
    import pyarrow as pa

    from reconciler.kafka.settings import KafkaSettings
    from reconciler.runtime.spark.handle import Spark

Ranges = dict[tuple[str, int], tuple[int, SinkPartitionWork]]


def run_ranges(
    spark: Spark, settings: KafkaSettings, items: Sequence[SinkPartitionWork], *, pool: str, description: str
) -> list[SinkPartitionResult]:
    """One result per item, in order; a range with no record reports 0 records, no offset."""
    if not items:
        return []
    ranges: Ranges = {(item.topic, item.partition): (index, item) for index, item in enumerate(items)}
    frame = read_ranges(spark.session(), settings, items, items[0].consumer_config)
    results = run_over_dataframe(
        spark, frame, _Partition(ranges), len(items), pool=pool, description=description
    )
    return [result if result is not None else _nothing_read(item) for item, result in zip(items, results, strict=True)]


def _nothing_read(item: SinkPartitionWork) -> SinkPartitionResult:
    """A range in which the data source found no record: offsets that hold none (transaction
    markers, aborted or compacted records). As the confluent-kafka reader does, the commit
    stays where it was and says the range was read to its end (`scanned-to`), so the next
    batch does not schedule it again; a range whose start is not committed (never committed,
    `earliest`) commits nothing."""
    offset = item.start if item.committed else None
    scanned = item.end if offset is not None else None
    return SinkPartitionResult(
        task_id=item.task_id, topic=item.topic, partition=item.partition, records=0, offset=offset, scanned_to=scanned
    )


class _Partition:
    """The function each Spark partition runs (a class, so it pickles with its ranges)."""

    def __init__(self, ranges: Ranges) -> None:
        self.ranges = ranges

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, SinkPartitionResult]]:
        return sink_batches(self.ranges, batches)


def sink_batches(ranges: Ranges, batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, SinkPartitionResult]]:
    """Runs in a Python worker: the range in `batches` through its task; (item index, result)."""
    first = next((b for b in batches if b.num_rows), None)
    if first is None:
        return
    tp = (first.column("topic")[0].as_py(), first.column("partition")[0].as_py())
    index, item = ranges[tp]
    yield index, run_range(item, lambda start: DataSourceFeed(chain([first], batches), start, item.end))


class DataSourceFeed:
    """The data source's batches of one range, from where the task reads, as `sink_schema()`.

    The data source always reads the whole range: the feed is done once its batches are spent,
    or once the range's last offset is delivered."""

    def __init__(self, raw: Iterator[pa.RecordBatch], start: int, end: int) -> None:
        self.raw, self.start, self.end = raw, start, end
        self.delivered: int | None = None
        self.spent = False

    @property
    def done(self) -> bool:
        return self.spent or (self.delivered is not None and self.delivered >= self.end)

    def batches(self) -> Iterator[pa.RecordBatch]:
        for raw in self.raw:
            batch = to_sink_batch(raw, self.start)
            if batch.num_rows:
                self.delivered = batch.column("offset")[-1].as_py() + 1
                yield batch
        self.spent = True


def to_sink_batch(raw: pa.RecordBatch, start: int) -> pa.RecordBatch:
    """A data source batch (key, value, topic, partition, offset, timestamp, timestampType,
    headers) as `sink_schema()`, without records below `start`. Column operations only."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if raw.column("offset")[0].as_py() < start:
        raw = raw.filter(pc.greater_equal(raw.column("offset"), pa.scalar(start, pa.int64())))
    schema = sink_schema()
    micros = raw.column("timestamp").cast(pa.int64())
    columns = [
        raw.column("topic"),
        raw.column("partition").cast(pa.int32()),
        raw.column("offset").cast(pa.int64()),
        pc.divide(micros, pa.scalar(1000, pa.int64())),  # Spark's µs from Kafka's ms: exact
        raw.column("key"),
        raw.column("value"),
        raw.column("headers").cast(schema.field("headers").type),
    ]
    return pa.RecordBatch.from_arrays(columns, schema=schema)
