"""What connector code logs: a task's records in its Python worker (`runtime.batch.task_logs`), written
as the CLI writes its own, tagged with the connector and task, its secrets masked; and the
connector's own calls on the driver, tagged `[name|worker]` (`reconciler.logs`).

A worker is a fresh Python process with no logging set up, so the worker's cases run in one (a
child process here; Spark's workers in tests/integration/runtime/test_task_logs_run.py)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest

from reconciler.connectors.api import ConnectorConfig, SourceConnector, TaskConfig, share_configs
from reconciler.connectors.faulty import FaultySourceTask
from reconciler.core.live import LiveConnector
from reconciler.core.redact import MASK
from reconciler.logs import ContextFilter, JsonFormatter, LogSettings, connector_context, text_formatter
from reconciler.runtime.batch.lifecycle import start_connector
from reconciler.runtime.batch.statuses import Started
from reconciler.runtime.batch.task_logs import TaskLogging, for_connector, task_logging

CHILD = """
import logging
from reconciler.logs import LogSettings
from reconciler.runtime.batch.task_logs import TaskLogging, task_logging

spec = TaskLogging(LogSettings(json={json}, level={level}), frozenset({{"s3cr3t-value"}}))
log = logging.getLogger("plugin.mod")
with task_logging(spec, "orders", 2):
    log.info("polled %d records", 5)
    log.debug("not at this level")
    log.warning("connecting with password s3cr3t-value")
with task_logging(spec, "other", 0):
    log.warning("the next task in the same worker")
log.warning("between tasks")
"""


def child_stderr(*, json_logs: bool, level: int) -> list[str]:
    code = textwrap.dedent(CHILD.format(json=json_logs, level=level))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout == ""
    return done.stderr.splitlines()


def test_text_lines_carry_connects_connector_context() -> None:
    lines = child_stderr(json_logs=False, level=logging.INFO)
    tails = [line.split(" ", 1)[1] for line in lines]  # after the UTC time stamp
    assert tails == [
        "INFO plugin.mod: [orders|task-2] polled 5 records",
        f"WARNING plugin.mod: [orders|task-2] connecting with password {MASK}",
        "WARNING plugin.mod: [other|task-0] the next task in the same worker",
        "WARNING plugin.mod: between tasks",
    ]
    assert all(line.endswith("Z") for line in (line.split(" ", 1)[0] for line in lines))


def test_json_lines_carry_connector_and_task_fields_at_the_clis_level() -> None:
    docs = [json.loads(line) for line in child_stderr(json_logs=True, level=logging.WARNING)]
    assert [(d["level"], d["logger"], d["message"], d.get("connector"), d.get("task")) for d in docs] == [
        ("warning", "plugin.mod", f"connecting with password {MASK}", "orders", 2),
        ("warning", "plugin.mod", "the next task in the same worker", "other", 0),
        ("warning", "plugin.mod", "between tasks", None, None),
    ]
    assert all(d["event"] == "log" for d in docs)


def test_a_process_with_logging_set_up_is_left_as_it_is(caplog: pytest.LogCaptureFixture) -> None:
    """The CLI's own process (a task run without Spark), a test runner: their handlers stay."""
    before = list(logging.getLogger().handlers)
    with caplog.at_level(logging.INFO), task_logging(TaskLogging(), "orders", 1):
        logging.getLogger("plugin.mod").info("polled")
    assert logging.getLogger().handlers == before
    assert [r.getMessage() for r in caplog.records if r.name == "plugin.mod"] == ["polled"]


def test_a_connectors_secrets_are_those_its_key_names_reveal_and_those_the_driver_remembered() -> None:
    from reconciler import masking

    masking.remember(["declared-sensitive-path", "another-connectors-secret"])
    try:
        spec = for_connector([
            {"name": "orders", "connection.password": "pw-of-orders", "path": "/data/declared-sensitive-path"},
            {"task.index": "0"},
        ])
    finally:
        masking.forget_all()
    assert spec.secrets == {"pw-of-orders", "declared-sensitive-path"}
    assert spec.settings == LogSettings()  # nothing configured in this process: text at WARNING


class TalkativeSource(SourceConnector):
    """Logs from its `task_configs`, which the runtime calls on the driver."""

    task_class = FaultySourceTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        logging.getLogger("talkative").warning("making %d task config(s)", max_tasks)
        return share_configs(config, max_tasks)


def tagged_lines(formatter: logging.Formatter, log: Callable[[], None]) -> list[str]:
    """What `log()` writes through a handler set up as the CLI's (`ContextFilter`, `formatter`)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        log()
    finally:
        root.removeHandler(handler)
    return stream.getvalue().splitlines()


def test_a_connectors_own_calls_on_the_driver_are_tagged_worker_as_connects() -> None:
    connector = LiveConnector(name="orders", config={
        "name": "orders", "connector.class": "test_task_logs:TalkativeSource", "tasks.max": "2", "topic": "t", "count": "1",
    })
    started: list[object] = []
    lines = tagged_lines(text_formatter(), lambda: started.append(start_connector(connector)))
    assert isinstance(started[0], Started)
    assert [line.split(" ", 1)[1] for line in lines if "talkative" in line] == [
        "WARNING talkative: [orders|worker] making 2 task config(s)"
    ]
    docs = [json.loads(line) for line in tagged_lines(JsonFormatter(), lambda: start_connector(connector))]
    assert [(d["message"], d["connector"]) for d in docs if d["logger"] == "talkative"] == [
        ("making 2 task config(s)", "orders")
    ]
    assert all("task" not in d for d in docs)


def test_outside_a_connector_nothing_is_tagged() -> None:
    lines = tagged_lines(text_formatter(), lambda: logging.getLogger("plain").warning("hello"))
    assert [line.split(" ", 1)[1] for line in lines] == ["WARNING plain: hello"]
    with connector_context("orders", 4):
        inside = tagged_lines(text_formatter(), lambda: logging.getLogger("plain").warning("hello"))
    assert [line.split(" ", 1)[1] for line in inside] == ["WARNING plain: [orders|task-4] hello"]
