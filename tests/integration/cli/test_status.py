"""`reconciler status` / `snapshot` on the real broker: Connect's REST shapes, table, errors."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.core.live import InstanceState, InstanceStatus, LastBatch, TaskBatch, load_snapshot
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.io.store import prepare
from reconciler.kafka.settings import KafkaSettings

TRACE = "org.apache.kafka.connect.errors.ConnectException: boom\n\tat Foo.bar(Foo.java:1)"
BATCH_AT_MS = 1_795_000_000_000  # 2026-11-18 11:06:40Z


def kafka_args(settings: KafkaSettings) -> list[str]:
    return ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]


def status(state: InstanceState, worker: str = "10.0.0.5:8083", trace: str | None = None) -> InstanceStatus:
    return InstanceStatus(state=state, worker_id=worker, trace=trace, generation=3)


def seed(settings: KafkaSettings) -> None:
    """Connectors as a Java Connect cluster would leave them: configs, task commit, statuses."""
    prepare(settings)
    records = [
        rec.connector_config_record("sink-a", {"connector.class": "com.example.OrdersSink", "name": "sink-a", "topics": "orders", "tasks.max": "2"}),
        rec.commit_record("sink-a", 2),
        rec.connector_config_record("src-b", {"connector.class": "com.example.Source", "name": "src-b", "tasks.max": "1"}),
        rec.connector_config_record("quiet-c", {"connector.class": "com.example.Source", "name": "quiet-c"}),  # never ran
        rec.connector_status_record("sink-a", status(InstanceState.RUNNING)),
        # Task 1 written before task 0: the output is sorted by id anyway.
        rec.task_status_record("sink-a", 1, status(InstanceState.FAILED, "10.0.0.6:8083", TRACE)),
        rec.task_status_record("sink-a", 0, status(InstanceState.RUNNING)),
        rec.connector_status_record("src-b", status(InstanceState.PAUSED)),
        # The runtime's last batch of sink-a: task 0 moved 120 records, task 1 failed.
        own.batch_record("sink-a", LastBatch(
            finished_at_ms=BATCH_AT_MS, worker_id="host:1",
            tasks={0: TaskBatch(records=120, bytes=4000), 1: TaskBatch(failed=True)},
        )),
    ]
    with TransactionalWriter(settings, transactional_id=f"worker-{settings.group_id}") as writer:
        writer.write(records)


# Kafka 4.x's REST shows each status's plugin `version`, null when the record has none.
SINK_A = {
    "name": "sink-a",
    "connector": {"state": "RUNNING", "worker_id": "10.0.0.5:8083", "version": None},
    "tasks": [
        {"id": 0, "state": "RUNNING", "worker_id": "10.0.0.5:8083", "version": None},
        {"id": 1, "state": "FAILED", "worker_id": "10.0.0.6:8083", "trace": TRACE, "version": None},
    ],
    "type": "sink",
}


# quiet-c has a config and no status record: UNASSIGNED ("not yet assigned to a worker") and no worker.
QUIET_C = {
    "name": "quiet-c",
    "connector": {"state": "UNASSIGNED", "worker_id": None, "version": None},
    "tasks": [],
    "type": "source",
}


def test_status_of_one_connector_is_connects_rest_shape(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    seed(kafka_settings)
    assert main(["status", "sink-a", "--format", "json", *kafka_args(kafka_settings)]) == 0
    out = capsys.readouterr().out
    assert json.loads(out) == SINK_A
    assert list(json.loads(out)) == ["name", "connector", "tasks", "type"]  # Connect's field order


def test_status_of_all_connectors_is_the_expand_status_shape(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    seed(kafka_settings)
    assert main(["status", "--format", "json", *kafka_args(kafka_settings)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc == {
        "quiet-c": {"status": QUIET_C},
        "sink-a": {"status": SINK_A},
        "src-b": {
            "status": {
                "name": "src-b",
                "connector": {"state": "PAUSED", "worker_id": "10.0.0.5:8083", "version": None},
                "tasks": [],
                "type": "source",
            }
        },
    }


def test_a_connector_with_no_status_yet_is_unassigned_in_json_as_the_table_lists_it(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    """Applied, never run: Java answers 404 for the moments before its worker reports; here the
    table lists it ("no status yet") until the next `run` tick, and JSON too (not `{}`)."""
    seed(kafka_settings)
    assert main(["status", "quiet-c", "--format", "json", *kafka_args(kafka_settings)]) == 0
    assert json.loads(capsys.readouterr().out) == QUIET_C


def test_status_table_is_plain_text_when_not_a_tty(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    seed(kafka_settings)
    assert main(["status", *kafka_args(kafka_settings)]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert lines[0] == [
        "CONNECTOR", "TYPE", "TARGET", "STATE", "TASKS", "RUNNING", "FAILED", "TASK", "IDS", "LAST", "BATCH"
    ]
    assert lines[1:4] == [
        ["quiet-c", "source", "running", "no", "status", "yet", "0/0", "-", "-"],
        ["sink-a", "sink", "running", "RUNNING", "1/2", "1", "2026-11-18", "11:06:40Z", "failed,", "120", "records"],
        ["src-b", "source", "running", "PAUSED", "0/0", "-", "-"],
    ]
    # src-b's target is running while it reports PAUSED: the table says the worker has yet to act.
    assert lines[4:] == [[], "note: src-b: target running, still PAUSED: `apply` wrote the target; the connector "
                         "and its tasks follow at the next `reconciler run` tick".split()]


def test_unknown_connector_is_an_error(capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings) -> None:
    seed(kafka_settings)
    for fmt in ("table", "json"):
        assert main(["status", "nope", "--format", fmt, *kafka_args(kafka_settings)]) == 1
        assert capsys.readouterr().err.strip() == "error: Connector nope not found"


def test_table_of_one_connector_shows_its_tasks_or_that_it_has_no_status_yet(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    seed(kafka_settings)
    assert main(["status", "sink-a", *kafka_args(kafka_settings)]) == 0
    lines = [line.split() for line in capsys.readouterr().out.splitlines() if line]
    assert lines[1][:6] == ["sink-a", "sink", "running", "RUNNING", "1/2", "1"]
    assert lines[2] == ["TASK", "STATE", "WORKER", "TRACE"]
    assert lines[3] == ["0", "RUNNING", "10.0.0.5:8083"]
    assert lines[4] == ["1", "FAILED", "10.0.0.6:8083", "org.apache.kafka.connect.errors.ConnectException:", "boom"]
    assert main(["status", "quiet-c", *kafka_args(kafka_settings)]) == 0
    assert "no status yet" in capsys.readouterr().out


def test_snapshot_round_trips_into_the_plan_engines_input(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    seed(kafka_settings)
    out_file = tmp_path / "live.json"
    assert main(["snapshot", "--out", str(out_file), *kafka_args(kafka_settings)]) == 0
    assert main(["snapshot", *kafka_args(kafka_settings)]) == 0
    stdout = capsys.readouterr().out
    assert stdout == out_file.read_text()
    live = load_snapshot(stdout)
    assert live.group_id == kafka_settings.group_id
    assert live.connectors["sink-a"].task_statuses[1].trace == TRACE
    assert live.connectors["sink-a"].task_count == 2


def test_status_against_an_unreachable_broker_fails_fast_and_quietly() -> None:
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "status", "--bootstrap-servers", "127.0.0.1:1", "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    elapsed = time.monotonic() - started
    assert proc.returncode == 1
    assert elapsed < 2.5  # interpreter start and imports; the refusal itself is known at once
    assert proc.stdout == ""
    first, hint = proc.stderr.strip().splitlines()
    assert first == "error: cannot reach Kafka at 127.0.0.1:1: connection refused (nothing listens on that port)"
    assert hint.strip().startswith("hint: check --bootstrap-servers / RECONCILER_BOOTSTRAP_SERVERS")
