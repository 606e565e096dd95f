"""`spec.autoRestart` on the real broker and SparkSession, with Strimzi's minutes on a clock the
test moves: a failing task is restarted at once, then after 2 minutes (by a new worker, as a
restarted container would be: the count comes from Kafka), then no more (`maxRestarts: 2`);
`reconciler status` shows the count and the next attempt; once fixed (and a higher limit lets a
third restart bring it back) and healthy for longer than its back-off, the count resets. The data arrives exactly once in the end.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reconciler.cli.main import main
from reconciler.kafka.io.consume import read_to_end
from reconciler.app.tick import TickRunner
from run_support import FAULTY_SOURCE, WORKER_ID, Pipeline, ids, pipeline, topic_keys

__all__ = ["pipeline"]  # the fixture

COUNT = 400  # 4 shards: task 0 owns shards 0 and 2, task 1 shards 1 and 3
TASK1 = "status-task-flaky-1"
MINUTE = 60_000
T0 = 1_800_000_000_000


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> int:
        return self.now


def worker(pipeline: Pipeline, clock: Clock) -> TickRunner:
    """A worker on the pipeline's executor (the shared Spark), with Strimzi's minute as unit."""
    return TickRunner(pipeline.settings, pipeline.worker.executor, worker_id=WORKER_ID, now_ms=clock)


def tick(pipeline: Pipeline, running: TickRunner) -> Counter[str]:
    """One tick of `running`; which status keys went RESTARTING in it."""
    from reconciler.manifests import load_or_raise

    before = pipeline.restarting()
    paths = [str(pipeline.dir)]
    running.tick(load_or_raise(paths), manifest_paths=paths)
    return pipeline.restarting() - before


def status_json(pipeline: Pipeline, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    settings = pipeline.settings
    code = main(["status", "flaky", "--format", "json", "--bootstrap-servers", settings.bootstrap_servers,
                 "--group-id", settings.group_id])
    assert code == 0
    doc: dict[str, Any] = json.loads(capsys.readouterr().out)
    return doc


def history_records(pipeline: Pipeline) -> list[tuple[bytes, Any]]:
    found = []
    for message in read_to_end(pipeline.settings, pipeline.settings.topics.reconciler):
        if (message.key or b"").startswith(b"auto-restart/"):
            found.append((message.key, None if message.value is None else json.loads(message.value)))
    return found


def test_auto_restart_backs_off_survives_a_restart_stops_at_max_and_resets(
    pipeline: Pipeline, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "task-1-broken"
    marker.touch()
    topic = pipeline.topic("flaky", 1)
    config = {"topic": topic, "count": COUNT, "shards": 4, "fail.tasks.if.exists": str(marker), "fail.task.ids": "1"}
    pipeline.connector("flaky", FAULTY_SOURCE, config, tasks_max=2)
    pipeline.set("flaky", autoRestart={"enabled": True, "maxRestarts": 2})
    clock = Clock()
    first = worker(pipeline, clock)

    assert tick(pipeline, first) == Counter()  # the task fails in this batch
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})

    clock.now += 1_000
    assert tick(pipeline, first) == Counter([TASK1])  # restarted at once; fails again
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})
    once = status_json(pipeline, capsys)["autoRestart"]
    assert once == {"count": 1, "lastRestartTimestamp": "2027-01-15T08:00:01Z", "nextRestartTimestamp": "2027-01-15T08:02:01Z"}

    clock.now += MINUTE + 59_999  # 1 minute 59.999 s: Strimzi counts whole minutes
    assert tick(pipeline, first) == Counter()

    clock.now += 1
    second = worker(pipeline, clock)  # a new process: the count comes from Kafka
    assert tick(pipeline, second) == Counter([TASK1])
    twice = status_json(pipeline, capsys)["autoRestart"]
    assert twice == {"count": 2, "lastRestartTimestamp": "2027-01-15T08:02:01Z", "nextRestartTimestamp": None}

    clock.now += 600 * MINUTE
    assert tick(pipeline, second) == Counter()  # maxRestarts reached: no more, and no reset while failing
    assert status_json(pipeline, capsys)["autoRestart"]["count"] == 2
    produced = topic_keys(pipeline.settings, topic)
    assert set(produced) == {b"%d" % i for i in range(COUNT) if i % 4 in (0, 2)}  # task 0's shards only

    marker.unlink()  # fixed; a higher maxRestarts lets the next automatic restart bring it back
    pipeline.set("flaky", autoRestart={"enabled": True, "maxRestarts": 3})
    assert tick(pipeline, second) == Counter([TASK1])
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    third = status_json(pipeline, capsys)["autoRestart"]
    assert third == {"count": 3, "lastRestartTimestamp": "2027-01-15T18:02:01Z", "nextRestartTimestamp": None}

    clock.now += 12 * MINUTE + 59_999  # healthy for 12 whole minutes: not longer than the back-off (12)
    assert tick(pipeline, second) == Counter()
    assert status_json(pipeline, capsys)["autoRestart"]["count"] == 3
    clock.now += 1  # 13 minutes: the count resets
    assert tick(pipeline, second) == Counter()
    assert "autoRestart" not in status_json(pipeline, capsys)
    counts = [None if value is None else value["count"] for _, value in history_records(pipeline)]
    assert counts == [1, 2, 3, None]  # a record per restart, the reset a tombstone
    assert topic_keys(pipeline.settings, topic) == ids(COUNT)
