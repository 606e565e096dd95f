"""Log records of connector tasks, in the Python workers that run them: written as the CLI
writes its own (`reconciler.logs`: text or JSON, at the level `-v` set), each tagged with its
connector and task (`[orders|task-0] `, as Connect tags them), the connector's secrets masked.

Without this a worker has no logging set up: Python drops its INFO records and prints a
WARNING's bare message, which in JSON mode reached the log pipeline as a warning of the Spark
JVM (`runtime.spark.jvm_output`).

The settings travel with each work item (`TaskLogging`), so executors on a cluster or behind a
Spark Connect server log as the driver asked, whatever their environment. A worker process is
reused for the next task: its handler is installed once, the tag is set per task.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from reconciler import masking
from reconciler.core.redact import secret_values
from reconciler.logs import ContextFilter, JsonFormatter, LogSettings, configured, connector_context, text_formatter


@dataclass(frozen=True)
class TaskLogging:
    """How a task logs: the CLI's format and level, and the values to mask in its records."""

    settings: LogSettings = LogSettings()
    secrets: frozenset[str] = frozenset()


def for_connector(configs: Sequence[Mapping[str, str | None]]) -> TaskLogging:
    """On the driver: the CLI's settings, and the secrets of a connector's configs (its own and
    its tasks'). Those the key names reveal, and the values of its `spec.sensitive` keys, which
    the driver has remembered (`masking.known`); not every secret of every connector."""
    values = [value for config in configs for value in config.values() if value]
    found: set[str] = set()
    for config in configs:
        found |= secret_values(config)
    found |= {secret for secret in masking.known() if any(secret in value for value in values)}
    return TaskLogging(configured(), frozenset(found))


@contextmanager
def task_logging(spec: TaskLogging, connector: str, task: int) -> Iterator[None]:
    """In a Python worker: the records logged meanwhile are the task's."""
    _install(spec)
    with connector_context(connector, task):
        yield


class _TaskHandler(logging.StreamHandler):  # type: ignore[type-arg]  # (generic in typeshed only)
    """Ours: installed once per worker process."""


def _install(spec: TaskLogging) -> None:
    masking.remember(spec.secrets)
    root = logging.getLogger()
    if any(not isinstance(handler, _TaskHandler) for handler in root.handlers):
        return  # a process whose logging is set up already (the CLI's own, a test runner's)
    handler = next(iter(root.handlers), None) or _new_handler(root)
    handler.setFormatter(JsonFormatter() if spec.settings.json else text_formatter())
    root.setLevel(spec.settings.level)


def _new_handler(root: logging.Logger) -> logging.Handler:
    handler = _TaskHandler(sys.stderr)
    handler.addFilter(ContextFilter())
    handler.addFilter(masking.MaskingFilter())  # after the tags: it scrubs the fields too
    root.addHandler(handler)
    return handler
