"""Connectors that fail on demand, for tests and demos of FAILED statuses and KIP-745 restarts.

`reconciler.connectors.faulty:FaultySource` behaves like `datagen` and
`reconciler.connectors.faulty:FaultySink` like `parquet-sink` (same config keys, same data),
except that they fail while a marker file exists. Deleting the file "fixes" them, so a test or
a demo can show a failure, a fix, and a restart that brings the instance back:

- `fail.connector.if.exists=<path>`: starting the Connector raises (it reports FAILED with the
  Python traceback, and runs no task);
- `fail.tasks.if.exists=<path>`: tasks raise when they start (FAILED with the traceback);
- `fail.task.ids=0,2`: which task ids fail (default: all of them);
- `fail.stop.if.exists=<path>`: the Connector's `stop()` raises (it is stopped or deleted all
  the same; pausing it fails it, as in Java);
- `stop.log=<path>`: every `stop()` call appends a line to this file (tests count them).

Referenced by `module:Class` path only: not registered as an entry point, so users never see
them among the built-ins.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from reconciler.connectors.api import (
    TASK_INDEX,
    ConfigProblem,
    ConnectorConfig,
    PartitionKey,
    SourceBatch,
    SourceOffset,
    TaskConfig,
    plain_task_config,
)
from reconciler.connectors.configdef import ConfigDef, Type
from reconciler.connectors.datagen import DatagenConnector, DatagenTask
from reconciler.connectors.parquet_sink import ParquetSinkConnector, ParquetSinkTask

FAIL_CONNECTOR = "fail.connector.if.exists"
FAIL_TASKS = "fail.tasks.if.exists"
FAIL_TASK_IDS = "fail.task.ids"
FAIL_STOP = "fail.stop.if.exists"
STOP_LOG = "stop.log"




def _with_failure_keys(base: ConfigDef) -> ConfigDef:
    return (
        base.define(FAIL_CONNECTOR, Type.STRING, "Starting the connector fails while this file exists.", default=None)
        .define(FAIL_TASKS, Type.STRING, "Tasks fail when they start while this file exists.", default=None)
        .define(FAIL_TASK_IDS, Type.LIST, "Which task ids fail (default: all).", default=[])
        .define(FAIL_STOP, Type.STRING, "The connector's stop() fails while this file exists.", default=None)
        .define(STOP_LOG, Type.STRING, "Every stop() call appends a line to this file.", default=None)
    )


class InjectedFailure(RuntimeError):
    """The failure a faulty connector raises on purpose."""


def _marker(config: Mapping[str, str | None], key: str) -> Path | None:
    value = (config.get(key) or "").strip()
    return Path(value) if value else None


def _fail_if_marked(config: Mapping[str, str | None], key: str, what: str) -> None:
    marker = _marker(config, key)
    if marker is not None and marker.exists():
        raise InjectedFailure(f"{what} fails on purpose: {marker} exists (delete it to fix)")


def _stop(config: ConnectorConfig) -> None:
    log = _marker(config, STOP_LOG)
    if log is not None:
        with log.open("a") as out:
            out.write("stop\n")
    _fail_if_marked(config, FAIL_STOP, "the connector's stop()")


def _task_fails(task_config: Mapping[str, str]) -> bool:
    ids = (task_config.get(FAIL_TASK_IDS) or "").strip()
    if not ids:
        return True
    return task_config.get(TASK_INDEX, "0") in {part.strip() for part in ids.split(",")}


def _check_task(task_config: Mapping[str, str]) -> None:
    if _task_fails(task_config):
        _fail_if_marked(task_config, FAIL_TASKS, f"task {task_config.get(TASK_INDEX, '0')}")


def _validate_ids(config: ConnectorConfig) -> list[ConfigProblem]:
    ids = [part.strip() for part in (config.get(FAIL_TASK_IDS) or "").split(",") if part.strip()]
    if all(part.isdigit() for part in ids):
        return []
    return [ConfigProblem(FAIL_TASK_IDS, f"must be comma-separated task ids; got {config.get(FAIL_TASK_IDS)!r}")]


class FaultySourceTask(DatagenTask):
    def poll_batch(self, committed: Mapping[PartitionKey, SourceOffset], max_records: int) -> SourceBatch:
        _check_task(self.task_config)
        return super().poll_batch(committed, max_records)


class FaultySource(DatagenConnector):
    """`datagen` that fails on demand."""

    task_class = FaultySourceTask
    config_def = _with_failure_keys(DatagenConnector.config_def or ConfigDef())

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return super().validate(config) + _validate_ids(config)

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        _fail_if_marked(config, FAIL_CONNECTOR, "the connector")
        return super().task_configs(config, max_tasks)

    def stop(self, config: ConnectorConfig) -> None:
        _stop(config)


class FaultySinkTask(ParquetSinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        _check_task(task_config)
        super().start(task_config)


class FaultySink(ParquetSinkConnector):
    """`parquet-sink` that fails on demand; task configs carry `task.index` to name the task."""

    task_class = FaultySinkTask
    config_def = _with_failure_keys(ParquetSinkConnector.config_def or ConfigDef())

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return super().validate(config) + _validate_ids(config)

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        _fail_if_marked(config, FAIL_CONNECTOR, "the connector")
        tasks = len(super().task_configs(config, max_tasks))
        return [plain_task_config(config, **{TASK_INDEX: str(i)}) for i in range(tasks)]

    def stop(self, config: ConnectorConfig) -> None:
        _stop(config)
