"""The driver's side of a table sink (`TableSinkConnector`): the table's offsets before the job,
one commit per table after it. Used by `job.run_sink` for table sinks only.

Before the ranges are planned, the table's offsets are merged into the group's (`merge_offsets`:
the larger wins), so a batch whose table commit landed but whose group commit did not starts
after what the table holds. After the job, the successful ranges' committables go to
`TableSinkConnector.commit` (`written`); a commit that fails turns those ranges into failed
results (`fail_ranges`), so their tasks are FAILED and the group is not committed for them.
Where the table is ahead of the group and no range runs, the group is moved to the table's
offset (`caught_up`): after a crash between the two commits, the group follows without a batch.
docs/runtime.md#table-sinks.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence

from reconciler import failpoints
from reconciler.connectors.api import (
    ConnectorConfig,
    ConnectorError,
    TableCommitFailed,
    TableSinkConnector,
    TopicPartition,
    Written,
)
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork

LOG = logging.getLogger(__name__)


def table_offsets(
    connector: TableSinkConnector, name: str, config: ConnectorConfig, partitions: Sequence[TopicPartition]
) -> dict[TopicPartition, int]:
    """The table's next offsets for `partitions` (those it holds). A table that cannot be read
    fails the whole batch with the connector's one-line reason (nothing is written)."""
    if not partitions:
        return {}
    found = connector.table_offsets(config, partitions)
    LOG.debug("sink %s: the table holds offsets for %d of %d partition(s)", name, len(found), len(partitions))
    return {tp: offset for tp, offset in found.items() if tp in set(partitions)}


def merge_offsets(group: Mapping[TopicPartition, int], table: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Where each partition's records are done: the larger of the group's and the table's offset."""
    merged = dict(group)
    for tp, offset in table.items():
        merged[tp] = max(offset, merged.get(tp, offset))
    return merged


def written(summaries: Sequence[SinkPartitionResult], items: Sequence[SinkPartitionWork]) -> list[Written]:
    """The successful ranges that wrote something to commit, with where each was read from."""
    starts = {(item.topic, item.partition): item.start for item in items}
    return [
        Written(topic=s.topic, partition=s.partition, offset=s.offset, committable=s.committable,
                start=starts.get((s.topic, s.partition)))
        for s in summaries
        if s.error is None and s.offset is not None and s.committable is not None
    ]


def commit_tables(
    connector: TableSinkConnector, name: str, config: ConnectorConfig, summaries: list[SinkPartitionResult],
    items: Sequence[SinkPartitionWork],
) -> list[SinkPartitionResult]:
    """`commit` the batch's files to the table(s); the summaries, the ranges it could not commit
    failed (their group offsets are then not committed). Crash point `sink.after_table_commit`."""
    done = written(summaries, items)
    if not done:
        return summaries
    try:
        connector.commit(config, done)
    except ConnectorError as exc:
        failed = exc.partitions if isinstance(exc, TableCommitFailed) else None
        targets = {w.tp for w in done} if failed is None else set(failed)
        LOG.error("sink %s: the table commit failed for %d partition(s): %s", name, len(targets), exc.message)
        return fail_ranges(summaries, targets, f"{type(exc).__module__}.{type(exc).__name__}: {exc.message}")
    failpoints.hit(failpoints.Failpoint.SINK_AFTER_TABLE_COMMIT)
    return summaries


def fail_ranges(
    summaries: Sequence[SinkPartitionResult], partitions: set[TopicPartition], error: str
) -> list[SinkPartitionResult]:
    """The summaries with those of `partitions` failed: no offset to commit, `error` as their trace."""
    return [
        dataclasses.replace(s, offset=None, error=error, scanned_to=None, committable=None)
        if (s.topic, s.partition) in partitions and s.error is None
        else s
        for s in summaries
    ]


def caught_up(
    table: Mapping[TopicPartition, int],
    group: Mapping[TopicPartition, int],
    items: Sequence[SinkPartitionWork],
    bounds_end: Mapping[TopicPartition, int],
) -> dict[TopicPartition, tuple[int, str]]:
    """Group commits for partitions no range reads whose table offset is ahead of the group's
    (a crash after the table commit, before the group's): the group follows the table. Only
    offsets the log holds (a table ahead of the log end is a recreated topic: left as it is)."""
    scheduled = {(item.topic, item.partition) for item in items}
    return {
        tp: (offset, "")
        for tp, offset in table.items()
        if tp not in scheduled and offset > group.get(tp, -1) and offset <= bounds_end.get(tp, -1)
    }
