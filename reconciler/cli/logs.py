"""Logging for every command: readable lines by default, or JSON lines (`--log-format json`).

JSON is for log pipelines (Kubernetes, Loki, Elasticsearch): each record is one object on one
line of stderr, `{"time", "level", "logger", "message", …}`, with an event's own fields merged
in (`reconciler.cli.tick_output` passes them as `extra={"fields": {...}}`) and a traceback, if
any, as `exception`. Nothing else is printed in that mode, so every line parses.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
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


class _Handler(logging.StreamHandler):  # type: ignore[type-arg]  # (generic in typeshed only)
    """Ours, so a second `configure` in the same process replaces it rather than adding one."""


_mode = {"json": False}


def configure(log_format: str, verbosity: int) -> None:
    """Root logging at WARNING (INFO with -v, DEBUG with -vv); with JSON, the events of
    `run`/`watch` (logger `reconciler.events`) always at INFO: they are the output.

    Like `logging.basicConfig`, it leaves a root logger that someone else set up alone (a test
    runner's capture); it only replaces what an earlier call of its own installed."""
    json_mode = log_format == "json"
    _mode["json"] = json_mode
    # Inherited by what this process starts: Spark's JVM logs JSON too (runtime.spark).
    if json_mode or "RECONCILER_LOG_FORMAT" in os.environ:
        os.environ["RECONCILER_LOG_FORMAT"] = log_format
    logging.getLogger("reconciler.events").setLevel(logging.INFO if json_mode else logging.NOTSET)
    root = logging.getLogger()
    if any(not isinstance(handler, _Handler) for handler in root.handlers):
        return
    for old in list(root.handlers):
        root.removeHandler(old)
    handler = _Handler(sys.stderr)
    handler.setFormatter(JsonFormatter() if json_mode else _text_formatter())
    root.addHandler(handler)
    root.setLevel(logging.WARNING - 10 * min(verbosity, 2))


def _text_formatter() -> logging.Formatter:
    formatter = logging.Formatter(TEXT_FORMAT, TEXT_DATE_FORMAT)
    formatter.converter = time.gmtime
    return formatter


def error(message: str) -> None:
    """A command's error, as the rest of its output: a JSON event or a line on stderr."""
    if _mode["json"]:
        logging.getLogger("reconciler.events").error(message, extra={"fields": {"event": "error"}})
    else:
        print(message, file=sys.stderr)
