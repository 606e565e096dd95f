"""parquet-sink on a real directory: offset-range files, atomic writes, exactly once across
simulated crashes, and rewinds. Output is read back with pyarrow and compared by offsets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from reconciler.connectors.range_files import partition_dir
from reconciler.connectors.api import ConfigProblem, OffsetsRefused, SinkRecord, records_to_batch
from reconciler.connectors.storage import open_store
from reconciler.connectors.parquet_sink import (
    ParquetSinkConnector,
    ParquetSinkTask,
    file_name,
    rewind_partition,
)

TOPIC = "orders"


def local_dir(root: Path, topic: str, partition: int) -> Path:
    return root / partition_dir(topic, partition)


def config(root: Path, **overrides: str) -> dict[str, str]:
    return {"name": "archive", "topics": TOPIC, "path": str(root), **overrides}


def batch(offsets: Iterable[int], topic: str = TOPIC, partition: int = 0) -> pa.RecordBatch:
    return records_to_batch(
        [SinkRecord(topic, partition, o, b"%d" % o, b'{"id":%d}' % o, 1_700_000_000_000 + o) for o in offsets]
    )


def started(root: Path, **overrides: str) -> ParquetSinkTask:
    task = ParquetSinkTask()
    task.start(ParquetSinkConnector().task_configs(config(root, **overrides), 1)[0])
    return task


def files(root: Path, partition: int = 0, topic: str = TOPIC) -> list[str]:
    directory = local_dir(root, topic, partition)
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def dataset_rows(root: Path) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row a dataset reader sees, sorted."""
    table = ds.dataset(root, format="parquet", partitioning="hive").to_table()
    rows = zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), table.column("offset").to_pylist(), strict=True)
    return sorted(rows)


def offsets_in(root: Path, partition: int = 0) -> list[int]:
    return [o for t, p, o in dataset_rows(root) if (t, p) == (TOPIC, partition)]


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"topics": ""}, [ConfigProblem("topics", "is required")]),
        ({"topics": " , "}, [ConfigProblem("topics", "names no topic")]),
        ({"topics": "a,b c"}, [ConfigProblem("topics", "invalid topic name: 'b c' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'")]),
        ({"path": ""}, [ConfigProblem("path", "is required")]),
        ({"flush.records": "0"}, [ConfigProblem("flush.records", "must be at least 1; got 0")]),
        ({"compression": "lzo"}, [ConfigProblem("compression", "must be one of snappy, zstd, gzip, lz4, brotli, none; got 'lzo'")]),
        ({"topics": "a, b.c,d-e", "compression": "zstd", "flush.records": "10"}, []),
    ],
)
def test_validate_names_the_bad_key(tmp_path: Path, overrides: dict[str, str], expected: list[ConfigProblem]) -> None:
    assert ParquetSinkConnector().validate(config(tmp_path, **overrides)) == expected


def test_every_task_gets_the_same_config(tmp_path: Path) -> None:
    configs = ParquetSinkConnector().task_configs({**config(tmp_path), "unset": None}, 3)
    assert configs == [config(tmp_path)] * 3


# --- writing --------------------------------------------------------------------------------


def test_files_are_named_by_offset_range_and_hold_those_records(tmp_path: Path) -> None:
    task = started(tmp_path)
    assert task.open([(TOPIC, 0), (TOPIC, 1)]) == {}
    task.write(batch(range(0, 100)))
    task.write(batch(range(100, 250)))
    task.write(batch(range(7, 12), partition=1))
    assert task.pre_commit({(TOPIC, 0): 250, (TOPIC, 1): 12}, closing=True) == {(TOPIC, 0): 250, (TOPIC, 1): 12}
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 249))] == ["orders+0+00000000000000000000-00000000000000000249.parquet"]
    assert files(tmp_path, 1) == [file_name(TOPIC, 1, (7, 11))]
    table = pq.read_table(local_dir(tmp_path, TOPIC, 0) / files(tmp_path)[0])
    assert table.schema.names == ["offset", "timestamp", "key", "value"]
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert table.column("offset").to_pylist() == list(range(250))
    assert table.column("key").to_pylist()[42] == b"42"
    assert table.column("value").to_pylist()[42] == b'{"id":42}'
    assert dataset_rows(tmp_path) == [(TOPIC, 0, o) for o in range(250)] + [(TOPIC, 1, o) for o in range(7, 12)]


def test_flush_records_cuts_files_while_writing(tmp_path: Path) -> None:
    task = started(tmp_path, **{"flush.records": "100"})
    task.open([(TOPIC, 0)])
    for start in range(0, 250, 50):
        task.write(batch(range(start, start + 50)))
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 99)), file_name(TOPIC, 0, (100, 199))]
    # Not closing: the 50 buffered rows are not in a file yet, so only offsets up to 200 are safe.
    assert task.pre_commit({(TOPIC, 0): 250}, closing=False) == {(TOPIC, 0): 200}
    assert task.pre_commit({(TOPIC, 0): 250}, closing=True) == {(TOPIC, 0): 250}
    assert files(tmp_path)[-1] == file_name(TOPIC, 0, (200, 249))
    assert offsets_in(tmp_path) == list(range(250))


def test_a_batch_mixing_partitions_and_topics_is_split(tmp_path: Path) -> None:
    task = started(tmp_path, topics="orders,refunds")
    mixed = pa.concat_batches([batch([5, 6], partition=2), batch([0], topic="refunds"), batch([7], partition=2)])
    task.write(mixed)
    task.pre_commit({}, closing=True)
    assert files(tmp_path, 2) == [file_name(TOPIC, 2, (5, 7))]
    assert files(tmp_path, 0, topic="refunds") == [file_name("refunds", 0, (0, 0))]


def test_offset_gaps_from_transaction_markers_are_fine(tmp_path: Path) -> None:
    task = started(tmp_path)
    task.open([(TOPIC, 0)])
    task.write(batch([0, 1, 2, 4, 5, 6, 8]))  # 3 and 7: commit markers of transactions
    assert task.pre_commit({(TOPIC, 0): 9}, closing=True) == {(TOPIC, 0): 9}
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 8))]
    again = started(tmp_path)
    assert again.open([(TOPIC, 0)]) == {(TOPIC, 0): 9}


def test_empty_batches_and_empty_commits_write_nothing(tmp_path: Path) -> None:
    task = started(tmp_path)
    task.open([(TOPIC, 0)])
    task.write(batch([]))
    assert task.pre_commit({(TOPIC, 0): 0}, closing=True) == {(TOPIC, 0): 0}
    assert files(tmp_path) == []


# --- crashes --------------------------------------------------------------------------------


def test_after_a_crash_before_the_offset_commit_redelivery_adds_no_duplicates(tmp_path: Path) -> None:
    first = started(tmp_path)
    first.open([(TOPIC, 0)])
    first.write(batch(range(0, 300)))
    first.pre_commit({(TOPIC, 0): 300}, closing=True)
    # Crash here: files written, group offset never committed (still 0).

    second = started(tmp_path)
    assert second.open([(TOPIC, 0)]) == {(TOPIC, 0): 300}
    second.write(batch(range(0, 150)))  # the runtime re-delivers from the committed offset…
    second.write(batch(range(150, 400)))  # …up to new records
    assert second.pre_commit({(TOPIC, 0): 400}, closing=True) == {(TOPIC, 0): 400}
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 299)), file_name(TOPIC, 0, (300, 399))]
    assert offsets_in(tmp_path) == list(range(400))


def test_redelivery_that_is_all_old_still_reports_it_safe(tmp_path: Path) -> None:
    first = started(tmp_path)
    first.write(batch(range(0, 50)))
    first.pre_commit({(TOPIC, 0): 50}, closing=True)
    second = started(tmp_path)
    second.open([(TOPIC, 0)])
    second.write(batch(range(0, 50)))
    assert second.pre_commit({(TOPIC, 0): 50}, closing=False) == {(TOPIC, 0): 50}
    assert offsets_in(tmp_path) == list(range(50))


def test_a_crash_before_flush_loses_nothing_once_redelivered(tmp_path: Path) -> None:
    first = started(tmp_path)
    first.open([(TOPIC, 0)])
    first.write(batch(range(0, 80)))
    first.stop()  # buffered rows dropped; nothing committed
    assert files(tmp_path) == []
    second = started(tmp_path)
    assert second.open([(TOPIC, 0)]) == {}
    second.write(batch(range(0, 80)))
    second.pre_commit({(TOPIC, 0): 80}, closing=True)
    assert offsets_in(tmp_path) == list(range(80))


def test_open_deletes_temp_files_left_by_a_crash_between_write_and_rename(tmp_path: Path) -> None:
    task = started(tmp_path)
    task.write(batch(range(0, 10)))
    task.pre_commit({(TOPIC, 0): 10}, closing=True)
    directory = local_dir(tmp_path, TOPIC, 0)
    leftover = directory / f".{file_name(TOPIC, 0, (10, 19))}.tmp"
    leftover.write_bytes(b"PAR1 half a file")
    assert dataset_rows(tmp_path) == [(TOPIC, 0, o) for o in range(10)]  # readers skip dot-files

    assert started(tmp_path).open([(TOPIC, 0)]) == {(TOPIC, 0): 10}
    assert not leftover.exists()
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 9))]


def test_a_failed_write_leaves_neither_a_partial_file_nor_a_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def write_half_then_fail(table: pa.Table, where: BinaryIO, **kwargs: object) -> None:
        where.write(b"PAR1 partial")
        raise OSError("disk full")

    task = started(tmp_path)
    task.open([(TOPIC, 0)])
    task.write(batch(range(0, 10)))
    monkeypatch.setattr(pq, "write_table", write_half_then_fail)
    with pytest.raises(OSError, match="disk full"):
        task.pre_commit({(TOPIC, 0): 10}, closing=True)
    assert files(tmp_path) == []
    assert started(tmp_path).open([(TOPIC, 0)]) == {}


# --- rewinds (KIP-875 alter / reset) --------------------------------------------------------


def write_range(root: Path, start: int, end: int, flush: int = 100) -> None:
    task = started(root, **{"flush.records": str(flush)})
    task.open([(TOPIC, 0)])
    for first in range(start, end, flush):
        task.write(batch(range(first, min(end, first + flush))))
    task.pre_commit({(TOPIC, 0): end}, closing=True)


def test_rewind_cuts_the_straddling_file_and_moves_later_ones_aside(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 300)  # files 0-99, 100-199, 200-299
    assert ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 150}) is True
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 99)), file_name(TOPIC, 0, (100, 149))]
    assert sorted(os.listdir(tmp_path / "_superseded" / f"topic={TOPIC}" / "partition=0")) == [
        file_name(TOPIC, 0, (100, 199)),
        file_name(TOPIC, 0, (200, 299)),
    ]
    assert offsets_in(tmp_path) == list(range(150))  # readers ignore `_superseded`

    task = started(tmp_path)
    assert task.open([(TOPIC, 0)]) == {(TOPIC, 0): 150}
    task.write(batch(range(150, 300)))  # the re-delivered range is written again
    task.pre_commit({(TOPIC, 0): 300}, closing=True)
    assert offsets_in(tmp_path) == list(range(300))


def test_rewind_is_idempotent_and_keeps_every_superseded_version(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    connector = ParquetSinkConnector()
    connector.alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    connector.alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 99)), file_name(TOPIC, 0, (100, 149))]
    write_range(tmp_path, 150, 200)
    connector.alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    superseded = sorted(os.listdir(tmp_path / "_superseded" / f"topic={TOPIC}" / "partition=0"))
    assert superseded == [file_name(TOPIC, 0, (100, 199)), file_name(TOPIC, 0, (150, 199))]


def test_a_rewind_interrupted_after_the_cut_completes_when_repeated(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    directory = local_dir(tmp_path, TOPIC, 0)
    # Simulate a crash inside alter: the cut part exists but the original was not moved yet.
    original = pq.read_table(directory / file_name(TOPIC, 0, (100, 199)))
    pq.write_table(original.slice(0, 50), directory / file_name(TOPIC, 0, (100, 149)))
    ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 99)), file_name(TOPIC, 0, (100, 149))]
    assert offsets_in(tmp_path) == list(range(150))


def test_reset_moves_every_file_of_the_partition_aside(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    assert ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): None, (TOPIC, 5): None}) is True
    assert files(tmp_path) == []
    assert started(tmp_path).open([(TOPIC, 0)]) == {}


def test_moving_forward_leaves_the_files_alone(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 500})
    assert offsets_in(tmp_path) == list(range(200))


def test_negative_offsets_are_refused(tmp_path: Path) -> None:
    with pytest.raises(OffsetsRefused, match="offset -1 for orders-0 is negative"):
        ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): -1})


def test_a_refused_partition_moves_no_file_of_any_other(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    before = files(tmp_path)
    with pytest.raises(OffsetsRefused, match="offset -1 for orders-1 is negative"):
        # Partition 0 comes first and could be rewound, but nothing moves for either.
        ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 150, (TOPIC, 1): -1})
    assert files(tmp_path) == before
    assert not (tmp_path / "_superseded").exists()


def test_a_file_to_cut_that_is_not_parquet_refuses_the_rewind_before_anything_moves(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    straddling = local_dir(tmp_path, TOPIC, 0) / files(tmp_path)[1]  # offsets 100-199
    straddling.write_bytes(b"not parquet")
    before = files(tmp_path)
    with pytest.raises(OffsetsRefused, match=f"cannot read .*{re.escape(straddling.name)} to cut it at 150"):
        ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    assert files(tmp_path) == before
    assert not (tmp_path / "_superseded").exists()


def test_rewind_of_a_partition_with_no_files_does_nothing(tmp_path: Path) -> None:
    rewind_partition(open_store(str(tmp_path), {}), TOPIC, 3, 10, "snappy")
    assert not (tmp_path / "_superseded").exists()


# --- speed ----------------------------------------------------------------------------------


def test_throughput_of_one_task(tmp_path: Path) -> None:
    """Arrow all the way: ~4M records/s for 100-byte values on the reference machine."""
    import time

    n, size = 1_000_000, 100_000
    values = pa.array([b'{"id":%d,"payload":"%s"}' % (i, b"q" * (i % 90)) for i in range(n)], pa.binary())
    batches = [
        pa.RecordBatch.from_arrays(
            [
                pa.array([TOPIC] * size),
                pa.array([0] * size, pa.int32()),
                pa.array(range(s, s + size), pa.int64()),
                pa.array([0] * size, pa.int64()),
                pa.array([b"%d" % i for i in range(s, s + size)], pa.binary()),
                values.slice(s, size),
            ],
            names=["topic", "partition", "offset", "timestamp", "key", "value"],
        )
        for s in range(0, n, size)
    ]
    task = started(tmp_path)
    began = time.perf_counter()
    task.open([(TOPIC, 0)])
    for b in batches:
        task.write(b)
    task.pre_commit({(TOPIC, 0): n}, closing=True)
    rate = n / (time.perf_counter() - began)
    print(f"parquet-sink: {rate / 1e6:.2f} M records/s")
    assert len(offsets_in(tmp_path)) == n
    assert rate > 300_000  # loose floor for a loaded CI machine; the figure is printed
