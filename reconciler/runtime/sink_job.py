"""One batch of a sink connector: Kafka offset ranges → Spark partitions → the sink's writer.

Driver side (`run_sink`), following Connect's sink groups (docs/record-formats.md#sink-offsets;
the whole flow: docs/runtime.md#sink-tasks):
1. the connector's topics (`topics` or `topics.regex`) and their partitions, assigned to the
   connector's tasks round-robin (`executor.assign_partitions`);
2. each partition's end offset, snapshotted now: the batch reads up to it and no further, so
   a batch is a bounded range even while producers keep writing;
3. the committed offsets of group `connect-<name>` (or `consumer.override.group.id`);
4. one Spark partition per (task, topic-partition) with something to read, so every Kafka
   partition has exactly one writer; partitions with nothing new are not scheduled at all;
5. after the job, the offsets each partition's `pre_commit` called safe are committed to the
   group — after the files, never before (a crash in between re-delivers, the sink drops
   what its files already hold).

Spark side (`sink_partition`): the task is started, opened on its one partition (the start is
the larger of what it holds and what the group committed), fed Arrow batches read with
confluent-kafka (`consume(10000)`, columns built from plain lists), asked to `pre_commit(…,
closing=True)` — a batch closes its tasks — and stopped. Only a summary leaves the worker.
"""

from __future__ import annotations

import bisect
import logging
import re
import time
import traceback
from operator import itemgetter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.connectors.api import (
    ConnectorError,
    SinkConnector,
    SinkTask,
    TopicPartition,
    headers_type,
    sink_schema,
)
from reconciler.connectors.registry import load_connector
from reconciler.kafka.client import ErrorCollector, new_consumer
from reconciler.kafka.consume import end_offsets
from reconciler.kafka.overrides import CONSUMER, client_settings, overrides
from reconciler.kafka.groups import commit_offsets, committed_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import sink_group
from reconciler.runtime import failpoints
from reconciler.runtime.spark import PartitionFailed, run_partitions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from reconciler.runtime.executor import TaskOutcome, TaskWork

LOG = logging.getLogger(__name__)

CONSUME_BATCH = 10_000
POLL_S = 0.05
ISOLATION = "read_committed"


@dataclass(frozen=True)
class SinkPartitionWork:
    """What one Spark partition does: one task, one Kafka partition, up to `end`."""

    settings: KafkaSettings
    connector: str
    connector_class: str
    task_id: int
    task_config: dict[str, str]
    topic: str
    partition: int
    committed: int | None  # the group's offset; None: never committed
    end: int  # the end offset snapshotted at batch start (exclusive)
    consumer_config: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SinkPartitionResult:
    task_id: int
    topic: str
    partition: int
    records: int
    offset: int | None  # what pre_commit called safe to commit; None: nothing to commit
    error: str | None = None
    seconds: float = 0.0  # time spent in the partition (debug log: job overhead = job - max)


# --- driver ---------------------------------------------------------------------------------


def consumer_overrides(config: Mapping[str, str | None]) -> dict[str, str]:
    """`consumer.override.*` settings for the task consumers (the group id names the commits)."""
    extra = overrides(config, CONSUMER)
    extra.pop("group.id", None)
    return extra


def sink_topics(config: Mapping[str, str | None], existing: Mapping[str, int]) -> list[str]:
    """The topics a sink reads that exist now: `topics` (comma-separated) or `topics.regex`."""
    listed = [t.strip() for t in (config.get("topics") or "").split(",") if t.strip()]
    pattern = (config.get("topics.regex") or "").strip()
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ConnectorError(f"`topics.regex` is not a valid regular expression: {exc}") from exc
        listed += [t for t in sorted(existing) if regex.fullmatch(t)]
    return [t for t in dict.fromkeys(listed) if t in existing]


def plan_sink(
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    partitions: Mapping[int, Sequence[TopicPartition]],
    committed: Mapping[TopicPartition, int],
) -> list[SinkPartitionWork]:
    """A Spark partition per assigned topic-partition that has records past its committed offset."""
    topics = sorted({tp[0] for work in works for tp in partitions.get(work.task_id, [])})
    overrides = consumer_overrides(works[0].connector_config)
    isolation = overrides.get("isolation.level", ISOLATION)  # the end as the tasks will see it
    ends = {
        (topic, p): end for topic in topics for p, end in end_offsets(settings, topic, isolation_level=isolation).items()
    }
    items = []
    for work in works:
        for tp in partitions.get(work.task_id, []):
            end, done = ends.get(tp, 0), committed.get(tp)
            if end == 0 or (done is not None and done >= end):
                continue
            items.append(
                SinkPartitionWork(
                    settings=settings,
                    connector=work.connector,
                    connector_class=work.connector_class,
                    task_id=work.task_id,
                    task_config=dict(work.task_config),
                    topic=tp[0],
                    partition=tp[1],
                    committed=done,
                    end=end,
                    consumer_config=overrides,
                )
            )
    return items


def run_sink(
    session: SparkSession,
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    task_count: int,
    *,
    pool: str,
    kafka_source: bool = False,
) -> list[TaskOutcome]:
    """One batch of every task in `works` (all of one sink connector); one outcome per work.
    `kafka_source`: read through Spark's Kafka data source (`sink_spark`), else confluent-kafka."""
    from reconciler.kafka.admin import topic_partitions
    from reconciler.runtime.executor import assign_partitions

    name, config = works[0].connector, works[0].connector_config
    started = time.monotonic()
    _check_sink(works[0].connector_class)
    # Everything a sink does happens on the cluster its consumers read (`consumer.override.*`).
    settings = client_settings(settings, config, CONSUMER)
    existing = topic_partitions(settings)
    topics = sink_topics(config, existing)
    tps = [(topic, p) for topic in topics for p in range(existing[topic])]
    partitions = assign_partitions(tps, task_count)
    group = sink_group(name, config)
    committed = committed_offsets(settings, group, tps)
    items = plan_sink(settings, works, partitions, committed)
    planned = time.monotonic()
    description = f"sink {name}: {len(items)} partition range(s)"
    results: Sequence[SinkPartitionResult | PartitionFailed]
    if kafka_source:
        from reconciler.runtime.sink_spark import run_ranges

        results = run_ranges(session, settings, items, pool=pool, description=description)
    else:
        results = run_partitions(session, items, sink_partition, pool=pool, description=description)
    ran = time.monotonic()
    summaries = [_summary(item, result) for item, result in zip(items, results, strict=True)]
    to_commit = {
        (s.topic, s.partition): s.offset
        for s in summaries
        if s.offset is not None and s.offset != committed.get((s.topic, s.partition))
    }
    commit_offsets(settings, group, to_commit)
    LOG.debug(
        "sink %s: %d range(s) planned in %.3fs, job %.3fs (partitions %s s), %d offset(s) committed in %.3fs",
        name, len(items), planned - started, ran - planned, ", ".join(f"{s.seconds:.2f}" for s in summaries),
        len(to_commit), time.monotonic() - ran,
    )
    return _outcomes(works, summaries)


def _check_sink(connector_class: str) -> None:
    """Fail the whole connector on the driver when its class is not a sink (no job needed)."""
    if not issubclass(load_connector(connector_class), SinkConnector):
        raise ConnectorError(f"{connector_class!r} is not a sink connector")


def _summary(item: SinkPartitionWork, result: SinkPartitionResult | PartitionFailed) -> SinkPartitionResult:
    if isinstance(result, PartitionFailed):
        return SinkPartitionResult(item.task_id, item.topic, item.partition, 0, None, result.trace)
    return result


def _outcomes(works: Sequence[TaskWork], summaries: Sequence[SinkPartitionResult]) -> list[TaskOutcome]:
    from reconciler.runtime.executor import TaskOutcome

    outcomes = []
    for work in works:
        mine = [s for s in summaries if s.task_id == work.task_id]
        errors = [s.error for s in mine if s.error is not None]
        outcomes.append(
            TaskOutcome(work.connector, work.task_id, sum(s.records for s in mine), "\n".join(errors) or None)
        )
    return outcomes


# --- Spark partition ------------------------------------------------------------------------


def sink_partition(item: SinkPartitionWork) -> SinkPartitionResult:
    """Runs in a Python worker: read the range, write it through the task, report the offset."""
    started, records = time.monotonic(), 0
    offset: int | None = None
    error: str | None = None
    try:
        task = _start_task(item)
        try:
            records, offset = _move_range(task, item)
        finally:
            task.stop()
    except Exception:
        offset, error = None, traceback.format_exc()
    seconds = time.monotonic() - started
    return SinkPartitionResult(item.task_id, item.topic, item.partition, records, offset, error, seconds)


def _start_task(item: SinkPartitionWork) -> SinkTask:
    connector = load_connector(item.connector_class)
    if not issubclass(connector, SinkConnector):
        raise ConnectorError(f"{item.connector_class!r} is not a sink connector")
    task = connector.task_class()
    task.start(item.task_config)
    return task


def _move_range(task: SinkTask, item: SinkPartitionWork) -> tuple[int, int | None]:
    tp = (item.topic, item.partition)
    held = task.open([tp]).get(tp)
    known = [o for o in (held, item.committed) if o is not None]
    start = max(known) if known else None
    reader = RangeReader(item, start)
    records = 0
    for batch in reader.batches():
        task.write(batch)
        records += batch.num_rows
        if records == batch.num_rows and not reader.done:
            failpoints.hit(failpoints.SINK_MID_WRITE)
    # Java's WorkerSinkTask commit: the last delivered record + 1 (on a transactional topic the
    # end lies past a commit marker), or the start when nothing was delivered.
    point = reader.delivered if reader.delivered is not None else start
    safe = None if point is None else task.pre_commit({tp: point}, closing=True).get(tp)
    failpoints.hit(failpoints.SINK_AFTER_FILES)
    return records, safe


_EARLIEST = {"earliest", "smallest", "beginning"}  # librdkafka's names for it


def _earliest(consumer_config: Mapping[str, Any]) -> int:
    """Where a never-committed range starts reading: the log start.

    Offset 0 when `auto.offset.reset` is earliest (ours, unless `consumer.override.*` says
    otherwise): the reset moves it up to the log start if retention removed it, and it saves
    the ListOffsets round trip OFFSET_BEGINNING costs before the first fetch. With another
    reset policy only OFFSET_BEGINNING means the log start.
    """
    from confluent_kafka import OFFSET_BEGINNING

    reset = str(consumer_config.get("auto.offset.reset", "")).lower()
    return 0 if reset in _EARLIEST else OFFSET_BEGINNING


class RangeReader:
    """Records [start, end) of one partition as Arrow batches (`start` None: the earliest).

    The end is found by offset, or by the broker's end-of-partition signal when the last
    offsets hold no record (transaction markers, compacted records). `position` is the next
    offset to read: everything below it was yielded.
    """

    def __init__(self, item: SinkPartitionWork, start: int | None) -> None:
        self.item = item
        self.position = start if start is not None else 0
        self.start = start
        self.done = start is not None and start >= item.end
        self.delivered: int | None = None  # the last record yielded + 1

    def batches(self) -> Iterator[pa.RecordBatch]:
        if self.done:
            return
        from confluent_kafka import TopicPartition as KafkaTP

        item = self.item
        errors = ErrorCollector()
        # read_committed by default: a sink after an exactly-once source must not see aborted data.
        overrides: dict[str, Any] = {"enable.partition.eof": True, "isolation.level": ISOLATION}
        overrides["auto.offset.reset"] = "earliest"
        overrides.update(item.consumer_config)
        consumer = new_consumer(item.settings, errors, **overrides)
        try:
            start = self.start if self.start is not None else _earliest(overrides)
            consumer.assign([KafkaTP(item.topic, item.partition, start)])
            yield from self._consume(consumer, errors)
        finally:
            consumer.close()

    def _consume(self, consumer: Any, errors: ErrorCollector) -> Iterator[pa.RecordBatch]:
        timeout = self.item.settings.timeout_s
        deadline = time.monotonic() + timeout
        while not self.done:
            # Never ask for more than the range still holds: consume() waits for a full batch
            # (or the timeout), and the end-of-partition event fills the slot a marker takes.
            wanted = max(1, min(CONSUME_BATCH, self.item.end - self.position))
            messages = consumer.consume(num_messages=wanted, timeout=POLL_S)
            if not messages:
                if time.monotonic() > deadline:
                    raise ConnectorError(
                        f"reading {self.item.topic}[{self.item.partition}] made no progress for "
                        f"{timeout:g}s at offset {self.position} (end {self.item.end}){errors.explain()}"
                    )
                continue
            deadline = time.monotonic() + timeout
            records, eof, past_end = self._split(messages)
            if records:
                yield to_arrow(self.item.topic, self.item.partition, records)
                self.position = self.delivered = records[-1].offset() + 1
            if past_end or self.position >= self.item.end:
                self.position, self.done = self.item.end, True
            elif eof is not None:  # the offsets up to the end hold no records (markers, compaction)
                self.position, self.done = max(self.position, min(eof, self.item.end)), True

    def _split(self, messages: list[Any]) -> tuple[list[Any], int | None, bool]:
        """The records below the end, the end-of-partition offset if the broker reported it,
        and whether a record at or past the end came (the range is then complete)."""
        from confluent_kafka import KafkaError, Message

        eof = None
        if any(map(Message.error, messages)):  # C-level scan: errors (the EOF) are rare
            for m in messages:
                error = m.error()
                if error is None:
                    continue
                if error.code() == KafkaError._PARTITION_EOF:
                    eof = m.offset()
                elif error.fatal() or not error.retriable():
                    raise ConnectorError(f"reading {m.topic()}[{m.partition()}] failed: {error.str()}")
            messages = [m for m in messages if m.error() is None]
        past_end = bool(messages) and messages[-1].offset() >= self.item.end
        if past_end:
            offsets = [m.offset() for m in messages]
            messages = messages[: bisect.bisect_left(offsets, self.item.end)]
        return messages, eof, past_end


def to_arrow(topic: str, partition: int, messages: Sequence[Any]) -> pa.RecordBatch:
    """An Arrow batch (`sink_schema()`) from confluent-kafka Messages, column by column.

    `map` over the unbound methods keeps the per-message loop in C: measurably cheaper than
    list comprehensions at a million messages per batch run."""
    import numpy  # pandas' dependency, so Spark's
    import pyarrow as pa
    from confluent_kafka import Message

    n = len(messages)
    first, last = messages[0].offset(), messages[-1].offset()
    if last - first == n - 1:  # no gaps (markers, compaction): the offsets without a pass over them
        offsets = pa.array(numpy.arange(first, last + 1, dtype=numpy.int64))
    else:
        offsets = pa.array(list(map(Message.offset, messages)), pa.int64())
    timestamps = list(map(itemgetter(1), map(Message.timestamp, messages)))
    if min(timestamps) < 0:  # TIMESTAMP_NOT_AVAILABLE is -1
        timestamps = [t if t >= 0 else None for t in timestamps]
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(topic, n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            offsets,
            pa.array(timestamps, pa.int64()),
            pa.array(list(map(Message.key, messages)), pa.binary()),
            pa.array(list(map(Message.value, messages)), pa.binary()),
            _headers(messages),
        ],
        schema=sink_schema(),
    )


def _headers(messages: Sequence[Any]) -> pa.Array:
    """The headers column: all null (one C-level pass) unless some record has headers."""
    import pyarrow as pa
    from confluent_kafka import Message

    type_ = headers_type()
    headers: list[Any] = list(map(Message.headers, messages))
    if not any(headers):
        return pa.nulls(len(messages), type_)
    rows = [None if h is None else [{"key": k, "value": v} for k, v in h] for h in headers]
    return pa.array(rows, type_)
