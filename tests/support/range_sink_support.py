"""The range-file sinks (file-sink as text and as JSON lines, parquet-sink) described alike, so one
test serves each: how to start one on a directory, name its files and read back the offsets a
reader of its output sees."""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds

from reconciler.connectors.api import SinkRecord, records_to_batch
from reconciler.connectors.file_sink import FileSinkConnector, FileSinkTask
from reconciler.connectors.parquet_sink import ParquetSinkConnector, ParquetSinkTask
from reconciler.connectors.range_files import OffsetRange, RangeFileSinkTask, file_name, partition_dir

TOPIC = "orders"


def local_dir(root: Path, topic: str, partition: int) -> Path:
    return root / partition_dir(topic, partition)


def files(root: Path, partition: int = 0, topic: str = TOPIC) -> list[str]:
    directory = local_dir(root, topic, partition)
    return sorted(os.listdir(directory)) if directory.is_dir() else []


def lines(root: Path, partition: int = 0, topic: str = TOPIC) -> list[bytes]:
    """Every line of the partition's finished files, in file-name (= offset) order."""
    directory = local_dir(root, topic, partition)
    out: list[bytes] = []
    for name in files(root, partition, topic):
        if not name.startswith("."):
            data = (directory / name).read_bytes()
            assert data.endswith(b"\n"), f"{name} does not end with a newline"
            out += data.split(b"\n")[:-1]
    return out


def dataset_rows(root: Path) -> list[tuple[str, int, int]]:
    """(topic, partition, offset) of every row a Parquet dataset reader sees, sorted."""
    table = ds.dataset(root, format="parquet", partitioning="hive").to_table()
    columns = (table.column(name).to_pylist() for name in ("topic", "partition", "offset"))
    return sorted(zip(*columns, strict=True))


def record(offset: int, value: bytes | None = None, partition: int = 0, topic: str = TOPIC) -> SinkRecord:
    value = b"v%d" % offset if value is None else value
    return SinkRecord(topic, partition, offset, b"k%d" % offset, value, 1_700_000_000_000 + offset)


def batch(offsets: Iterable[int], partition: int = 0, topic: str = TOPIC) -> pa.RecordBatch:
    return records_to_batch([record(o, partition=partition, topic=topic) for o in offsets])


def keyed(offsets: Iterable[int], topic: str = TOPIC) -> pa.RecordBatch:
    """Records of partition 0 whose key is the offset's digits (what the readers count)."""
    return records_to_batch([SinkRecord(topic, 0, o, b"%d" % o, b"v%d" % o, 1_700_000_000_000 + o) for o in offsets])


def parquet_task(config: dict[str, str]) -> ParquetSinkTask:
    task = ParquetSinkTask()
    task.start(ParquetSinkConnector().task_configs(config, 1)[0])
    return task


def zombie_race(config: dict[str, str]) -> ParquetSinkTask:
    """The zombie of two parquet-sink tasks on `config`'s store that both read offsets 0-99 of
    orders-0: the current one (zstd, so its file differs) has written and committed its file,
    the zombie not yet."""
    zombie, current = parquet_task(config), parquet_task({**config, "compression": "zstd"})
    assert zombie.open([(TOPIC, 0)]) == {} and current.open([(TOPIC, 0)]) == {}
    zombie.write(keyed(range(0, 100)))
    current.write(keyed(range(0, 100)))
    assert current.pre_commit({(TOPIC, 0): 100}, closing=True) == {(TOPIC, 0): 100}
    return zombie


def zombie_loses_the_race(zombie: ParquetSinkTask, listing: Callable[[], dict[str, Any]],
                          keys: Callable[[], Counter[bytes]]) -> None:
    """What `zombie_race`'s zombie does next, on any store: its write of the same name is refused,
    it re-lists and keeps the current file (`listing()` unchanged), and of what it reads next
    only 100-149 is new: the store's reader (`keys()`) counts each of 0-149 once."""
    first = listing()
    assert list(first) == [f"topic={TOPIC}/partition=0/{TOPIC}+0+{0:020d}-{99:020d}.parquet"]
    assert zombie.pre_commit({(TOPIC, 0): 100}, closing=True) == {(TOPIC, 0): 100}
    assert listing() == first
    assert zombie.partitions[(TOPIC, 0)].held == [(0, 99)]
    zombie.write(keyed(range(50, 150)))
    zombie.pre_commit({(TOPIC, 0): 150}, closing=True)
    assert keys() == Counter(b"%d" % o for o in range(150))


def big_batches(n: int, size: int, *, keys: bool) -> tuple[pa.Array, list[pa.RecordBatch]]:
    """`n` records of one partition with ~100-byte values, in batches of `size`: (values, batches)."""
    values = pa.array([b'{"id":%d,"payload":"%s"}' % (i, b"q" * (i % 90)) for i in range(n)], pa.binary())
    batches = [
        pa.RecordBatch.from_arrays(
            [
                pa.array([TOPIC] * size),
                pa.array([0] * size, pa.int32()),
                pa.array(range(s, s + size), pa.int64()),
                pa.array([0] * size, pa.int64()),
                pa.array([b"%d" % i for i in range(s, s + size)], pa.binary()) if keys else pa.nulls(size, pa.binary()),
                values.slice(s, size),
            ],
            names=["topic", "partition", "offset", "timestamp", "key", "value"],
        )
        for s in range(0, n, size)
    ]
    return values, batches


def records_per_second(task: RangeFileSinkTask[Any], batches: list[pa.RecordBatch]) -> float:
    """How fast `task` opens partition 0, writes `batches` and closes its files (records/s)."""
    began = time.perf_counter()
    task.open([(TOPIC, 0)])
    for each in batches:
        task.write(each)
    n: int = sum(each.num_rows for each in batches)
    task.pre_commit({(TOPIC, 0): n}, closing=True)
    return n / (time.perf_counter() - began)


def _text_offsets(root: Path, partition: int, topic: str) -> list[int]:
    return [int(line.removeprefix(b"v")) for line in lines(root, partition, topic)]


def _json_offsets(root: Path, partition: int, topic: str) -> list[int]:
    return [json.loads(line)["offset"] for line in lines(root, partition, topic)]


def _parquet_offsets(root: Path, partition: int, topic: str) -> list[int]:
    return [o for t, p, o in dataset_rows(root) if (t, p) == (topic, partition)]


@dataclass(frozen=True)
class RangeSink:
    """One range-file sink as the shared tests drive it."""

    name: str
    connector: type[FileSinkConnector] | type[ParquetSinkConnector]
    task: type[RangeFileSinkTask[Any]]
    suffix: str
    read_offsets: Callable[[Path, int, str], list[int]]
    keys: dict[str, str] = field(default_factory=dict)  # the keys that make this variant

    def config(self, root: Path, **overrides: str) -> dict[str, str]:
        return {"name": "archive", "topics": TOPIC, "path": str(root), **self.keys, **overrides}

    def started(self, root: Path, **overrides: str) -> RangeFileSinkTask[Any]:
        task = self.task()
        task.start(self.connector().task_configs(self.config(root, **overrides), 1)[0])
        return task

    def file(self, partition: int, offsets: OffsetRange, topic: str = TOPIC) -> str:
        return file_name(topic, partition, offsets, self.suffix)

    def offsets(self, root: Path, partition: int = 0, topic: str = TOPIC) -> list[int]:
        """The offsets a reader of the output sees, in file (= offset) order."""
        return self.read_offsets(root, partition, topic)

    def write_range(self, root: Path, start: int, end: int, flush: int = 100) -> None:
        task = self.started(root, **{"flush.records": str(flush)})
        task.open([(TOPIC, 0)])
        for first in range(start, end, flush):
            task.write(batch(range(first, min(end, first + flush))))
        task.pre_commit({(TOPIC, 0): end}, closing=True)


TEXT = RangeSink("file-sink text", FileSinkConnector, FileSinkTask, ".txt", _text_offsets)
JSON_LINES = RangeSink("file-sink json", FileSinkConnector, FileSinkTask, ".jsonl", _json_offsets, {"format": "json"})
PARQUET = RangeSink("parquet-sink", ParquetSinkConnector, ParquetSinkTask, ".parquet", _parquet_offsets)
SINKS = [TEXT, JSON_LINES, PARQUET]
