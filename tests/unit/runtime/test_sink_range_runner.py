"""The one range runner (`sink.task.run_range`): a sink task over one range, whichever reader
feeds it; here the feed of Spark's Kafka data source (`sink.spark_reader.DataSourceFeed`), with
its batches built in memory."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pytest

from reconciler import failpoints
from reconciler.connectors.api import (
    ConnectorConfig,
    SinkConnector,
    SinkTask,
    TaskConfig,
    TopicPartition,
    headers_type,
    share_configs,
)
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.sink.ranges import SinkPartitionWork
from reconciler.runtime.sink.spark_reader import DataSourceFeed
from reconciler.runtime.sink.task import run_range

WRITTEN: list[int] = []  # the offsets the task was given, in order
EVENTS: list[str] = []


class MemorySinkTask(SinkTask):
    held: int | None = None  # what `open` says the task holds
    fail_on_write = False

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        EVENTS.append("open")
        return {} if self.held is None else {partitions[0]: self.held}

    def write(self, batch: Any) -> None:
        if self.fail_on_write:
            raise RuntimeError("disk full")
        WRITTEN.extend(batch.column("offset").to_pylist())

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        EVENTS.append(f"pre_commit {dict(offsets)} closing={closing}")
        return dict(offsets)

    def stop(self) -> None:
        EVENTS.append("stop")


class MemorySink(SinkConnector):
    task_class = MemorySinkTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)


ITEM = SinkPartitionWork(
    settings=KafkaSettings(bootstrap_servers="a:9092"),
    connector="archive",
    connector_class=f"{__name__}:MemorySink",
    task_id=0,
    task_config={},
    topic="t",
    partition=0,
    start=5,
    committed=True,
    end=8,
)


@pytest.fixture(autouse=True)
def _fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    WRITTEN.clear()
    EVENTS.clear()
    hits: list[str] = []
    monkeypatch.setattr(failpoints, "hit", lambda point: hits.append(str(point)))
    yield hits


def raw(offsets: Sequence[int]) -> pa.RecordBatch:
    """A batch as the data source gives it: its own column order, µs timestamps."""
    n = len(offsets)
    return pa.RecordBatch.from_pydict(
        {
            "key": pa.array([b"k"] * n, pa.binary()),
            "value": pa.array([b"v%d" % o for o in offsets], pa.binary()),
            "topic": pa.array(["t"] * n),
            "partition": pa.array([0] * n, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pa.array([o * 1000 for o in offsets], pa.timestamp("us")),
            "timestampType": pa.array([0] * n, pa.int32()),
            "headers": pa.nulls(n, headers_type()),
        }
    )


def run(*batches: pa.RecordBatch) -> Any:
    return run_range(ITEM, lambda start: DataSourceFeed(iter(batches), start, ITEM.end))


def test_the_task_gets_the_range_from_its_start_and_commits_the_last_delivered_record_plus_one(
    _fresh: list[str],
) -> None:
    result = run(raw([3, 4, 5]), raw([6, 7]))
    assert WRITTEN == [5, 6, 7]  # below the range's start is not delivered again
    assert (result.records, result.offset, result.scanned_to, result.error) == (3, 8, 8, None)
    assert result.bytes == 3 * len(b"k") + 3 * len(b"v5")
    assert EVENTS == ["open", "pre_commit {('t', 0): 8} closing=True", "stop"]
    assert _fresh == ["sink.mid_write", "sink.after_files"]  # after the first of several batches


def test_a_task_holding_more_than_the_group_reads_from_what_it_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MemorySinkTask, "held", 7)
    result = run(raw([5, 6, 7]))
    assert WRITTEN == [7]
    assert (result.records, result.offset) == (1, 8)


def test_a_range_with_nothing_past_the_start_commits_where_it_started_read_to_its_end() -> None:
    result = run(raw([3, 4]))
    assert WRITTEN == []
    assert (result.records, result.offset, result.scanned_to) == (0, 5, 8)
    assert EVENTS == ["open", "pre_commit {('t', 0): 5} closing=True", "stop"]


def test_a_failing_task_reports_its_traceback_commits_nothing_and_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MemorySinkTask, "fail_on_write", True)
    result = run(raw([5, 6]))
    assert result.offset is None and result.scanned_to is None
    assert result.error is not None and "RuntimeError: disk full" in result.error
    assert EVENTS == ["open", "stop"]


def test_the_tasks_committable_after_its_closing_pre_commit_is_in_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(MemorySinkTask, "committable", lambda self: '{"files": ["a.parquet"]}', raising=False)
    result = run(raw([5, 6, 7]))
    assert (result.offset, result.committable) == (8, '{"files": ["a.parquet"]}')


def test_a_sink_that_commits_itself_reports_no_committable_nor_does_a_failed_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert run(raw([5])).committable is None
    monkeypatch.setattr(MemorySinkTask, "committable", lambda self: "files", raising=False)
    monkeypatch.setattr(MemorySinkTask, "fail_on_write", True)
    assert run(raw([5])).committable is None
