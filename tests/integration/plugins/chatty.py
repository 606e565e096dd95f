"""Connectors that log (`chatty:ChattySource`, `chatty:ChattySink`), for the test of what their
log records become (tests/integration/runtime/test_task_logs_run.py). Each task logs at INFO and, with
its whole config (a password in it), at WARNING; the source's `task_configs` at INFO."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.connectors.api import (
    ConnectorConfig,
    PartitionKey,
    SinkConnector,
    SinkTask,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    TaskConfig,
    TopicPartition,
    share_configs,
)

LOG = logging.getLogger("chatty")


class ChattySourceTask(SourceTask):
    def poll_batch(self, committed: Mapping[PartitionKey, SourceOffset], max_records: int) -> SourceBatch:
        LOG.info("source polled")
        LOG.warning("source config: %s", self.task_config)
        return SourceBatch.empty()


class ChattySinkTask(SinkTask):
    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}

    def write(self, batch: Any) -> None:
        LOG.info("sink wrote %d records", batch.num_rows)
        LOG.warning("sink config: %s", self.task_config)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        return dict(offsets)


class ChattySource(SourceConnector):
    task_class = ChattySourceTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        LOG.info("source task configs")  # on the driver
        return share_configs(config, max_tasks)


class ChattySink(SinkConnector):
    task_class = ChattySinkTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)
