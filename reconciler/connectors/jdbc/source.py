"""The `jdbc-source` plugin: PostgreSQL tables or a query → topics, config-compatible with
Confluent's JDBC source connector, its offsets in Confluent's format (`source_offsets`).

`task_configs` lists the database's tables (as Confluent's table monitor does) and spreads
them over the tasks in contiguous groups (`ConnectorUtils.groupPartitions`); a query is one
task. Offsets requests are checked against Confluent's shapes before anything is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    OffsetsRefused,
    PartitionKey,
    SourceConnector,
    SourceOffset,
    TaskConfig,
    partition_from_key,
    plain_task_config,
)
from reconciler.connectors.jdbc.connection import Failing, connect
from reconciler.connectors.jdbc.source_config import (
    BULK,
    CONFIG_DEF,
    INCREMENTING,
    TABLES,
    TABLES_FETCHED,
    TIMESTAMP,
    JdbcSourceSettings,
)
from reconciler.connectors.jdbc.source_offsets import INCREMENTING as INCREMENTING_KEY
from reconciler.connectors.jdbc.source_offsets import TIMESTAMP as TIMESTAMP_KEY
from reconciler.connectors.jdbc.source_offsets import check_offset, check_partition
from reconciler.connectors.jdbc.source_tables import group_tables, list_tables, render_tables, select_tables
from reconciler.connectors.jdbc.source_task import JdbcSourceTask


class JdbcSourceConnector(SourceConnector):
    config_def = CONFIG_DEF
    task_class = JdbcSourceTask
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return JdbcSourceSettings.read(config)[1]

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        settings = JdbcSourceSettings.parse(config)
        if settings.query:
            return [plain_task_config(config, **{TABLES: "", TABLES_FETCHED: "true"})]
        with connect(settings.target) as connection, Failing(settings.target, "the tables", "list"):
            tables = select_tables(list_tables(connection, settings), settings)
        if not tables:
            return [plain_task_config(config, **{TABLES: "", TABLES_FETCHED: "true"})]
        return [plain_task_config(config, **{TABLES: render_tables(group), TABLES_FETCHED: "true"})
                for group in group_tables(tables, max(1, max_tasks))]

    def validate_offsets(self, config: ConnectorConfig,
                         offsets: Mapping[PartitionKey, SourceOffset | None]) -> None:
        """Partitions and offsets as Confluent's source writes them and its `fromMap` reads them;
        the offset must carry what the mode reads (`incrementing`, `timestamp`, or both)."""
        settings = JdbcSourceSettings.parse(config)
        for key, offset in offsets.items():
            if offset is None:
                continue
            check_partition(partition_from_key(key), bool(settings.query))
            if settings.mode == BULK:
                raise OffsetsRefused("mode=bulk reads whole tables and keeps no offset")
            check_offset(offset)
            needed = {INCREMENTING: [INCREMENTING_KEY], TIMESTAMP: [TIMESTAMP_KEY]}.get(
                settings.mode, [TIMESTAMP_KEY, INCREMENTING_KEY])
            missing = [k for k in needed if offset.get(k) is None]
            if missing:
                raise OffsetsRefused(f"mode={settings.mode} reads the offset's {' and '.join(needed)}; "
                                     f"{', '.join(missing)} is missing")

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]) -> bool:
        """Nothing outside Kafka holds them: the tasks read the offsets topic (Confluent's
        connector does not override alterOffsets; the request is applied as is)."""
        return True
