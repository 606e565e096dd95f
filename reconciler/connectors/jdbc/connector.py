"""The `jdbc-sink` plugin: validation, task configs, and offsets requests, which move the
offsets table (the truth the tasks resume from) as well as the group."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    SinkConnector,
    TaskConfig,
    TopicPartition,
    plain_task_config,
)
from reconciler.connectors.jdbc.config import CONFIG_DEF, JdbcSinkSettings
from reconciler.connectors.jdbc.task import JdbcSinkTask, alter_offsets_table


class JdbcSinkConnector(SinkConnector):
    config_def = CONFIG_DEF
    task_class = JdbcSinkTask
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return JdbcSinkSettings.read(config)[1]

    def task_imports(self, config: ConnectorConfig) -> Sequence[str]:
        return ("reconciler.connectors.jdbc.bulk",)  # the rows' COPY (pyarrow, psycopg)

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        """Identical configs: the runtime assigns Kafka partitions to tasks, as Connect does."""
        JdbcSinkSettings.parse(config)
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def alter_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> bool:
        """Write the new offsets into the offsets table too (None: remove the partition's row),
        in one transaction, so the tasks resume where the request says."""
        alter_offsets_table(JdbcSinkSettings.parse(config), offsets)
        return True
