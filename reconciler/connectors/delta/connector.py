"""`delta-sink`: the plugin and its task. Tasks buffer a range, write it as Parquet data files
under the table's location at their closing pre-commit and report them (`committable`); the
driver commits every range's files and offsets in one Delta commit (`TableSinkConnector`).
docs/connectors.md#delta-sink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

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


class DeltaSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = DeltaSinkSettings.parse(task_config)
        self.key_converter = converter(task_config, "key")
        self.value_converter = converter(task_config, "value")
        self.errant = reporter_for(self, task_config)
        self.batches: list[pa.RecordBatch] = []
        self.result: str | None = None

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}  # the table's offsets are read by the driver (`table_offsets`)

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.batches.append(batch)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        """At the batch's end: the buffered records as data files (not yet in the table)."""
        if closing and self.batches:
            from reconciler.connectors.delta import files

            rows = files.to_rows(self._table(), self.key_converter, self.value_converter, self.errant)
            written = files.write_files(rows, self.settings, lambda: files.filesystem(self.settings))
            self.result = files.committable(written, rows.schema) if written else None
            self.batches = []
        return dict(offsets)

    def _table(self) -> Any:
        import pyarrow as pa

        return pa.Table.from_batches(self.batches)

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
