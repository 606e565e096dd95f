"""A sink task in its Spark partition, fed by confluent-kafka (`reader.RangeReader`).

The task is started, opened on its one partition (the start is the larger of what it holds and
the range's start, `ranges.task_start`), fed Arrow batches, asked to `pre_commit(…, closing=True)` — a batch
closes its tasks — and stopped. Only a summary (`SinkPartitionResult`) leaves the worker.
`start_sink_task` and `payload_bytes` serve the Spark data source's path (`spark_reader`) too.
"""

from __future__ import annotations

import time
import traceback
from typing import TYPE_CHECKING

from reconciler import failpoints
from reconciler.connectors.api import ConnectorError, SinkConnector, SinkTask
from reconciler.connectors.registry import load_connector
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork, task_start
from reconciler.runtime.sink.reader import RangeReader
from reconciler.runtime.batch.task_logs import task_logging

if TYPE_CHECKING:
    import pyarrow as pa


def sink_partition(item: SinkPartitionWork) -> SinkPartitionResult:
    """Runs in a Python worker: read the range, write it through the task, report the offset."""
    started, records, size = time.monotonic(), 0, 0
    offset: int | None = None
    scanned: int | None = None
    error: str | None = None
    try:
        with task_logging(item.logging, item.connector, item.task_id):
            task = start_sink_task(item)
            try:
                records, size, offset, scanned = _move_range(task, item)
            finally:
                task.stop()
    except Exception:
        offset, scanned, error = None, None, traceback.format_exc()
    seconds = time.monotonic() - started
    return SinkPartitionResult(
        item.task_id, item.topic, item.partition, records, offset, error, seconds, bytes=size, scanned_to=scanned
    )


def start_sink_task(item: SinkPartitionWork) -> SinkTask:
    connector = load_connector(item.connector_class)
    if not issubclass(connector, SinkConnector):
        raise ConnectorError(f"{item.connector_class!r} is not a sink connector")
    task = connector.task_class()
    task.start(item.task_config)
    return task


def _move_range(task: SinkTask, item: SinkPartitionWork) -> tuple[int, int, int | None, int | None]:
    """(records written, their key and value bytes, the offset to commit, the end read to when
    nothing but offsets without records lie between the two). The offset is Java's: the last
    record delivered + 1, or where the range started when none was (its files or the group say
    everything below is done)."""
    tp = (item.topic, item.partition)
    start, done = task_start(item, task.open([tp]).get(tp))
    reader = RangeReader(item, start)
    records = size = 0
    for batch in reader.batches():
        task.write(batch)
        records += batch.num_rows
        size += payload_bytes(batch)
        if records == batch.num_rows and not reader.done:
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
