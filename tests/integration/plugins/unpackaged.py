"""A connector that lives outside the package, loaded by `module:Class` path (`unpackaged:PickySink`).

This directory is put on `sys.path` by tests/integration/conftest.py before the test
session's SparkSession starts; the test using it proves that Spark's Python workers can
import what the driver can (a local master gives its workers the driver's import path).

`PickySink` keeps nothing: it accepts records and reports them safe to commit, except in
the tasks listed in `fail.tasks` (comma-separated task indexes), whose `write` raises.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.connectors.api import (
    ConnectorConfig,
    ConnectorError,
    SinkConnector,
    SinkTask,
    TaskConfig,
    TopicPartition,
    share_configs,
    task_share,
)


class PickySinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        failing = {int(t) for t in task_config.get("fail.tasks", "").split(",") if t.strip()}
        self.index = task_share(task_config)[0]
        self.fails = self.index in failing

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}

    def write(self, batch: Any) -> None:
        if self.fails:
            raise ConnectorError(f"picky sink task {self.index} fails on purpose")

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        return dict(offsets)


class PickySink(SinkConnector):
    task_class = PickySinkTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)
