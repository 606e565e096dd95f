"""Where a sink batch's ranges start, on the driver (`sink.job.sink_ranges`, the reset commits,
the commits of a task's untouched partitions) and in the task (`sink.ranges.task_start`): the start `sink.reset` decides, whichever reader
reads the range (docs/runtime.md#offset-ranges)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from reconciler.kafka.io.consume import LogBounds
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.sink.job import _reset_commits, _untouched_commits, sink_ranges
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork, commit_metadata, scanned_to, task_start
from reconciler.runtime.sink.reset import EARLIEST, LATEST, sink_starts
from reconciler.runtime.batch.tasks import TaskWork

SETTINGS = KafkaSettings(bootstrap_servers="a:9092")
WORKS = [
    TaskWork(
        connector="archive",
        task_id=0,
        connector_class="parquet-sink",
        kind="sink",
        connector_config={},
        task_config={},
        task_count=1,
    )
]
# t[0]: 3..9 held, 8 readable; t[1]: empty; t[2]: committed 4 of 0..4
BOUNDS = {("t", 0): LogBounds(3, 10, 8), ("t", 1): LogBounds(0, 0, 0), ("t", 2): LogBounds(0, 5, 5)}
COMMITTED = {("t", 2): 4}
PARTITIONS = {0: sorted(BOUNDS)}


def test_never_committed_earliest_reads_from_the_log_start_and_commits_no_start() -> None:
    starts = sink_starts(COMMITTED, BOUNDS, EARLIEST)
    items = sink_ranges(SETTINGS, WORKS, PARTITIONS, BOUNDS, starts, {})
    assert [(i.topic, i.partition, i.start, i.committed, i.end) for i in items] == [
        ("t", 0, 3, False, 8),
        ("t", 2, 4, True, 5),
    ]
    assert _reset_commits(starts, items) == {}


def test_never_committed_latest_reads_nothing_now_and_commits_the_end_it_started_at() -> None:
    """Without the commit, the next batch's fresh consumer would reset to a later end and skip
    what was written in between; the empty partition's 0 included."""
    starts = sink_starts(COMMITTED, BOUNDS, LATEST)
    items = sink_ranges(SETTINGS, WORKS, PARTITIONS, BOUNDS, starts, {})
    assert [(i.topic, i.partition, i.start) for i in items] == [("t", 2, 4)]
    assert _reset_commits(starts, items) == {("t", 0): (8, ""), ("t", 1): (0, "")}


def test_a_task_that_commits_one_partition_commits_its_never_committed_ones_at_their_start() -> None:
    """As Java's task commits every partition it holds. Task 0 reads t[0] and holds t[1] and t[3]
    (never committed, nothing to read); task 1 reads t[2], all it holds; task 2 reads nothing."""
    bounds = {**BOUNDS, ("t", 3): LogBounds(2, 2, 2), ("t", 4): LogBounds(0, 0, 0)}
    starts = sink_starts(COMMITTED, bounds, EARLIEST)
    partitions = {0: [("t", 0), ("t", 1), ("t", 3)], 1: [("t", 2)], 2: [("t", 4)]}
    read = {("t", 0): (8, ""), ("t", 2): (5, "")}
    assert _untouched_commits(partitions, starts, read, []) == {("t", 1): (0, ""), ("t", 3): (2, "")}
    failed = [SinkPartitionResult(task_id=0, topic="t", partition=0, records=0, offset=None, error="Traceback …")]
    assert _untouched_commits(partitions, starts, read, failed) == {}  # a failed task: nothing more
    assert _untouched_commits(partitions, starts, {}, []) == {}  # nothing moved: no commit at all


ITEM = SinkPartitionWork(
    settings=SETTINGS,
    connector="archive",
    connector_class="parquet-sink",
    task_id=0,
    task_config={},
    topic="t",
    partition=0,
    start=5,
    committed=True,
    end=9,
)


@pytest.mark.parametrize(
    ("committed", "held", "expected"),
    [
        (True, None, (5, 5)),
        (False, None, (5, None)),  # never committed, `earliest`: nothing says the start was reached
        (False, 7, (7, 7)),  # the task's files say so
        (True, 2, (5, 5)),  # files behind the start (a rewind past them, or retention)
        (True, 7, (7, 7)),
    ],
)
def test_the_task_reads_from_the_larger_of_the_start_and_what_it_holds(
    committed: bool, held: int | None, expected: tuple[int, int | None]
) -> None:
    assert task_start(replace(ITEM, committed=committed), held) == expected


def test_a_sink_commit_says_how_far_a_record_free_tail_was_read() -> None:
    """Connect's offset (last delivered + 1) is committed; `scanned-to` only when offsets that
    hold no record (a transaction's commit marker) follow it, so the next batch skips them."""

    def result(offset: int | None, scanned: int | None) -> SinkPartitionResult:
        return SinkPartitionResult(task_id=0, topic="t", partition=0, records=10, offset=offset, scanned_to=scanned)

    assert commit_metadata(result(32, 33)) == "reconciler scanned-to=33"
    assert commit_metadata(result(33, 33)) == ""  # nothing past the offset: Java's empty metadata
    assert commit_metadata(result(32, None)) == "" and commit_metadata(result(None, 33)) == ""
    assert scanned_to("reconciler scanned-to=33") == 33
    for other in ("", "scanned-to=33", "reconciler scanned-to=x", "reconciler scanned-to=-1"):
        assert scanned_to(other) is None
