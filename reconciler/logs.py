"""How log records are written, wherever they are written: readable lines, or one JSON object
per line (`--log-format json`), in the CLI's process and in the Python workers that run
connector tasks (`reconciler.runtime.task_logs`) alike.

JSON is for log pipelines (Kubernetes, Loki, Elasticsearch): each record is one object on one
line, `{"time", "level", "logger", "message", "event", …}`, with a record's own fields merged
in (`extra={"fields": {...}}`: the events of `run`/`watch`, a task's connector and task id) and
a traceback, if any, as `exception`.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

TEXT_FORMAT = "%(asctime)s.%(msecs)03dZ %(levelname)s %(name)s: %(message)s"  # UTC, as `stamp()`
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


def text_formatter(fmt: str = TEXT_FORMAT) -> logging.Formatter:
    formatter = logging.Formatter(fmt, TEXT_DATE_FORMAT)
    formatter.converter = time.gmtime
    return formatter


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
