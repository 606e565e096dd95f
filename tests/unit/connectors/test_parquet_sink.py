"""parquet-sink alone on a real directory: what its files hold (read back with pyarrow), its
codecs, and how a rewind cuts a Parquet file. What it does as file-sink does is in
test_range_file_sinks.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from range_sink_support import PARQUET, TOPIC, big_batches, dataset_rows, files, local_dir, records_per_second

from reconciler.connectors.api import ConfigProblem, OffsetsRefused, SinkRecord, records_to_batch
from reconciler.connectors.parquet_sink import ParquetSinkConnector, file_name, rewind_partition
from reconciler.connectors.storage import open_store

config, started, write_range = PARQUET.config, PARQUET.started, PARQUET.write_range


def offsets_in(root: Path, partition: int = 0) -> list[int]:
    return PARQUET.offsets(root, partition)


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"compression": "lzo"}, [ConfigProblem("compression", "must be one of snappy, zstd, gzip, lz4, brotli, none; got 'lzo'")]),
        ({"topics": "a, b.c,d-e", "compression": "zstd", "flush.records": "10"}, []),
    ],
)
def test_validate_names_the_bad_key(tmp_path: Path, overrides: dict[str, str], expected: list[ConfigProblem]) -> None:
    assert ParquetSinkConnector().validate(config(tmp_path, **overrides)) == expected


# --- writing --------------------------------------------------------------------------------


def test_a_file_holds_each_records_offset_timestamp_key_and_value(tmp_path: Path) -> None:
    task = started(tmp_path)
    task.write(records_to_batch(
        [SinkRecord(TOPIC, 0, o, b"%d" % o, b'{"id":%d}' % o, 1_700_000_000_000 + o) for o in range(250)]))
    task.pre_commit({(TOPIC, 0): 250}, closing=True)
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 249))]
    table = pq.read_table(local_dir(tmp_path, TOPIC, 0) / files(tmp_path)[0])
    assert table.schema.names == ["offset", "timestamp", "key", "value"]
    assert table.schema.field("timestamp").type == pa.timestamp("ms", tz="UTC")
    assert table.column("offset").to_pylist() == list(range(250))
    assert table.column("key").to_pylist()[42] == b"42"
    assert table.column("value").to_pylist()[42] == b'{"id":42}'
    assert dataset_rows(tmp_path) == [(TOPIC, 0, o) for o in range(250)]


# --- rewinds (KIP-875 alter / reset) --------------------------------------------------------


def test_a_rewind_interrupted_after_the_cut_completes_when_repeated(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 200)
    directory = local_dir(tmp_path, TOPIC, 0)
    # Simulate a crash inside alter: the cut part exists but the original was not moved yet.
    original = pq.read_table(directory / file_name(TOPIC, 0, (100, 199)))
    pq.write_table(original.slice(0, 50), directory / file_name(TOPIC, 0, (100, 149)))
    ParquetSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 150})
    assert files(tmp_path) == [file_name(TOPIC, 0, (0, 99)), file_name(TOPIC, 0, (100, 149))]
    assert offsets_in(tmp_path) == list(range(150))


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
    n = 1_000_000
    _, batches = big_batches(n, 100_000, keys=True)
    rate = records_per_second(started(tmp_path), batches)
    print(f"parquet-sink: {rate / 1e6:.2f} M records/s")
    assert len(offsets_in(tmp_path)) == n
    assert rate > 300_000  # loose floor for a loaded CI machine; the figure is printed
