"""Offset-range files: the layout and the exactly-once writing that file-writing sinks share.

Files `<root>/topic=<t>/partition=<p>/<t>+<p>+<first>-<last><suffix>` in a `storage.Store`
(a disk or an object store), each written whole, once; the files are the truth (`open` resumes after the highest, `write` drops what they hold), and a
rewind moves files aside into `<root>/_superseded/`. `parquet-sink` and `file-sink` are built on
`RangeFileSinkSettings` (topics, path, flush.records), `RangeFileSinkTask` and
`RangeFileSinkConnector` (validate, task configs, rewinds). The rules:
docs/connectors.md#offset-range-files.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO, Generic, TypeVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    OffsetsRefused,
    SinkConnector,
    SinkTask,
    TaskConfig,
    TopicPartition,
    plain_task_config,
)
from reconciler.connectors.settings import ConnectorSettings
from reconciler.connectors.storage import Store, open_store

if TYPE_CHECKING:
    import pyarrow as pa

SUPERSEDED_DIR = "_superseded"
DEFAULT_FLUSH_RECORDS = 500_000
_FILE_NAME = re.compile(
    r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<start>\d{20})-(?P<end>\d{20})(?P<suffix>\.[A-Za-z0-9]+)$"
)

OffsetRange = tuple[int, int]  # first and last offset held by one file, inclusive
# Writes the part of a file below an offset as its own file: (store, directory, name, range, offset).
Cut = Callable[[Store, str, str, OffsetRange, int], None]

Chunk = TypeVar("Chunk")


@dataclass(frozen=True, kw_only=True)
class RangeFileSinkSettings(ConnectorSettings):
    """The keys every offset-range file sink reads (its subclass names the `config_def`)."""

    topics: tuple[str, ...]
    path: str
    flush_records: int

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """`topics` that names none (unless its value was reported already)."""
        if not self.topics and not any(p.key == "topics" for p in found):
            return [ConfigProblem("topics", "names no topic")]
        return []


Settings = TypeVar("Settings", bound=RangeFileSinkSettings)


# --- layout ---------------------------------------------------------------------------------


def partition_dir(topic: str, partition: int) -> str:
    """A partition's directory, relative to the dataset's root."""
    return f"topic={topic}/partition={partition}"


def file_name(topic: str, partition: int, offsets: OffsetRange, suffix: str) -> str:
    return f"{topic}+{partition}+{offsets[0]:020d}-{offsets[1]:020d}{suffix}"


def held_files(store: Store, directory: str, topic: str, partition: int, suffixes: Sequence[str]) -> dict[OffsetRange, str]:
    """The finished files of one partition (ending in one of `suffixes`) by their offset range."""
    found = {}
    for name in store.names(directory):
        match = _FILE_NAME.match(name)
        if (
            match
            and match["suffix"] in suffixes
            and match["topic"] == topic
            and int(match["partition"]) == partition
        ):
            found[(int(match["start"]), int(match["end"]))] = name
    return dict(sorted(found.items()))


def held_ranges(store: Store, directory: str, topic: str, partition: int, suffixes: Sequence[str]) -> list[OffsetRange]:
    """The offset ranges of the finished files of one partition, sorted."""
    return list(held_files(store, directory, topic, partition, suffixes))


# --- rewinds --------------------------------------------------------------------------------


def rewind_partition(
    store: Store, topic: str, partition: int, offset: int | None, suffixes: Sequence[str], cut: Cut
) -> None:
    """Make the files of one partition hold only offsets below `offset` (None: nothing).

    Safe to repeat after a crash: a cut file is written (whole) before the original is moved,
    and a second run finds the same files to cut and move.
    """
    directory = partition_dir(topic, partition)
    store.remove_temp_files(directory)
    for (start, end), name in held_files(store, directory, topic, partition, suffixes).items():
        if offset is not None and end < offset:
            continue
        if offset is not None and start < offset:
            cut(store, directory, name, (start, end), offset)
        supersede(store, directory, name)


def check_rewind(store: Store, tp: TopicPartition, offset: int | None, suffixes: Sequence[str], check: Cut) -> None:
    """Refuse a rewind that cannot be done, before any file moves: a negative offset, or a file
    to cut that `check` cannot read (it raises)."""
    if offset is None:
        return
    if offset < 0:
        raise OffsetsRefused(f"offset {offset} for {tp[0]}-{tp[1]} is negative")
    directory = partition_dir(*tp)
    for (start, end), name in held_files(store, directory, *tp, suffixes).items():
        if start < offset <= end:
            check(store, directory, name, (start, end), offset)


def supersede(store: Store, directory: str, name: str) -> None:
    """Move a file out of the dataset, keeping it (and every earlier version) for inspection.

    On an object store a move is a copy, then a delete: a crash between them leaves the file in
    both places, and the next run, finding a copy of the same size, only deletes the original.
    """
    target_dir = f"{SUPERSEDED_DIR}/{directory}"
    size = store.size(f"{directory}/{name}")
    stem, dot, suffix = name.rpartition(".")
    target, n = name, 0
    while (held := store.size(f"{target_dir}/{target}")) is not None:
        if store.location.object_store and held == size:
            store.delete(f"{directory}/{name}")
            return
        n += 1
        target = f"{stem}.{n}{dot}{suffix}"
    store.move(f"{directory}/{name}", f"{target_dir}/{target}")


# --- the task -------------------------------------------------------------------------------


@dataclass(kw_only=True)
class PartitionFiles(Generic[Chunk]):
    """What one task knows about one Kafka partition: files on disk and rows not yet in one."""

    directory: str  # relative to the dataset's root
    held: list[OffsetRange]
    buffer: list[Chunk] = field(default_factory=list)
    buffered_rows: int = 0
    first_buffered: int = -1
    last_buffered: int = -1

    @property
    def last_held(self) -> int:
        return max((end for _, end in self.held), default=-1)


class RangeFileSinkTask(SinkTask, Generic[Chunk]):
    """A sink task writing offset-range files into its store (call `configure` in `start`).

    A subclass turns new rows into a chunk of file content (`chunk`) and writes a file from
    the chunks buffered for one partition (`write_file`); everything that makes it exactly
    once is here.
    """

    store: Store
    flush_records: int
    suffix: str  # of the files this task writes
    suffixes: tuple[str, ...]  # of the files it counts as held (a format change keeps old ones)

    def configure(
        self, settings: RangeFileSinkSettings, task_config: Mapping[str, str], suffix: str, suffixes: Sequence[str] = ()
    ) -> None:
        """Write into the store at `settings.path` (its keys in `task_config`) files ending in `suffix`."""
        self.store, self.flush_records, self.suffix = open_store(settings.path, task_config), settings.flush_records, suffix
        self.suffixes = tuple(dict.fromkeys((suffix, *suffixes)))
        self.partitions: dict[TopicPartition, PartitionFiles[Chunk]] = {}

    @abstractmethod
    def chunk(self, rows: pa.RecordBatch) -> Chunk:
        """File content for `rows` (sink schema, one partition, offsets ascending, non-empty)."""

    @abstractmethod
    def write_file(self, out: BinaryIO, chunks: list[Chunk]) -> None:
        """Write one file's content to `out` from the chunks of consecutive rows, in order."""

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        held = {}
        for tp in partitions:
            state = self._open_one(tp)
            if state.held:
                held[tp] = state.last_held + 1
        return held

    def _open_one(self, tp: TopicPartition) -> PartitionFiles[Chunk]:
        directory = partition_dir(*tp)
        self.store.remove_temp_files(directory)
        held = held_ranges(self.store, directory, *tp, self.suffixes)
        state: PartitionFiles[Chunk] = PartitionFiles(directory=directory, held=held)
        self.partitions[tp] = state
        return state

    def write(self, batch: pa.RecordBatch) -> None:
        for tp, part in split_by_partition(batch):
            state = self.partitions.get(tp) or self._open_one(tp)
            rows = unheld_rows(part, state.held, state.last_held, state.last_buffered)
            if rows.num_rows:
                self._buffer(state, rows)
            if state.buffered_rows >= self.flush_records:
                self._flush(tp, state)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
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

    def _buffer(self, state: PartitionFiles[Chunk], rows: pa.RecordBatch) -> None:
        import pyarrow.compute as pc

        bounds = pc.min_max(rows.column("offset")).as_py()
        content = self.chunk(rows)
        if not state.buffer:
            state.first_buffered = bounds["min"]
        state.last_buffered = bounds["max"]
        state.buffer.append(content)
        state.buffered_rows += rows.num_rows

    def _flush(self, tp: TopicPartition, state: PartitionFiles[Chunk]) -> None:
        if not state.buffer:
            return
        offsets = (state.first_buffered, state.last_buffered)
        chunks = state.buffer
        name = file_name(*tp, offsets, self.suffix)
        if self.store.write_new(f"{state.directory}/{name}", lambda out: self.write_file(out, chunks)):
            state.held.append(offsets)
        else:
            # Another writer (a zombie of an earlier run, or a task given this partition since)
            # wrote this very range: its file stands, and the files are the truth again.
            state.held = held_ranges(self.store, state.directory, *tp, self.suffixes)
        state.buffer, state.buffered_rows = [], 0
        state.first_buffered = state.last_buffered = -1


def split_by_partition(batch: pa.RecordBatch) -> list[tuple[TopicPartition, pa.RecordBatch]]:
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
            mask = pc.and_(pc.equal(batch.column("topic"), topic), pc.equal(batch.column("partition"), number))
            part = batch.filter(mask)
            if part.num_rows:
                parts.append(((topic, number), part))
    return parts


def unheld_rows(
    part: pa.RecordBatch, held: Sequence[OffsetRange], last_held: int, last_buffered: int
) -> pa.RecordBatch:
    """The rows of one partition that are neither in a file nor in the buffer."""
    import pyarrow.compute as pc

    offsets = part.column("offset")
    bounds = pc.min_max(offsets).as_py()
    low, high = bounds["min"], bounds["max"]
    keep = pc.greater(offsets, last_buffered) if low <= last_buffered else None
    if low <= last_held:
        for start, end in held:
            if start <= high and end >= low:
                outside = pc.or_(pc.less(offsets, start), pc.greater(offsets, end))
                keep = outside if keep is None else pc.and_(keep, outside)
    return part if keep is None else part.filter(keep)


# --- the connector --------------------------------------------------------------------------


class RangeFileSinkConnector(SinkConnector, Generic[Settings]):
    """A sink connector whose task writes offset-range files: its settings (`settings_class`)
    are all it checks, its tasks' configs are its own, and a rewind cuts and moves files."""

    settings_class: type[Settings]
    suffixes: tuple[str, ...]  # of the files a rewind cuts and moves

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return self.settings_class.read(config)[1]

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """Identical configs: the runtime assigns Kafka partitions to tasks, as Connect does."""
        self.settings_class.parse(config)
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> bool:
        """Move files at or after each new offset aside, so that range is written again.

        Every partition is checked first, so a refused request moves no file: a file moved aside
        while the group's offsets stay where they were would leave its records out of the
        dataset for good. Safe to repeat after a crash (`rewind_partition`).
        """
        settings = self.settings_class.parse(config)
        store = open_store(settings.path, config)
        for tp, offset in offsets.items():
            check_rewind(store, tp, offset, self.suffixes, self.check_cut)
        for tp, offset in offsets.items():
            rewind_partition(store, *tp, offset, self.suffixes, self.cutter(settings, tp))
        return True

    @abstractmethod
    def check_cut(self, store: Store, directory: str, name: str, offsets: OffsetRange, at: int) -> None:
        """Raise (OffsetsRefused, ConnectorError) when file `name` cannot be cut at offset `at`."""

    @abstractmethod
    def cutter(self, settings: Settings, tp: TopicPartition) -> Cut:
        """How a file of partition `tp` is cut (see `Cut`)."""
