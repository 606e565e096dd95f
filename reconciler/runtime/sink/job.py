"""One batch of a sink connector: Kafka offset ranges → Spark partitions → the sink's writer.

Driver side (`run_sink`), following docs/runtime.md:
1. the connector's topics (`topics` or `topics.regex`) and their partitions, assigned to the
   connector's tasks round-robin (`tasks.assign_partitions`);
2. each partition's end offset, snapshotted now: the batch reads up to it and no further, so
   a batch is a bounded range even while producers keep writing; with its log start and end;
3. the committed offsets of group `connect-<name>` (or `consumer.override.group.id`); where
   there is none, or one the log does not hold (past its end, below its start), the start is
   where Connect's consumer resets it (`reset`: `auto.offset.reset`, earliest unless
   overridden; `none` fails the task);
4. one Spark partition per (task, topic-partition) with something to read, so every Kafka
   partition has exactly one writer; partitions with nothing new are not scheduled at all;
5. after the job, the offsets each partition's `pre_commit` called safe are committed to the
   group — after the files, never before (a crash in between re-delivers, the sink drops
   what its files already hold); a refused commit is logged and fails no task (`_commit`).
   A table sink (`TableSinkConnector`) commits the tasks' files to its table(s) first, from
   the driver, and its table's offsets count as committed ones in step 3 (`tables`).

What is committed is Java's `WorkerSinkTask` offset: the last record delivered + 1, not the
end the batch read to. On a transactional topic the end lies past a commit marker, so
committing it would make a user's "rewind by 10" give back 9 records. When the range ends in
offsets that hold no record (markers, aborted or compacted records), the commit's metadata says
how far it was read (`scanned-to=N`), so the next batch does not schedule it again for nothing.

Spark side: `task.sink_partition` (records read with confluent-kafka), or `spark_reader`
(records read by Spark's Kafka data source); each range is a `ranges.SinkPartitionWork`.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from reconciler.connectors.api import ConnectorError, SinkConnector, TableSinkConnector, TopicPartition
from reconciler.connectors.registry import load_connector
from reconciler.errors import BrokerUnreachable
from reconciler.kafka.io import groups
from reconciler.kafka.io.admin import topic_partitions
from reconciler.kafka.io.client import probe_bootstrap
from reconciler.kafka.io.consume import LogBounds, log_bounds
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.kafka.io.overrides import CONSUMER, client_settings, overrides
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.task_logs import for_connector
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork, assign_partitions
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork, commit_metadata, scanned_to
from reconciler.runtime.sink.reader import ISOLATION
from reconciler.runtime.sink.reset import Starts, describe, reset_policy, sink_starts
from reconciler.runtime.sink.spark_reader import run_ranges
from reconciler.runtime.sink.tables import caught_up, commit_tables, merge_offsets, table_offsets
from reconciler.runtime.sink.task import sink_partition
from reconciler.runtime.spark.jobs import PartitionFailed, run_partitions

if TYPE_CHECKING:
    from reconciler.runtime.spark.handle import Spark

LOG = logging.getLogger(__name__)
Commits = dict[TopicPartition, tuple[int, str]]  # (offset, metadata) per partition


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


def sink_ranges(
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    partitions: Mapping[int, Sequence[TopicPartition]],
    bounds: Mapping[TopicPartition, LogBounds],
    starts: Starts,
    scanned: Mapping[TopicPartition, int],
) -> list[SinkPartitionWork]:
    """A Spark partition per assigned topic-partition that may have records past where it starts
    (`scanned`: where a commit says nothing but markers lies below, see SCANNED_PREFIX); none for
    a partition whose start failed."""
    overrides = consumer_overrides(works[0].connector_config)
    logs = for_connector([works[0].connector_config, *(w.task_config for w in works)])
    items = []
    for work in works:
        for tp in partitions.get(work.task_id, []):
            start = starts.offsets.get(tp)
            if tp not in bounds or start is None or max(start, scanned.get(tp, start)) >= bounds[tp].readable:
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
                    start=start,
                    committed=tp not in starts.uncommitted,
                    end=bounds[tp].readable,
                    consumer_config=overrides,
                    logging=logs,
                )
            )
    return items


def run_sink(
    spark: Callable[[], Spark],
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    task_count: int,
    *,
    pool: str,
    kafka_source: bool = False,
) -> list[TaskOutcome]:
    """One batch of every task in `works` (all of one sink connector); one outcome per work.
    `kafka_source`: read through Spark's Kafka data source (`spark_reader`), else confluent-kafka."""
    name, config = works[0].connector, works[0].connector_config
    started = time.monotonic()
    connector = _sink_connector(works[0].connector_class)
    # Everything a sink does happens on the cluster its consumers read (`consumer.override.*`).
    settings = client_settings(settings, config, CONSUMER)
    probe_bootstrap(settings)  # an address nothing listens on is known now, not after the timeout
    existing = topic_partitions(settings)
    topics = sink_topics(config, existing)
    tps = [(topic, p) for topic in topics for p in range(existing[topic])]
    partitions = assign_partitions(tps, task_count)
    group = sink_group(name, config)
    commits = groups.committed(settings, group, tps)
    overrides = consumer_overrides(config)
    # Snapshotted now, at the tasks' isolation level: the batch reads up to each end and no further.
    bounds = log_bounds(settings, topics, isolation_level=overrides.get("isolation.level", ISOLATION))
    group_offsets = {tp: offset for tp, (offset, _) in commits.items()}
    # A table sink's table holds offsets too (its commit precedes the group's): the larger wins.
    table = table_offsets(connector, name, config, tps) if isinstance(connector, TableSinkConnector) else {}
    starts = sink_starts(merge_offsets(group_offsets, table), bounds, reset_policy(overrides))
    for reset in starts.resets:  # a first start by the policy is routine; losing a committed position is not
        LOG.log(logging.INFO if reset.committed is None else logging.WARNING, "%s", describe(name, reset))
    items = sink_ranges(settings, works, partitions, bounds, starts, _scanned(commits, starts, bounds))
    planned = time.monotonic()
    summaries = _run_ranges(spark, settings, items, pool, f"sink {name}: {len(items)} partition range(s)", kafka_source)
    if isinstance(connector, TableSinkConnector):  # the files are committed to the table, then the group
        summaries = commit_tables(connector, name, config, summaries, items)
    summaries += _failed_starts(works, partitions, starts.failures)
    ran = time.monotonic()
    to_commit = _new_commits(summaries, commits) | _reset_commits(starts, items)
    to_commit |= caught_up(table, group_offsets, items, {tp: b.end for tp, b in bounds.items()})
    to_commit |= _untouched_commits(partitions, starts, to_commit, summaries)
    committed = _commit(settings, name, group, to_commit)
    lags = {(i.topic, i.partition): i.end - i.start for i in items}
    LOG.debug(
        "sink %s: %d range(s) planned in %.3fs, job %.3fs (partitions %s s), %d offset(s) committed in %.3fs",
        name, len(items), planned - started, ran - planned, ", ".join(f"{s.seconds:.2f}" for s in summaries),
        len(committed), time.monotonic() - ran,
    )
    return _outcomes(works, summaries, partitions, lags, committed)


def _scanned(commits: Commits, starts: Starts, bounds: Mapping[TopicPartition, LogBounds]) -> dict[TopicPartition, int]:
    """How far each commit says its partition was read (`scanned-to`), where the log still
    holds that end and the start was not reset (a reset commit's claim is void too)."""
    moved = {reset.tp for reset in starts.resets}
    return {
        tp: end
        for tp, (_, metadata) in commits.items()
        if tp not in moved and (end := scanned_to(metadata)) is not None and tp in bounds and end <= bounds[tp].end
    }


def _commit(settings: KafkaSettings, name: str, group: str, offsets: Commits) -> set[TopicPartition]:
    """Commit `offsets` to the group; the partitions committed. A commit the broker refuses,
    or a cluster gone since the job, fails no task: the error is logged and the next batch
    starts from the last commit again (the sink drops what its files already hold), as Java's
    `WorkerSinkTask` logs a failed commit and carries the offsets to its next one."""
    try:
        groups.commit_offsets(settings, group, offsets)
    except (groups.CommitFailed, BrokerUnreachable) as exc:
        LOG.error("sink %s: committing its offsets failed, the next batch reads those records again: %s", name, exc.message)
        return set()
    return set(offsets)


def _failed_starts(
    works: Sequence[TaskWork], partitions: Mapping[int, Sequence[TopicPartition]], failures: Mapping[TopicPartition, str]
) -> list[SinkPartitionResult]:
    """A failed result, owned by its task, for each partition whose start failed (no range runs)."""
    return [
        SinkPartitionResult(
            task_id=work.task_id, topic=tp[0], partition=tp[1], records=0, offset=None, error=failures[tp]
        )
        for work in works
        for tp in partitions.get(work.task_id, [])
        if tp in failures
    ]


def _reset_commits(starts: Starts, items: Sequence[SinkPartitionWork]) -> Commits:
    """The reset start of each partition no range reads (nothing to read from it, or LATEST):
    committed, so the next batch starts there as a Java task's consumer, which keeps its
    position, would, rather than reset again from wherever the log then ends."""
    scheduled = {(item.topic, item.partition) for item in items}
    return {reset.tp: (reset.start, "") for reset in starts.resets if reset.tp not in scheduled}


def _untouched_commits(
    partitions: Mapping[int, Sequence[TopicPartition]],
    starts: Starts,
    to_commit: Commits,
    summaries: Sequence[SinkPartitionResult],
) -> Commits:
    """The never-committed partitions of each task that commits anything, at the log start its
    consumer was reset to. Java's `WorkerSinkTask` commits every partition assigned to the task
    whenever it commits one (its map starts from each partition's position at assignment), so
    the group then lists them all, as `GET /connectors/{name}/offsets` shows; alone, an untouched
    partition is not committed ("no change since last commit"). A failed task commits nothing more."""
    failed = {s.task_id for s in summaries if s.error is not None}
    return {
        tp: (starts.offsets[tp], "")
        for task, assigned in partitions.items()
        if task not in failed and any(tp in to_commit for tp in assigned)
        for tp in assigned
        if tp in starts.uncommitted and tp not in to_commit
    }


def _run_ranges(
    spark: Callable[[], Spark],
    settings: KafkaSettings,
    items: Sequence[SinkPartitionWork],
    pool: str,
    description: str,
    kafka_source: bool,
) -> list[SinkPartitionResult]:
    """The Spark job over the ranges: one result per range, a failed partition's too. No range,
    no job: `spark` is called only when there is one (no Spark for a caught-up sink)."""
    results: Sequence[SinkPartitionResult | PartitionFailed]
    if not items:
        return []
    if kafka_source:
        results = run_ranges(spark(), settings, items, pool=pool, description=description)
    else:
        results = run_partitions(spark(), items, sink_partition, pool=pool, description=description)
    return [_summary(item, result) for item, result in zip(items, results, strict=True)]


def _new_commits(summaries: Sequence[SinkPartitionResult], commits: Commits) -> Commits:
    """What to commit: each range's safe offset (with its metadata) where it differs from the group's."""
    return {
        (s.topic, s.partition): (s.offset, commit_metadata(s))
        for s in summaries
        if s.offset is not None and (s.offset, commit_metadata(s)) != commits.get((s.topic, s.partition))
    }


def _sink_connector(connector_class: str) -> SinkConnector:
    """The connector, on the driver; the whole connector fails when its class is not a sink
    (no job needed)."""
    loaded = load_connector(connector_class)
    if not issubclass(loaded, SinkConnector):
        raise ConnectorError(f"{connector_class!r} is not a sink connector")
    return loaded()


def _summary(item: SinkPartitionWork, result: SinkPartitionResult | PartitionFailed) -> SinkPartitionResult:
    if isinstance(result, PartitionFailed):
        return SinkPartitionResult(
            task_id=item.task_id, topic=item.topic, partition=item.partition, records=0, offset=None, error=result.trace
        )
    return result


def _outcomes(
    works: Sequence[TaskWork],
    summaries: Sequence[SinkPartitionResult],
    partitions: Mapping[int, Sequence[TopicPartition]],
    lags: Mapping[TopicPartition, int],
    committed: set[TopicPartition],
) -> list[TaskOutcome]:
    """One outcome per task; `lags` holds only the partitions that had records to read."""
    outcomes = []
    for work in works:
        mine = [s for s in summaries if s.task_id == work.task_id]
        errors = [s.error for s in mine if s.error is not None]
        assigned = partitions.get(work.task_id, [])
        outcomes.append(
            TaskOutcome(
                connector=work.connector,
                task_id=work.task_id,
                records=sum(s.records for s in mine),
                error="\n".join(errors) or None,
                bytes=sum(s.bytes for s in mine),
                lag=max((lags.get(tp, 0) for tp in assigned), default=0),
                offsets_committed=any(tp in committed for tp in assigned),
                topics=tuple(sorted({s.topic for s in mine if s.records})),
            )
        )
    return outcomes
