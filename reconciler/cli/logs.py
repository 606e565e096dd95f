"""Logging for every command: readable lines by default, or JSON lines (`--log-format json`),
as `reconciler.logs` writes them. In JSON mode nothing else is printed, so every line of
stderr parses.
"""

from __future__ import annotations

import logging
import os
import sys

from reconciler.logs import LOG_FORMATS, ContextFilter, JsonFormatter, LogSettings, remember_settings, text_formatter

__all__ = ["LOG_FORMATS", "configure", "error"]


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
    level = logging.WARNING - 10 * min(verbosity, 2)
    remember_settings(LogSettings(json_mode, level))  # connector tasks log the same way
    # Inherited by what this process starts: Spark's JVM logs JSON too (runtime.spark.session).
    if json_mode or "RECONCILER_LOG_FORMAT" in os.environ:
        os.environ["RECONCILER_LOG_FORMAT"] = log_format
    logging.getLogger("reconciler.events").setLevel(logging.INFO if json_mode else logging.NOTSET)
    root = logging.getLogger()
    if any(not isinstance(handler, _Handler) for handler in root.handlers):
        return
    for old in list(root.handlers):
        root.removeHandler(old)
    handler = _Handler(sys.stderr)
    handler.addFilter(ContextFilter())  # a connector's calls on this process: `[name|worker] `
    handler.setFormatter(JsonFormatter() if json_mode else text_formatter())
    root.addHandler(handler)
    root.setLevel(level)


def error(message: str) -> None:
    """A command's error, as the rest of its output: a JSON event or a line on stderr."""
    if _mode["json"]:
        logging.getLogger("reconciler.events").error(message, extra={"fields": {"event": "error"}})
    else:
        print(message, file=sys.stderr)
