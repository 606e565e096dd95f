"""The driver's side of a table sink (`runtime.sink.tables`): the table's offsets merged into
the group's, the successful ranges handed to `commit`, a failed commit failing its ranges, and
the group following a table that is ahead of it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from reconciler import failpoints
from reconciler.connectors.api import (
    ConnectorConfig,
    ConnectorError,
    TableCommitFailed,
    TableSinkConnector,
    TaskConfig,
    TopicPartition,
    Written,
)
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.sink.ranges import SinkPartitionResult, SinkPartitionWork
from reconciler.runtime.sink.tables import caught_up, commit_tables, merge_offsets, table_offsets, written

COMMITTED: list[list[Written]] = []


class Ledger(TableSinkConnector):
    """A table sink whose table is a dict; `failure` makes its commit raise."""

    table: dict[TopicPartition, int] = {}
    failure: ConnectorError | None = None

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return [{}]

    def table_offsets(self, config: ConnectorConfig, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return dict(self.table)

    def commit(self, config: ConnectorConfig, written: Sequence[Written]) -> None:
        if self.failure is not None:
            raise self.failure
        COMMITTED.append(list(written))


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    COMMITTED.clear()
    hits: list[str] = []
    monkeypatch.setattr(failpoints, "hit", lambda point: hits.append(str(point)))
    yield hits


def item(partition: int, start: int) -> SinkPartitionWork:
    return SinkPartitionWork(settings=KafkaSettings(bootstrap_servers="a:9092"), connector="lake",
                             connector_class=f"{__name__}:Ledger", task_id=partition, task_config={}, topic="t",
                             partition=partition, start=start, committed=True, end=100)


def result(partition: int, offset: int | None, committable: str | None, error: str | None = None) -> SinkPartitionResult:
    return SinkPartitionResult(task_id=partition, topic="t", partition=partition, records=5, offset=offset,
                               error=error, committable=committable, scanned_to=offset)


def test_the_larger_of_the_groups_and_the_tables_offset_wins() -> None:
    group = {("t", 0): 10, ("t", 1): 30}
    table = {("t", 0): 20, ("t", 1): 25, ("t", 2): 5}
    assert merge_offsets(group, table) == {("t", 0): 20, ("t", 1): 30, ("t", 2): 5}


def test_table_offsets_keeps_only_the_batchs_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Ledger, "table", {("t", 0): 7, ("other", 0): 9})
    assert table_offsets(Ledger(), "lake", {}, [("t", 0), ("t", 1)]) == {("t", 0): 7}
    assert table_offsets(Ledger(), "lake", {}, []) == {}


def test_only_successful_ranges_with_something_to_commit_are_written_with_their_start() -> None:
    summaries = [result(0, 15, "files-0"), result(1, None, None, error="boom"), result(2, 40, None), result(3, 9, "f3")]
    found = written(summaries, [item(0, 10), item(1, 0), item(2, 30), item(3, 4)])
    assert found == [Written(topic="t", partition=0, offset=15, committable="files-0", start=10),
                     Written(topic="t", partition=3, offset=9, committable="f3", start=4)]
    assert found[0].tp == ("t", 0)


def test_a_commit_then_the_crash_point_then_the_summaries_unchanged(_fresh: list[str]) -> None:
    summaries = [result(0, 15, "files-0"), result(1, 20, "files-1")]
    assert commit_tables(Ledger(), "lake", {}, summaries, [item(0, 10), item(1, 12)]) == summaries
    assert [[w.partition for w in batch] for batch in COMMITTED] == [[0, 1]]
    assert _fresh == ["sink.after_table_commit"]


def test_nothing_to_commit_calls_no_commit(_fresh: list[str]) -> None:
    summaries = [result(0, 10, None)]
    assert commit_tables(Ledger(), "lake", {}, summaries, [item(0, 10)]) == summaries
    assert COMMITTED == [] and _fresh == []


def test_a_failed_commit_fails_every_written_range_and_commits_no_offset(
    monkeypatch: pytest.MonkeyPatch, _fresh: list[str]
) -> None:
    monkeypatch.setattr(Ledger, "failure", ConnectorError("table /lake: t[0] moved to 20 since 10 (another writer)"))
    summaries = [result(0, 15, "files-0"), result(1, 20, "files-1"), result(2, 5, None, error="earlier")]
    after = commit_tables(Ledger(), "lake", {}, summaries, [item(0, 10), item(1, 12), item(2, 0)])
    assert [(s.offset, s.committable, s.scanned_to) for s in after[:2]] == [(None, None, None)] * 2
    assert after[0].error == ("reconciler.connectors.api.ConnectorError: table /lake: t[0] moved to 20 since 10 "
                              "(another writer)")
    assert after[2].error == "earlier"
    assert _fresh == []  # no table commit: the crash point is not reached


def test_a_commit_failing_for_some_partitions_fails_only_theirs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Ledger, "failure", TableCommitFailed("t[1] fenced", [("t", 1)]))
    after = commit_tables(Ledger(), "lake", {}, [result(0, 15, "a"), result(1, 20, "b")], [item(0, 10), item(1, 12)])
    assert [(s.offset, s.error is None) for s in after] == [(15, True), (None, False)]


def test_the_group_follows_a_table_ahead_of_it_where_no_range_runs() -> None:
    table = {("t", 0): 20, ("t", 1): 30, ("t", 2): 50, ("t", 3): 9}
    group = {("t", 0): 10, ("t", 1): 30, ("t", 2): 40}
    ends = {("t", 0): 20, ("t", 1): 30, ("t", 2): 45, ("t", 3): 9}
    # t[0] behind: follows; t[1] equal: nothing; t[2] past the log end (a recreated topic): left;
    # t[3] never committed to the group: follows; a scheduled partition commits through its range.
    assert caught_up(table, group, [], ends) == {("t", 0): (20, ""), ("t", 3): (9, "")}
    assert caught_up(table, group, [item(0, 20)], ends) == {("t", 3): (9, "")}
