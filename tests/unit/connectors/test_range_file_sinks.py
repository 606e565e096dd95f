"""What file-sink (text and JSON lines) and parquet-sink do alike, as they share
`range_files.RangeFileSinkTask`: offset-range files written atomically, exactly once across
simulated crashes, and rewinds. Each test runs for every sink (`range_sink_support.SINKS`); what
one sink alone does is in its own test file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pytest
from range_sink_support import SINKS, TOPIC, RangeSink, batch, files, local_dir

from reconciler.connectors.api import ConfigProblem, OffsetsRefused

pytestmark = pytest.mark.parametrize("sink", SINKS, ids=lambda sink: sink.name)


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"topics": ""}, [ConfigProblem("topics", "is required")]),
        ({"topics": " , "}, [ConfigProblem("topics", "names no topic")]),
        ({"topics": "a,b c"}, [ConfigProblem("topics", "invalid topic name: 'b c' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")]),
        ({"path": " "}, [ConfigProblem("path", "is required")]),
        ({"flush.records": "0"}, [ConfigProblem("flush.records", "must be at least 1; got 0")]),
        ({"flush.records": "many"}, [ConfigProblem("flush.records", "must be an integer; got 'many'")]),
        ({"topics": "a, b.c,d-e", "flush.records": "10"}, []),
    ],
)
def test_validate_names_the_bad_key(sink: RangeSink, tmp_path: Path, overrides: dict[str, str],
                                    expected: list[ConfigProblem]) -> None:
    assert sink.connector().validate(sink.config(tmp_path, **overrides)) == expected


def test_every_task_gets_the_same_config(sink: RangeSink, tmp_path: Path) -> None:
    configs = sink.connector().task_configs({**sink.config(tmp_path), "unset": None}, 3)
    assert configs == [sink.config(tmp_path)] * 3


# --- writing --------------------------------------------------------------------------------


def test_files_are_named_by_offset_range_and_hold_those_records(sink: RangeSink, tmp_path: Path) -> None:
    task = sink.started(tmp_path)
    assert task.open([(TOPIC, 0), (TOPIC, 1)]) == {}
    task.write(batch(range(0, 100)))
    task.write(batch(range(100, 250)))
    task.write(batch(range(7, 12), partition=1))
    assert task.pre_commit({(TOPIC, 0): 250, (TOPIC, 1): 12}, closing=True) == {(TOPIC, 0): 250, (TOPIC, 1): 12}
    assert files(tmp_path) == [sink.file(0, (0, 249))] == [f"orders+0+{0:020d}-{249:020d}{sink.suffix}"]
    assert files(tmp_path, 1) == [sink.file(1, (7, 11))]
    assert sink.offsets(tmp_path) == list(range(250))
    assert sink.offsets(tmp_path, 1) == list(range(7, 12))


def test_flush_records_cuts_files_while_writing(sink: RangeSink, tmp_path: Path) -> None:
    task = sink.started(tmp_path, **{"flush.records": "100"})
    task.open([(TOPIC, 0)])
    for start in range(0, 250, 50):
        task.write(batch(range(start, start + 50)))
    assert files(tmp_path) == [sink.file(0, (0, 99)), sink.file(0, (100, 199))]
    # Not closing: the 50 buffered records are in no file yet, so only offsets up to 200 are safe.
    assert task.pre_commit({(TOPIC, 0): 250}, closing=False) == {(TOPIC, 0): 200}
    assert task.pre_commit({(TOPIC, 0): 250}, closing=True) == {(TOPIC, 0): 250}
    assert files(tmp_path)[-1] == sink.file(0, (200, 249))
    assert sink.offsets(tmp_path) == list(range(250))


def test_a_batch_mixing_partitions_and_topics_is_split(sink: RangeSink, tmp_path: Path) -> None:
    task = sink.started(tmp_path, topics="orders,refunds")
    task.write(pa.concat_batches([batch([5, 6], partition=2), batch([0], topic="refunds"), batch([7], partition=2)]))
    task.pre_commit({}, closing=True)
    assert files(tmp_path, 2) == [sink.file(2, (5, 7))]
    assert sink.offsets(tmp_path, 2) == [5, 6, 7]
    assert files(tmp_path, 0, topic="refunds") == [sink.file(0, (0, 0), topic="refunds")]


def test_offset_gaps_from_transaction_markers_are_fine(sink: RangeSink, tmp_path: Path) -> None:
    task = sink.started(tmp_path)
    task.write(batch([0, 1, 2, 4, 5, 6, 8]))  # 3 and 7: commit markers of transactions
    assert task.pre_commit({(TOPIC, 0): 9}, closing=True) == {(TOPIC, 0): 9}
    assert files(tmp_path) == [sink.file(0, (0, 8))]
    assert sink.started(tmp_path).open([(TOPIC, 0)]) == {(TOPIC, 0): 9}


def test_empty_batches_and_empty_commits_write_nothing(sink: RangeSink, tmp_path: Path) -> None:
    task = sink.started(tmp_path)
    task.open([(TOPIC, 0)])
    task.write(batch([]))
    assert task.pre_commit({(TOPIC, 0): 0}, closing=True) == {(TOPIC, 0): 0}
    assert files(tmp_path) == []


# --- crashes --------------------------------------------------------------------------------


def test_after_a_crash_before_the_offset_commit_redelivery_adds_no_duplicates(sink: RangeSink, tmp_path: Path) -> None:
    first = sink.started(tmp_path)
    first.open([(TOPIC, 0)])
    first.write(batch(range(0, 300)))
    first.pre_commit({(TOPIC, 0): 300}, closing=True)
    # Crash here: files written, group offset never committed (still 0).

    second = sink.started(tmp_path)
    assert second.open([(TOPIC, 0)]) == {(TOPIC, 0): 300}
    second.write(batch(range(0, 150)))  # the runtime re-delivers from the committed offset…
    second.write(batch(range(150, 400)))  # …up to new records
    assert second.pre_commit({(TOPIC, 0): 400}, closing=True) == {(TOPIC, 0): 400}
    assert files(tmp_path) == [sink.file(0, (0, 299)), sink.file(0, (300, 399))]
    assert sink.offsets(tmp_path) == list(range(400))


def test_redelivery_that_is_all_old_still_reports_it_safe(sink: RangeSink, tmp_path: Path) -> None:
    first = sink.started(tmp_path)
    first.write(batch(range(0, 50)))
    first.pre_commit({(TOPIC, 0): 50}, closing=True)
    second = sink.started(tmp_path)
    second.open([(TOPIC, 0)])
    second.write(batch(range(0, 50)))
    assert second.pre_commit({(TOPIC, 0): 50}, closing=False) == {(TOPIC, 0): 50}
    assert sink.offsets(tmp_path) == list(range(50))


def test_a_crash_before_flush_loses_nothing_once_redelivered(sink: RangeSink, tmp_path: Path) -> None:
    first = sink.started(tmp_path)
    first.open([(TOPIC, 0)])
    first.write(batch(range(0, 80)))
    first.stop()  # buffered records dropped; nothing committed
    assert files(tmp_path) == []
    second = sink.started(tmp_path)
    assert second.open([(TOPIC, 0)]) == {}
    second.write(batch(range(0, 80)))
    second.pre_commit({(TOPIC, 0): 80}, closing=True)
    assert sink.offsets(tmp_path) == list(range(80))


def test_open_deletes_temp_files_left_by_a_crash_between_write_and_rename(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 10)
    leftover = local_dir(tmp_path, TOPIC, 0) / f".{sink.file(0, (10, 19))}.tmp"
    leftover.write_bytes(b"v10\nv1" if sink.suffix != ".parquet" else b"PAR1 half a file")
    assert sink.offsets(tmp_path) == list(range(10))  # readers skip dot-files
    assert sink.started(tmp_path).open([(TOPIC, 0)]) == {(TOPIC, 0): 10}
    assert not leftover.exists()
    assert files(tmp_path) == [sink.file(0, (0, 9))]


def test_a_failed_write_leaves_neither_a_partial_file_nor_a_temp_file(
    sink: RangeSink, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write_half_then_fail(self: object, out: BinaryIO, chunks: list[object]) -> None:
        out.write(b"PAR1 partial\n")
        raise OSError("disk full")

    task = sink.started(tmp_path)
    task.open([(TOPIC, 0)])
    task.write(batch(range(0, 10)))
    monkeypatch.setattr(sink.task, "write_file", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        task.pre_commit({(TOPIC, 0): 10}, closing=True)
    assert files(tmp_path) == []
    assert sink.started(tmp_path).open([(TOPIC, 0)]) == {}


# --- rewinds (KIP-875 alter / reset) --------------------------------------------------------


def superseded(root: Path) -> list[str]:
    return sorted(os.listdir(root / "_superseded" / f"topic={TOPIC}" / "partition=0"))


def test_rewind_cuts_the_straddling_file_and_moves_later_ones_aside(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 300)  # files 0-99, 100-199, 200-299
    assert sink.connector().alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 150}) is True
    assert files(tmp_path) == [sink.file(0, (0, 99)), sink.file(0, (100, 149))]
    assert superseded(tmp_path) == [sink.file(0, (100, 199)), sink.file(0, (200, 299))]
    assert sink.offsets(tmp_path) == list(range(150))  # readers ignore `_superseded`

    task = sink.started(tmp_path)
    assert task.open([(TOPIC, 0)]) == {(TOPIC, 0): 150}
    task.write(batch(range(150, 300)))  # the re-delivered range is written again
    task.pre_commit({(TOPIC, 0): 300}, closing=True)
    assert sink.offsets(tmp_path) == list(range(300))


def test_rewind_is_idempotent_and_keeps_every_superseded_version(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 200)
    connector = sink.connector()
    connector.alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 150})
    connector.alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 150})
    assert files(tmp_path) == [sink.file(0, (0, 99)), sink.file(0, (100, 149))]
    assert sink.offsets(tmp_path) == list(range(150))
    sink.write_range(tmp_path, 150, 200)
    connector.alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 150})
    assert superseded(tmp_path) == [sink.file(0, (100, 199)), sink.file(0, (150, 199))]


def test_reset_moves_every_file_of_the_partition_aside(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 200)
    assert sink.connector().alter_offsets(sink.config(tmp_path), {(TOPIC, 0): None, (TOPIC, 5): None}) is True
    assert files(tmp_path) == []
    assert sink.started(tmp_path).open([(TOPIC, 0)]) == {}


def test_moving_forward_leaves_the_files_alone(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 200)
    sink.connector().alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 500})
    assert sink.offsets(tmp_path) == list(range(200))


def test_negative_offsets_are_refused_and_move_no_file_of_any_partition(sink: RangeSink, tmp_path: Path) -> None:
    sink.write_range(tmp_path, 0, 200)
    before = files(tmp_path)
    with pytest.raises(OffsetsRefused, match="offset -1 for orders-0 is negative"):
        sink.connector().alter_offsets(sink.config(tmp_path), {(TOPIC, 0): -1})
    with pytest.raises(OffsetsRefused, match="offset -1 for orders-1 is negative"):
        # Partition 0 comes first and could be rewound, but nothing moves for either.
        sink.connector().alter_offsets(sink.config(tmp_path), {(TOPIC, 0): 150, (TOPIC, 1): -1})
    assert files(tmp_path) == before
    assert not (tmp_path / "_superseded").exists()
