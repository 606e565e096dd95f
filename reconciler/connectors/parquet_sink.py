"""`parquet-sink`: topics → a Parquet dataset, exactly once across crashes.

Layout (Hive-style, readable by Spark, pyarrow.dataset, DuckDB…):

    <path>/topic=<t>/partition=<p>/<t>+<p>+<first offset:020d>-<last offset:020d>.parquet

Each file holds the records of one Kafka partition with offsets first…last (inclusive), in
offset order, with columns `offset` (int64), `timestamp` (timestamp[ms, UTC]), `key` and
`value` (binary, as produced). `topic` and `partition` are not repeated inside the files:
readers take them from the directory names (Spark refuses a column that is both).

Config: `topics` (comma-separated), `path` (the dataset directory, created if missing),
`flush.records` (write a file once a partition has buffered at least this many rows; default
500,000; `pre_commit(closing=True)` writes whatever is buffered), `compression` (snappy).

Exactly once: a file is written under a dot-prefixed temporary name (ignored by readers),
fsynced and renamed into place, so it exists whole or not at all. The files are the truth:
`open()` reports the offset after the highest file, `write()` drops records whose offsets a
file already holds (re-delivery after a crash before the group commit), and `pre_commit`
only returns offsets whose records are in files. Leftover temporary files of a crashed
writer are deleted by `open()` (a partition has one writer at a time).

Rewinds (KIP-875 alter/reset): `alter_offsets` moves files holding offsets at or after the
new offset into `<path>/_superseded/…` (ignored by readers: leading `_`), cutting a file that
straddles the new offset into the part before it, so the re-delivered range is written again
instead of being skipped as already held. It returns True: the connector confirmed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    ConnectorError,
    OffsetsRefused,
    SinkConnector,
    SinkTask,
    TaskConfig,
    TopicPartition,
    plain_task_config,
    valid_or_raise,
)
from reconciler.connectors.configdef import ConfigDef, Type

if TYPE_CHECKING:
    import pyarrow as pa

DEFAULT_FLUSH_RECORDS = 500_000
COMPRESSIONS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")
SUPERSEDED_DIR = "_superseded"
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")
_FILE_NAME = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<start>\d{20})-(?P<end>\d{20})\.parquet$")
_TEMP_SUFFIX = ".tmp"

OffsetRange = tuple[int, int]  # first and last offset held by one file, inclusive

CONFIG_DEF = (
    ConfigDef()
    # Connect's own `topics` (SinkConnectorConfig), required here: the sink takes no `topics.regex`.
    .define("topics", Type.LIST, "Topics to archive, comma-separated.")
    .define("path", Type.STRING, "Dataset directory (created if missing).")
    .define("flush.records", Type.INT, "Write a file once a partition has buffered this many rows.",
            default=DEFAULT_FLUSH_RECORDS, minimum=1)
    .define("compression", Type.STRING, "Parquet compression codec.", default="snappy", choices=COMPRESSIONS)
)


@dataclass(frozen=True)
class ParquetSinkSettings:
    topics: tuple[str, ...]
    path: str
    flush_records: int
    compression: str

    @classmethod
    def read(cls, config: ConnectorConfig) -> tuple[ParquetSinkSettings, list[ConfigProblem]]:
        parsed = CONFIG_DEF.parse(config)
        topics = tuple(parsed.strings("topics"))
        settings = cls(
            topics=topics,
            path=parsed.string("path"),
            flush_records=parsed.integer("flush.records"),
            compression=parsed.string("compression"),
        )
        problems = list(parsed.problems)
        bad = [t for t in topics if not _TOPIC_NAME.match(t)]
        if bad:
            problems.append(ConfigProblem("topics", f"invalid topic name(s): {', '.join(bad)}"))
        elif not topics and not any(p.key == "topics" for p in problems):
            problems.append(ConfigProblem("topics", "names no topic"))
        return settings, problems

    @classmethod
    def parse(cls, config: ConnectorConfig) -> ParquetSinkSettings:
        return valid_or_raise(cls.read(config))


# --- dataset layout -------------------------------------------------------------------------


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    return root / f"topic={topic}" / f"partition={partition}"


def file_name(topic: str, partition: int, offsets: OffsetRange) -> str:
    return f"{topic}+{partition}+{offsets[0]:020d}-{offsets[1]:020d}.parquet"


def held_ranges(directory: Path, topic: str, partition: int) -> list[OffsetRange]:
    """The offset ranges of the finished files of one partition, sorted."""
    if not directory.is_dir():
        return []
    ranges = []
    for entry in os.scandir(directory):
        match = _FILE_NAME.match(entry.name)
        if match and match["topic"] == topic and int(match["partition"]) == partition:
            ranges.append((int(match["start"]), int(match["end"])))
    return sorted(ranges)


def remove_temp_files(directory: Path) -> None:
    """Delete what a writer that crashed between writing and renaming left behind."""
    if directory.is_dir():
        for entry in os.scandir(directory):
            if entry.name.startswith(".") and entry.name.endswith(_TEMP_SUFFIX):
                os.unlink(entry.path)


def write_atomically(table: pa.Table, directory: Path, name: str, compression: str) -> None:
    """Write `table` as `directory/name`: whole or not at all, durable once this returns."""
    import pyarrow.parquet as pq

    _make_dirs(directory)
    temp = directory / f".{name}{_TEMP_SUFFIX}"
    try:
        pq.write_table(table, temp, compression=None if compression == "none" else compression)
        _fsync(temp)
        os.replace(temp, directory / name)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    _fsync(directory)


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(directory: Path) -> None:
    """mkdir -p that also makes the new directory entries durable."""
    if directory.is_dir():
        return
    _make_dirs(directory.parent)
    directory.mkdir(exist_ok=True)
    _fsync(directory.parent)


def file_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
        ]
    )


# --- the task -------------------------------------------------------------------------------


@dataclass
class _PartitionState:
    """What one task knows about one Kafka partition: files on disk and rows not yet in one."""

    directory: Path
    held: list[OffsetRange]
    buffer: list[pa.RecordBatch] = field(default_factory=list)
    buffered_rows: int = 0
    first_buffered: int = -1
    last_buffered: int = -1

    @property
    def last_held(self) -> int:
        return max((end for _, end in self.held), default=-1)


class ParquetSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = ParquetSinkSettings.parse(task_config)
        self.root = Path(self.settings.path)
        self.partitions: dict[TopicPartition, _PartitionState] = {}

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        held = {}
        for tp in partitions:
            state = self._open_one(tp)
            if state.held:
                held[tp] = state.last_held + 1
        return held

    def _open_one(self, tp: TopicPartition) -> _PartitionState:
        directory = partition_dir(self.root, *tp)
        remove_temp_files(directory)
        state = _PartitionState(directory, held_ranges(directory, *tp))
        self.partitions[tp] = state
        return state

    def write(self, batch: pa.RecordBatch) -> None:
        for tp, part in _split_by_partition(batch):
            state = self.partitions.get(tp) or self._open_one(tp)
            rows = _new_rows(part, state)
            if rows.num_rows:
                self._buffer(state, rows)
            if state.buffered_rows >= self.settings.flush_records:
                self._flush(tp, state)

    def pre_commit(
        self, offsets: Mapping[TopicPartition, int], closing: bool
    ) -> dict[TopicPartition, int]:
        if closing:
            for tp, state in self.partitions.items():
                self._flush(tp, state)
        return {tp: self._safe_offset(tp, offset) for tp, offset in offsets.items()}

    def _safe_offset(self, tp: TopicPartition, offset: int) -> int:
        """Everything below `offset` was written or held already, except what is buffered."""
        state = self.partitions.get(tp)
        if state is None or not state.buffered_rows:
            return offset
        return min(offset, state.first_buffered)

    def stop(self) -> None:
        self.partitions = {}

    def _buffer(self, state: _PartitionState, rows: pa.RecordBatch) -> None:
        import pyarrow.compute as pc

        bounds = pc.min_max(rows.column("offset")).as_py()
        if not state.buffer:
            state.first_buffered = bounds["min"]
        state.last_buffered = bounds["max"]
        state.buffer.append(rows)
        state.buffered_rows += rows.num_rows

    def _flush(self, tp: TopicPartition, state: _PartitionState) -> None:
        import pyarrow as pa

        if not state.buffer:
            return
        offsets = (state.first_buffered, state.last_buffered)
        table = pa.Table.from_batches(state.buffer, schema=file_schema())
        write_atomically(table, state.directory, file_name(*tp, offsets), self.settings.compression)
        state.held.append(offsets)
        state.buffer, state.buffered_rows = [], 0
        state.first_buffered = state.last_buffered = -1


def _split_by_partition(batch: pa.RecordBatch) -> list[tuple[TopicPartition, pa.RecordBatch]]:
    """The batch's rows per (topic, partition); a batch usually holds just one."""
    import pyarrow.compute as pc

    if batch.num_rows == 0:
        return []
    topics = pc.unique(batch.column("topic")).to_pylist()
    numbers = pc.unique(batch.column("partition")).to_pylist()
    if len(topics) == 1 and len(numbers) == 1:
        return [((topics[0], numbers[0]), batch)]
    parts = []
    for topic in topics:
        for number in numbers:
            mask = pc.and_(
                pc.equal(batch.column("topic"), topic), pc.equal(batch.column("partition"), number)
            )
            part = batch.filter(mask)
            if part.num_rows:
                parts.append(((topic, number), part))
    return parts


def _new_rows(part: pa.RecordBatch, state: _PartitionState) -> pa.RecordBatch:
    """The rows not already in a file nor in the buffer, in the files' schema."""
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = part.column("offset")
    bounds = pc.min_max(offsets).as_py()
    low, high = bounds["min"], bounds["max"]
    keep = pc.greater(offsets, state.last_buffered) if low <= state.last_buffered else None
    if low <= state.last_held:
        for start, end in state.held:
            if start <= high and end >= low:
                outside = pc.or_(pc.less(offsets, start), pc.greater(offsets, end))
                keep = outside if keep is None else pc.and_(keep, outside)
    if keep is not None:
        part = part.filter(keep)
    schema = file_schema()
    columns = [part.column(f.name).cast(f.type) for f in schema]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


# --- the connector --------------------------------------------------------------------------


class ParquetSinkConnector(SinkConnector):
    config_def = CONFIG_DEF
    task_class = ParquetSinkTask

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return ParquetSinkSettings.read(config)[1]

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """Identical configs: the runtime assigns Kafka partitions to tasks, as Connect does."""
        ParquetSinkSettings.parse(config)
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def alter_offsets(
        self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]
    ) -> bool:
        """Move files at or after each new offset aside, so that range is written again.

        Safe to repeat after a crash: a cut file is written (atomically) before the original
        is moved, and a second run finds the same files to cut and move.
        """
        settings = ParquetSinkSettings.parse(config)
        root = Path(settings.path)
        for (topic, partition), offset in offsets.items():
            if offset is not None and offset < 0:
                raise OffsetsRefused(f"offset {offset} for {topic}-{partition} is negative")
            rewind_partition(root, topic, partition, offset, settings.compression)
        return True


def rewind_partition(
    root: Path, topic: str, partition: int, offset: int | None, compression: str
) -> None:
    """Make the files of one partition hold only offsets below `offset` (None: nothing)."""
    directory = partition_dir(root, topic, partition)
    remove_temp_files(directory)
    for start, end in held_ranges(directory, topic, partition):
        if offset is not None and end < offset:
            continue
        name = file_name(topic, partition, (start, end))
        if offset is not None and start < offset:
            _write_head(directory, name, topic, partition, offset, compression)
        _supersede(root, directory, name)


def _write_head(
    directory: Path, name: str, topic: str, partition: int, offset: int, compression: str
) -> None:
    """Write the part of file `name` below `offset` as its own file."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(directory / name)
    except OSError as exc:
        raise ConnectorError(f"cannot read {directory / name} to cut it at {offset}: {exc}") from exc
    head = table.filter(pc.less(table.column("offset"), offset))
    last = pc.max(head.column("offset")).as_py()
    start = pc.min(head.column("offset")).as_py()
    write_atomically(head, directory, file_name(topic, partition, (start, last)), compression)


def _supersede(root: Path, directory: Path, name: str) -> None:
    """Move a file out of the dataset, keeping it (and every earlier version) for inspection."""
    target_dir = root / SUPERSEDED_DIR / directory.relative_to(root)
    _make_dirs(target_dir)
    target, n = target_dir / name, 0
    while target.exists():
        n += 1
        target = target_dir / name.replace(".parquet", f".{n}.parquet")
    os.replace(directory / name, target)
    _fsync(target_dir)
    _fsync(directory)
