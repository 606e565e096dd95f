"""`delta-sink`: the plugin and its task. Tasks write their range as Parquet data files under
the table's location as they read it, every `delta.max.records.per.file` records (so a range's
memory is bounded by that many, not by the range), and the rest at their closing pre-commit;
they report the files (`committable`) and the driver commits every range's files and offsets
in one Delta commit (`TableSinkConnector`). Until then no file is in the table: a task killed
half way leaves files no commit references. docs/connectors.md#delta-sink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    SinkTask,
    TableSinkConnector,
    TaskConfig,
    TopicPartition,
    Written,
    plain_task_config,
)
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.delta.config import CONFIG_DEF, DeltaSinkSettings, read_settings
from reconciler.connectors.errant import reporter_for

if TYPE_CHECKING:
    import pyarrow as pa

    from reconciler.connectors.delta.files import DataFile


class DeltaSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = DeltaSinkSettings.parse(task_config)
        self.key_converter = converter(task_config, "key")
        self.value_converter = converter(task_config, "value")
        self.errant = reporter_for(self, task_config)
        self.buffer: list[pa.RecordBatch] = []
        self.buffered = 0
        self.files: list[DataFile] = []
        self.schema: pa.Schema | None = None  # the written files' schemas unified (a later one may be wider)
        self.result: str | None = None

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}  # the table's offsets are read by the driver (`table_offsets`)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.buffer.append(batch)
            self.buffered += batch.num_rows
        while self.buffered >= self.settings.max_records_per_file:
            self._flush(self.settings.max_records_per_file)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        """At the batch's end: the rest of the records as data files (not yet in the table), and
        every file of the range reported."""
        if closing:
            from reconciler.connectors.delta import files

            self._flush(self.buffered)
            self.result = files.committable(self.files, self.schema) if self.files and self.schema else None
        return dict(offsets)

    def _flush(self, count: int) -> None:
        """The buffer's first `count` records written as data files (one per table partition)."""
        import pyarrow as pa

        from reconciler.connectors.delta import files

        if not count:
            return
        buffered = pa.Table.from_batches(self.buffer)  # no copy: the batches' own buffers
        head, rest = buffered.slice(0, count), buffered.slice(count)
        self.buffer, self.buffered = rest.to_batches(), rest.num_rows
        rows = files.to_rows(head, self.key_converter, self.value_converter, self.errant)
        if rows.num_rows:  # none: every record failed and was left out (`errors.tolerance=all`)
            self.schema = rows.schema if self.schema is None else files.unified([self.schema, rows.schema])
            self.files += files.write_files(rows, self.settings, lambda: files.filesystem(self.settings))

    def committable(self) -> str | None:
        return self.result


class DeltaSinkConnector(TableSinkConnector):
    config_def = CONFIG_DEF
    task_class = DeltaSinkTask
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return read_settings(config)[1]  # the converters' keys are checked by the framework (`converters`)

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """Identical configs: the runtime assigns Kafka partitions to tasks, as Connect does."""
        DeltaSinkSettings.parse(config)
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def table_offsets(self, config: ConnectorConfig, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        from reconciler.connectors.delta import table

        return table.table_offsets(DeltaSinkSettings.parse(config), _name(config), partitions)

    def commit(self, config: ConnectorConfig, written: Sequence[Written]) -> None:
        from reconciler.connectors.delta import table

        table.commit(DeltaSinkSettings.parse(config), _name(config), written)

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> bool:
        """KIP-875: the table's offsets move with the group's (a commit of txn actions only); the
        rows already committed stay in the table."""
        from reconciler.connectors.delta import table

        table.set_offsets(DeltaSinkSettings.parse(config), _name(config), offsets)
        return True


def _name(config: ConnectorConfig) -> str:
    return str(config.get("name") or "delta-sink")
