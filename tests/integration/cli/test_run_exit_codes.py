"""Exit codes that tell the truth (issue 10, point 2): `run --once` on the real broker and Spark.

`run --once` exits 1 when a connector or task ended the tick FAILED or an offsets request did
not complete, printing what failed and what to do; `--allow-failed` prints the same and exits 0.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.kafka.settings import KafkaSettings
from test_apply import cli, kafka_args, manifest, write
from offsets_support import REFUSING_SINK
from run_support import FAULTY_SOURCE, create_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def faulty(name: str, topic: str, marker: Path, restart: str = "") -> str:
    extra = f"restart: {{id: {restart}, includeTasks: true, onlyFailed: true}}\n" if restart else ""
    text = manifest(name, topic=topic, count="20", **{"fail.tasks.if.exists": str(marker)}, extra=extra)
    return text.replace("class: datagen", f"class: '{FAULTY_SOURCE}'")


def test_run_once_with_a_failed_task_exits_1_and_says_what_to_do(
    spark_session: SparkSession, capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    topic = f"{kafka_settings.group_id}.data"
    create_topic(kafka_settings, topic, 1)
    marker = tmp_path / "broken"
    marker.touch()
    manifests = write(tmp_path / "flaky.yaml", faulty("flaky", topic, marker))

    code, out, err = cli(capsys, kafka_settings, "run", str(manifests), "--once")
    assert code == 1
    assert "flaky: RUNNING; task 0 FAILED" in out  # the tick report, as before
    lines = err.splitlines()
    assert re.fullmatch(r"\S+Z run --once: 1 failure\(s\):", lines[0])  # a log line: UTC-stamped
    assert lines[1].startswith("  task flaky/0 FAILED: ") and "task 0 fails on purpose" in lines[1]
    assert "what to do:" in lines and any("reconciler status NAME" in line and "spec.restart" in line for line in lines)

    # Still FAILED at the next tick (until restarted): still 1; --allow-failed: the summary, and 0.
    code, _, err = cli(capsys, kafka_settings, "run", str(manifests), "--once", "--allow-failed")
    assert code == 0
    assert "task flaky/0 FAILED" in err and "exit code 0 all the same: --allow-failed" in err

    # What the summary says to do: fix the cause, commit a restart id. Then 0, and no summary.
    marker.unlink()
    write(manifests, faulty("flaky", topic, marker, restart="fixed-1"))
    code, out, err = cli(capsys, kafka_settings, "run", str(manifests), "--once")
    assert code == 0, err
    assert "flaky: RUNNING (restarted task 0); task 0 RUNNING" in out and "failure" not in err


def test_run_once_with_a_failed_offsets_request_exits_1(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """The connector's hook refuses the request: it stays STOPPED though the manifest says
    running. No task runs (it is stopped), so Spark never starts."""
    offsets = "offsets: {id: r1, action: alter, offsets: [{partition: {kafka_topic: t, kafka_partition: 0}, offset: {kafka_offset: 1}}]}\n"
    text = manifest("refuser", topics="t", extra=offsets).replace("class: datagen", f"class: '{REFUSING_SINK}'")
    manifests = write(tmp_path / "refuser.yaml", text)

    code, out, err = cli(capsys, kafka_settings, "run", str(manifests), "--once")
    assert code == 1
    assert "run --once: 1 failure(s):" in err
    assert "  offsets request r1 of refuser: refused: the connector refused the request" in err
    assert "the connector stays STOPPED until its request completes" in err
    assert "refuser: STOPPED" in out


def test_a_driver_jvm_that_cannot_start_says_why_in_json_lines(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    """With --log-format json, what the JVM writes outside logging comes as JSON too
    (runtime.spark.jvm_output): here the JVM's own reason for not starting, before our error."""
    manifests = write(tmp_path / "gen.yaml", manifest("gen", topic=f"{kafka_settings.group_id}.gen", count="1"))
    command = [sys.executable, "-m", "reconciler.cli.main", "run", str(manifests), "--once", "--log-format", "json",
               "--spark-conf", "spark.driver.extraJavaOptions=-Xss1", *kafka_args(kafka_settings)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 1, done.stderr
    events = [json.loads(line) for line in done.stderr.splitlines()]  # every line parses
    assert any(e["logger"] == "spark.jvm" and "Could not create the Java Virtual Machine" in e["message"] for e in events)
    assert events[-1]["event"] == "error" and "cannot start Spark" in events[-1]["message"], events[-1]
