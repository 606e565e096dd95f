"""How log records are written, wherever they are written: readable lines, or one JSON object
per line (`--log-format json`), in the CLI's process and in the Python workers that run
connector tasks (`reconciler.runtime.batch.task_logs`) alike.

JSON is for log pipelines (Kubernetes, Loki, Elasticsearch): each record is one object on one
line, `{"time", "level", "logger", "message", "event", …}`, with a record's own fields merged
in (`extra={"fields": {...}}`: the events of `run`/`watch`) and a traceback, if any, as
`exception`.

What a connector's code logs is tagged with the connector, as Connect's `LoggingContext` tags
it (the `connector.context` of its log layout): `[orders|worker] ` for the connector's own
calls (start, task configs, stop, an offsets request's hook), `[orders|task-0] ` for a task's;
in JSON, a `connector` field, and `task` for a task's.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

# UTC, as `stamp()`; the connector's tag before the message, as in Connect's layout.
TEXT_FORMAT = "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(connector_context)s%(message)s"
TEXT_DATE_FORMAT = "%Y-%m-%dT%H:%M:%S"
LOG_FORMATS = ("text", "json")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        when = datetime.fromtimestamp(record.created, tz=timezone.utc)
        doc: dict[str, Any] = {
            "time": when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "event": "log",  # a library's record; the reconciler's own events name theirs
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            doc.update({key: value for key, value in fields.items() if key not in doc or key == "event"})
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        return json.dumps(doc, ensure_ascii=False, default=str, separators=(",", ":"))


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        record.__dict__.setdefault("connector_context", "")  # a handler without `ContextFilter`
        return super().format(record)


def text_formatter() -> logging.Formatter:
    formatter = _TextFormatter(TEXT_FORMAT, TEXT_DATE_FORMAT)
    formatter.converter = time.gmtime
    return formatter


_connector: ContextVar[tuple[str, int | None] | None] = ContextVar("reconciler_connector", default=None)


@contextmanager
def connector_context(name: str, task: int | None = None) -> Iterator[None]:
    """Records logged meanwhile (in this thread) are connector `name`'s: its task `task`'s, or
    (None) the connector's own calls'."""
    token = _connector.set((name, task))
    try:
        yield
    finally:
        _connector.reset(token)


class ContextFilter(logging.Filter):
    """Tags each record with the connector context it was logged in (`connector_context`):
    `connector_context` for TEXT_FORMAT (empty outside any), fields for JSON."""

    def filter(self, record: logging.LogRecord) -> bool:
        current = _connector.get()
        if current is None:
            record.connector_context = ""
            return True
        name, task = current
        record.connector_context = f"[{name}|worker] " if task is None else f"[{name}|task-{task}] "
        tags: dict[str, Any] = {"connector": name} if task is None else {"connector": name, "task": task}
        fields = getattr(record, "fields", None)
        record.fields = {**tags, **fields} if isinstance(fields, dict) else tags  # its own fields first
        return True


@dataclass(frozen=True)
class LogSettings:
    """The format and level the CLI configured (`reconciler.cli.logs.configure`), for what logs
    elsewhere on its behalf (a connector task in a Python worker) to log the same way."""

    json: bool = False
    level: int = logging.WARNING


_configured = {"settings": LogSettings()}


def remember_settings(settings: LogSettings) -> None:
    _configured["settings"] = settings


def configured() -> LogSettings:
    return _configured["settings"]
