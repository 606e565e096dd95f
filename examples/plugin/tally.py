"""A complete source and a complete sink plugin, the example of docs/plugins.md.

`tally:CounterSource` produces the numbers 0 … count-1 to a topic, one record each; the work is
cut into a fixed number of stripes (stripe s holds the numbers n with n % stripes == s), so its
source partitions stay the same whatever `tasksMax` becomes. `tally:LinesSink` writes each
record's value as a line of text, in files `<path>/<topic>-<partition>/<first>-<last>.txt`
named by the offsets they hold, so the files themselves say what is durable: exactly once.

Named `module:Class` in a manifest, this module must be importable where `reconciler` runs
(`PYTHONPATH`, or a package you install); the driver ships it to Spark's executors.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.connectors.api import (
    ConfigDef,
    ConnectorConfig,
    ConnectorError,
    OffsetsRefused,
    PartitionKey,
    SinkConnector,
    SinkTask,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    TaskConfig,
    TopicPartition,
    Type,
    partition_from_key,
    partition_key,
    share_configs,
    task_share,
    topic_names,
    valid_or_raise,
)

if TYPE_CHECKING:
    import pyarrow as pa

# --- the source -----------------------------------------------------------------------------


class CounterTask(SourceTask):
    """Produces its stripes' numbers; where it is, is the committed offsets alone."""

    def __init__(self, task_config: Mapping[str, str]) -> None:
        super().__init__(task_config)
        settings = valid_or_raise(CounterSource.config_def.parse(task_config).checked())
        self.topic = settings.string("topic")
        self.count = settings.integer("count")
        self.stripes = settings.integer("stripes")
        index, tasks = task_share(task_config)
        self.mine = [s for s in range(self.stripes) if s % tasks == index]

    def poll_batch(self, committed: Mapping[PartitionKey, SourceOffset], max_records: int) -> SourceBatch:
        # The answer depends on `committed` only: after a crash the runtime aborts the
        # transaction and asks again with the same offsets, expecting the same records.
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        offsets: dict[PartitionKey, SourceOffset] = {}
        for stripe in self.mine:
            key = partition_key({"stripe": stripe})
            start = self._next(committed.get(key))
            numbers = range(stripe + start * self.stripes, self.count, self.stripes)[: max_records - len(values)]
            if not numbers:
                continue
            keys += [str(n).encode() for n in numbers]
            values += [str(n).encode() for n in numbers]
            offsets[key] = {"next": start + len(numbers)}  # the stripe's position after this batch
        return SourceBatch([self.topic] * len(values), keys, values, offsets)

    @staticmethod
    def _next(offset: SourceOffset | None) -> int:
        if offset is None:
            return 0  # never committed: from the start
        position = offset.get("next")
        if not isinstance(position, int) or position < 0:
            # A ConnectorError fails the task (FAILED, this trace in its status); nothing is written.
            raise ConnectorError(f"committed offset {dict(offset)} has no 'next' >= 0")
        return position


class CounterSource(SourceConnector):
    """The numbers 0 … count-1, one record each, key and value the number as text."""

    version = "1.0.0"
    task_class = CounterTask
    config_def = (
        ConfigDef()
        .define("topic", Type.STRING, "Topic to write to.", validator=topic_names)
        .define("count", Type.INT, "Numbers over the connector's life.", default=1000, minimum=0)
        .define("stripes", Type.INT, "Source partitions; fixed for the connector's life.", default=4, minimum=1)
    )

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        stripes = valid_or_raise(self.config_def.parse(config).checked()).integer("stripes")
        return share_configs(config, min(max_tasks, stripes))  # a task without a stripe would idle

    def validate_offsets(self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]) -> None:
        stripes = valid_or_raise(self.config_def.parse(config).checked()).integer("stripes")
        for key, offset in offsets.items():
            partition = partition_from_key(key)
            stripe = partition.get("stripe")
            if set(partition) != {"stripe"} or not isinstance(stripe, int) or not 0 <= stripe < stripes:
                raise OffsetsRefused(f"partition {partition}: expected {{stripe: S}}, 0 <= S < {stripes}")
            position = None if offset is None else offset.get("next")
            if offset is not None and (not isinstance(position, int) or position < 0):
                raise OffsetsRefused(f"offset {dict(offset)}: expected {{next: N}}, N >= 0")

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]) -> bool:
        return True  # validated above, and nothing outside Kafka to change


# --- the sink -------------------------------------------------------------------------------

FILE_NAME = re.compile(r"(?P<first>\d+)-(?P<last>\d+)\.txt")


class LinesTask(SinkTask):
    """Buffers values and writes them as one file per flush, named by the offsets it holds."""

    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.root = Path(valid_or_raise(LinesSink.config_def.parse(task_config).checked()).string("path"))
        self.held: dict[TopicPartition, int] = {}  # per partition: the offset after what the files hold
        self.lines: dict[TopicPartition, list[tuple[int, str]]] = {}

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        # What the files hold wins over the group's committed offset: a crash after a file was
        # written and before the group was committed re-delivers nothing twice.
        for tp in partitions:
            ends = [int(m["last"]) + 1 for f in self._dir(tp).glob("*.txt") if (m := FILE_NAME.fullmatch(f.name))]
            if ends:
                self.held[tp] = max(ends)
            self.lines[tp] = []
        return dict(self.held)

    def write(self, batch: pa.RecordBatch) -> None:
        rows = zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                   batch.column("offset").to_pylist(), batch.column("value").to_pylist(), strict=True)
        for topic, partition, offset, value in rows:
            tp = (topic, partition)
            if offset < self.held.get(tp, 0):
                continue  # already in a file: re-delivered after a crash
            if value is None or b"\n" in value:
                # Fails the task: its status is FAILED with this message, nothing of the batch is
                # committed, and the same records come again after a restart.
                raise ConnectorError(f"{topic}-{partition}@{offset}: a line needs a value without a newline")
            self.lines.setdefault(tp, []).append((offset, value.decode("utf-8", "replace")))

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        # `offsets` is the runtime's position; only what is in files may be committed. This task
        # flushes only when closing (the runtime closes every task at the end of its batch); a
        # task that flushed earlier would return what its files hold so far.
        if closing:
            for tp, lines in self.lines.items():
                if lines:
                    self._flush(tp, lines)
                    self.lines[tp] = []
        return {tp: self.held[tp] for tp in offsets if tp in self.held}

    def _flush(self, tp: TopicPartition, lines: list[tuple[int, str]]) -> None:
        first, last = lines[0][0], lines[-1][0]
        directory = self._dir(tp)
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{first}-{last}.tmp"
        temporary.write_text("".join(f"{text}\n" for _, text in lines), encoding="utf-8")
        os.replace(temporary, directory / f"{first}-{last}.txt")  # atomic: a file is whole or absent
        self.held[tp] = last + 1

    def _dir(self, tp: TopicPartition) -> Path:
        return self.root / f"{tp[0]}-{tp[1]}"


class LinesSink(SinkConnector):
    """Each record's value as a line of text, one file per topic-partition and batch."""

    version = "1.0.0"
    task_class = LinesTask
    config_def = ConfigDef().define("path", Type.STRING, "Directory to write the files under.")

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)  # the runtime gives each task its partitions

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> bool:
        # The files decide where a partition resumes (`open`): an offset below what they hold
        # would be overridden by them, so refuse it rather than pretend.
        for (topic, partition), offset in offsets.items():
            held = [int(m["last"]) + 1 for f in (Path(str(config.get("path"))) / f"{topic}-{partition}").glob("*.txt")
                    if (m := FILE_NAME.fullmatch(f.name))]
            if held and (offset is None or offset < max(held)):
                raise OffsetsRefused(f"{topic}-{partition}: files hold offsets below {max(held)}; remove them first")
        return True
