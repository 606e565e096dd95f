"""One batch of a sink connector: Kafka offset ranges → Spark partitions → the sink's writer.

Driver side (`run_sink`), following docs/runtime.md:
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

What is committed is Java's `WorkerSinkTask` offset: the last record delivered + 1, not the
end the batch read to. On a transactional topic the end lies past a commit marker, so
committing it would make a user's "rewind by 10" give back 9 records. When the range ends in
offsets that hold no record (markers, aborted or compacted records), the commit's metadata says
how far it was read (`scanned-to=N`), so the next batch does not schedule it again for nothing.

Spark side (`sink_partition`): the task is started, opened on its one partition (the start is
the larger of what it holds and what the group committed), fed Arrow batches read with
confluent-kafka (`sink_reader.RangeReader`), asked to `pre_commit(…, closing=True)` — a batch
closes its tasks — and stopped. Only a summary leaves the worker.
"""

from __future__ import annotations

import logging
import re
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler.connectors.api import ConnectorError, SinkConnector, SinkTask, TopicPartition
from reconciler.connectors.registry import load_connector
from reconciler.kafka.consume import end_offsets
from reconciler.kafka import groups
from reconciler.kafka.overrides import CONSUMER, client_settings, overrides
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import sink_group
from reconciler import failpoints
from reconciler.runtime.sink_reader import ISOLATION, RangeReader
from reconciler.runtime.spark import PartitionFailed, run_partitions

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

    from reconciler.runtime.executor import TaskOutcome, TaskWork

LOG = logging.getLogger(__name__)


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
    bytes: int = 0  # key and value bytes read
    # The end read to, when everything from `offset` to it holds no record (markers, aborted or
    # compacted records): the commit says so, and the next batch skips the range.
    scanned_to: int | None = None


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
    scanned: Mapping[TopicPartition, int] | None = None,
) -> list[SinkPartitionWork]:
    """A Spark partition per assigned topic-partition that may have records past its committed
    offset (`scanned`: where a commit says nothing but markers lies below, see SCANNED_PREFIX)."""
    scanned = scanned or {}
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
            if end == 0 or (done is not None and max(done, scanned.get(tp, done)) >= end):
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
    commits = groups.committed(settings, group, tps)
    done = {tp: offset for tp, (offset, _) in commits.items()}
    scanned = {tp: end for tp, (_, metadata) in commits.items() if (end := scanned_to(metadata)) is not None}
    items = plan_sink(settings, works, partitions, done, scanned)
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
        (s.topic, s.partition): (s.offset, commit_metadata(s))
        for s in summaries
        if s.offset is not None and (s.offset, commit_metadata(s)) != commits.get((s.topic, s.partition))
    }
    groups.commit_offsets(settings, group, to_commit)
    lags = {(i.topic, i.partition): i.end - (i.committed or 0) for i in items}
    LOG.debug(
        "sink %s: %d range(s) planned in %.3fs, job %.3fs (partitions %s s), %d offset(s) committed in %.3fs",
        name, len(items), planned - started, ran - planned, ", ".join(f"{s.seconds:.2f}" for s in summaries),
        len(to_commit), time.monotonic() - ran,
    )
    return _outcomes(works, summaries, partitions, lags, set(to_commit))


def _check_sink(connector_class: str) -> None:
    """Fail the whole connector on the driver when its class is not a sink (no job needed)."""
    if not issubclass(load_connector(connector_class), SinkConnector):
        raise ConnectorError(f"{connector_class!r} is not a sink connector")


def _summary(item: SinkPartitionWork, result: SinkPartitionResult | PartitionFailed) -> SinkPartitionResult:
    if isinstance(result, PartitionFailed):
        return SinkPartitionResult(item.task_id, item.topic, item.partition, 0, None, result.trace)
    return result


def _outcomes(
    works: Sequence[TaskWork],
    summaries: Sequence[SinkPartitionResult],
    partitions: Mapping[int, Sequence[TopicPartition]],
    lags: Mapping[TopicPartition, int],
    committed: set[TopicPartition],
) -> list[TaskOutcome]:
    """One outcome per task; `lags` holds only the partitions that had records to read."""
    from reconciler.runtime.executor import TaskOutcome

    outcomes = []
    for work in works:
        mine = [s for s in summaries if s.task_id == work.task_id]
        errors = [s.error for s in mine if s.error is not None]
        assigned = partitions.get(work.task_id, [])
        outcomes.append(
            TaskOutcome(
                work.connector, work.task_id, sum(s.records for s in mine), "\n".join(errors) or None,
                bytes=sum(s.bytes for s in mine),
                lag=max((lags.get(tp, 0) for tp in assigned), default=0),
                offsets_committed=any(tp in committed for tp in assigned),
            )
        )
    return outcomes


# --- Spark partition ------------------------------------------------------------------------


def sink_partition(item: SinkPartitionWork) -> SinkPartitionResult:
    """Runs in a Python worker: read the range, write it through the task, report the offset."""
    started, records, size = time.monotonic(), 0, 0
    offset: int | None = None
    scanned: int | None = None
    error: str | None = None
    try:
        task = _start_task(item)
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


def _start_task(item: SinkPartitionWork) -> SinkTask:
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
    held = task.open([tp]).get(tp)
    known = [o for o in (held, item.committed) if o is not None]
    start = max(known) if known else None
    reader = RangeReader(item, start)
    records = size = 0
    for batch in reader.batches():
        task.write(batch)
        records += batch.num_rows
        size += payload_bytes(batch)
        if records == batch.num_rows and not reader.done:
            failpoints.hit(failpoints.SINK_MID_WRITE)
    point = reader.delivered if reader.delivered is not None else start
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
