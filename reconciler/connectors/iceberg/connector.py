"""The `iceberg-sink` plugin: Apache Iceberg's Kafka Connect sink's config, run as a table sink
whose batch driver commits (`TableSinkConnector`): validation, task configs, the tables'
offsets before a batch, the commit after it, and KIP-875 requests written into the tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    TableSinkConnector,
    TaskConfig,
    TopicPartition,
    Written,
    plain_task_config,
)
from reconciler.connectors.iceberg import commit
from reconciler.connectors.iceberg.catalog import catalog_problems, catalog_properties
from reconciler.connectors.iceberg.config import CONFIG_DEF, IcebergSinkSettings
from reconciler.connectors.iceberg.task import IcebergSinkTask


class IcebergSinkConnector(TableSinkConnector):
    config_def = CONFIG_DEF
    task_class = IcebergSinkTask
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def task_imports(self, config: ConnectorConfig) -> Sequence[str]:
        """pyiceberg's tables, Arrow writing, our FileIO and the catalog type's module (SQL: SQLAlchemy)."""
        kind = catalog_properties(IcebergSinkSettings.read(config)[0].catalog)[0].get("type")
        own = (f"pyiceberg.catalog.{kind}",) if kind in ("sql", "rest") else ()
        return ("pyiceberg.catalog", *own, "pyiceberg.table", "pyiceberg.io.pyarrow",
                "reconciler.connectors.iceberg.fileio", "reconciler.connectors.converters.arrow")

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        settings, problems = IcebergSinkSettings.read(config)
        return problems + catalog_problems(settings.catalog)

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """Identical configs: the runtime assigns Kafka partitions to tasks, as Connect does."""
        IcebergSinkSettings.parse(config)
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def table_offsets(self, config: ConnectorConfig, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        settings = IcebergSinkSettings.parse(config)
        return commit.held_offsets(settings, _group(settings, config), partitions)

    def commit(self, config: ConnectorConfig, written: Sequence[Written]) -> None:
        settings = IcebergSinkSettings.parse(config)
        commit.commit(settings, _group(settings, config), written)

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> bool:
        """Move the offsets the tables hold too (a snapshot without data per table), so the next
        batch starts where the request says; the rows already committed stay."""
        settings = IcebergSinkSettings.parse(config)
        commit.rewind(settings, _group(settings, config), offsets)
        return True


def _group(settings: IcebergSinkSettings, config: ConnectorConfig) -> str:
    return settings.offsets_group(config)
