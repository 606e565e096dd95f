"""The worker's plugin side (`start_connector`), the faulty connectors, and the tick's printout."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli.run_options import parse_spark_conf
from reconciler.cli.run_use import report_lines
from reconciler.connectors.api import SinkTask
from reconciler.connectors.faulty import FaultySink, FaultySource, FaultySourceTask, InjectedFailure
from reconciler.core.live import ConnectTargetState, InstanceState, LiveConnector
from reconciler.errors import ReconcilerError
from reconciler.runtime.batch.restarts import RestartPlan
from reconciler.runtime.batch.statuses import StartFailed, Started
from reconciler.runtime.batch.lifecycle import start_connector
from reconciler.app.tick import TickReport
from reconciler.runtime.batch.reports import ConnectorReport, TaskReport

FAULTY_SOURCE = "reconciler.connectors.faulty:FaultySource"
FAULTY_SINK = "reconciler.connectors.faulty:FaultySink"


def live(config: dict[str, str | None]) -> LiveConnector:
    return LiveConnector(name="c", config={"name": "c", **config})


def test_start_connector_gives_kind_and_task_configs() -> None:
    started = start_connector(live({"connector.class": "datagen", "tasks.max": "2", "topic": "t", "count": "10"}))
    assert isinstance(started, Started)
    assert started.kind == "source"
    assert [c["task.index"] for c in started.task_configs] == ["0", "1"]
    sink = start_connector(live({"connector.class": "parquet-sink", "tasks.max": "3", "topics": "t", "path": "/x"}))
    assert isinstance(sink, Started) and sink.kind == "sink" and len(sink.task_configs) == 3


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"connector.class": "no-such-thing"}, "unknown connector class 'no-such-thing'"),
        ({}, "unknown connector class ''"),
        ({"connector.class": "datagen", "tasks.max": "two", "topic": "t", "count": "1"}, "tasks.max must be an integer"),
        ({"connector.class": "datagen", "tasks.max": "0", "topic": "t", "count": "1"}, "tasks.max must be at least 1"),
        ({"connector.class": "datagen", "tasks.max": "1"}, "the connector configuration is invalid:\n  `topic`: is required"),
        ({"connector.class": "datagen", "tasks.max": "20", "topic": "t", "count": "1"},
         "datagen uses at most 16 tasks with this config; got 20"),
        ({"connector.class": "file-sink", "tasks.max": "10001", "topics": "t", "path": "/x"},
         "the runtime serves at most 10000 tasks per connector; got 10001"),
    ],
)
def test_start_connector_failures_become_traces(config: dict[str, str | None], expected: str) -> None:
    result = start_connector(live(config))
    assert isinstance(result, StartFailed)
    assert expected in result.trace


def test_a_plugin_exception_becomes_a_python_traceback(tmp_path: Path) -> None:
    marker = tmp_path / "broken"
    marker.touch()
    config = {"connector.class": FAULTY_SOURCE, "topic": "t", "count": "5", "fail.connector.if.exists": str(marker)}
    result = start_connector(live(config))
    assert isinstance(result, StartFailed)
    assert result.trace.startswith("Traceback (most recent call last):")
    assert f"InjectedFailure: the connector fails on purpose: {marker} exists" in result.trace
    marker.unlink()  # "fixed"
    assert isinstance(start_connector(live(config)), Started)


def test_faulty_source_fails_only_the_named_tasks_while_the_marker_exists(tmp_path: Path) -> None:
    marker = tmp_path / "tasks"
    marker.touch()
    config = {"topic": "t", "count": "20", "shards": "4", "fail.tasks.if.exists": str(marker), "fail.task.ids": "1"}
    first, second = FaultySource().task_configs(config, 2)
    assert len(FaultySourceTask(first).poll_batch({}, 100)) == 10
    with pytest.raises(InjectedFailure, match="task 1 fails on purpose"):
        FaultySourceTask(second).poll_batch({}, 100)
    marker.unlink()
    assert len(FaultySourceTask(second).poll_batch({}, 100)) == 10


def test_faulty_sink_tasks_are_numbered_and_fail_on_start(tmp_path: Path) -> None:
    marker = tmp_path / "tasks"
    marker.touch()
    config = {"topics": "t", "path": str(tmp_path / "out"), "fail.tasks.if.exists": str(marker)}
    configs = FaultySink().task_configs(config, 2)
    assert [c["task.index"] for c in configs] == ["0", "1"]
    task: SinkTask = FaultySink.task_class()
    with pytest.raises(InjectedFailure, match="task 0 fails on purpose"):
        task.start(configs[0])
    marker.unlink()
    task.start(configs[0])
    assert task.open([("t", 0)]) == {}


def test_faulty_connectors_validate_their_task_ids() -> None:
    problems = FaultySink().validate({"topics": "t", "path": "/x", "fail.task.ids": "0,x"})
    assert [p.key for p in problems] == ["fail.task.ids"]
    assert FaultySource().validate({"topic": "t", "count": "1", "fail.task.ids": " 0, 2 "}) == []


def test_parse_spark_conf() -> None:
    assert parse_spark_conf(["a=b", "spark.x= y=z"]) == {"a": "b", "spark.x": " y=z"}
    with pytest.raises(ReconcilerError, match="KEY=VALUE"):
        parse_spark_conf(["novalue"])


def test_report_lines_name_states_records_and_failures() -> None:
    report = TickReport(
        config_end=12,
        connectors=[
            ConnectorReport(
                name="src",
                target=ConnectTargetState.STARTED,
                state=InstanceState.RUNNING,
                trace=None,
                tasks=[
                    TaskReport(task=0, state=InstanceState.RUNNING, records=10, ran=True),
                    TaskReport(
                        task=1,
                        state=InstanceState.FAILED,
                        records=0,
                        ran=True,
                        trace="Traceback…\nValueError: bad line\n",
                    ),
                ],
                restarted=RestartPlan(False, (1,), 4),
            ),
            ConnectorReport(
                name="sink",
                target=ConnectTargetState.PAUSED,
                state=InstanceState.PAUSED,
                trace=None,
                tasks=[TaskReport(task=0, state=InstanceState.PAUSED)],
            ),
        ],
        records_written=3,
        works=2,
    )
    assert report_lines(report) == [
        "tick (config offset 12): 2 connector(s), 2 task batch(es), 10 record(s) moved, 3 config/status record(s) written",
        "  src: RUNNING (restarted task 1); task 0 RUNNING (10 records), task 1 FAILED (0 records)\n"
        "    task 1: ValueError: bad line",
        "  sink: PAUSED; task 0 PAUSED",
    ]
    assert report.connector("sink") is report.connectors[1]
    assert report.connector("nope") is None
    java = TickReport(config_end=3, left_to_connect=["jdbc-in", "s3-out"])
    assert report_lines(java)[1:] == [
        "  left to the group's Kafka Connect workers (not Python connectors): jdbc-in, s3-out"
    ]


def test_task_configs_carry_task_class_and_topics_as_connects_worker_adds_them() -> None:
    """`Worker.connectorTaskConfigs`: `task.class`, and the connector's `topics` / `topics.regex`."""
    sink = start_connector(live({"connector.class": "parquet-sink", "tasks.max": "2", "topics": "t", "path": "/x"}))
    assert isinstance(sink, Started)
    assert {c["task.class"] for c in sink.task_configs} == {"reconciler.connectors.parquet_sink:ParquetSinkTask"}
    assert {c["topics"] for c in sink.task_configs} == {"t"}
    source = start_connector(live({"connector.class": "datagen", "tasks.max": "1", "topic": "t", "count": "1"}))
    assert isinstance(source, Started)
    assert source.task_configs[0]["task.class"] == "reconciler.connectors.datagen:DatagenTask"
    assert "topics" not in source.task_configs[0]


def test_framework_keys_win_over_the_generated_ones() -> None:
    from reconciler.connectors.datagen import DatagenConnector
    from reconciler.runtime.batch.lifecycle import framework_task_config

    generated = {"topics.regex": "stale", "task.class": "x", "k": "v"}
    made = framework_task_config(generated, DatagenConnector, {"topics.regex": "o.*", "topics": None})
    assert made == {"topics.regex": "o.*", "task.class": "reconciler.connectors.datagen:DatagenTask", "k": "v"}
    assert generated["task.class"] == "x"  # the connector's own copy is left alone
