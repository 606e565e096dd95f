"""KIP-745 restarts (acceptance cases C26–C28, docs/state-machine.md#acceptance-cases) on the real broker and SparkSession.

A `FaultySource` (datagen that fails while a marker file exists) is made to fail on purpose —
the Connector itself, or one task of two — and restart requests are declared in the manifest
(`spec.restart` with a new id each time). Each case checks which instances the status topic
shows RESTARTING in that tick, their final states, that a request runs once, and that the data
a failed task did not produce arrives (exactly once) after it is fixed and restarted.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from reconciler.core.live import InstanceState, InstanceStatus
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.manifests import load_or_raise
from run_support import FAULTY_SOURCE, Pipeline, ids, pipeline, topic_keys

__all__ = ["pipeline"]  # the fixture

COUNT = 400  # 4 shards: task 0 owns shards 0 and 2 (200 ids), task 1 shards 1 and 3
CONNECTOR = "status-connector-flaky"
TASK0, TASK1 = "status-task-flaky-0", "status-task-flaky-1"


class Restarts:
    """The flaky connector, its marker files, and restart requests with fresh ids."""

    def __init__(self, pipeline: Pipeline, tmp_path: Path) -> None:
        self.pipeline = pipeline
        self.topic = pipeline.topic("flaky", 1)
        self.connector_marker = tmp_path / "connector-broken"
        self.tasks_marker = tmp_path / "task-1-broken"
        self.requests = 0

    def declare(self, *, state: str = "running") -> None:
        config: dict[str, Any] = {
            "topic": self.topic,
            "count": COUNT,
            "shards": 4,
            "fail.connector.if.exists": str(self.connector_marker),
            "fail.tasks.if.exists": str(self.tasks_marker),
            "fail.task.ids": "1",
        }
        self.pipeline.connector("flaky", FAULTY_SOURCE, config, tasks_max=2, state=state)

    def restart(self, include_tasks: bool, only_failed: bool) -> Counter[str]:
        """Declare a new restart request, tick, and return which keys went RESTARTING."""
        self.requests += 1
        request = {"id": f"r{self.requests}", "includeTasks": include_tasks, "onlyFailed": only_failed}
        self.pipeline.set("flaky", restart=request)
        return self.tick()

    def tick(self) -> Counter[str]:
        before = self.pipeline.restarting()
        self.pipeline.tick()
        return self.pipeline.restarting() - before


@pytest.fixture
def flaky(pipeline: Pipeline, tmp_path: Path) -> Restarts:
    return Restarts(pipeline, tmp_path)


def test_restarts_of_a_running_connector(flaky: Restarts) -> None:
    """Case 26: (false,false) restarts the connector only; includeTasks restarts connector and
    every task; onlyFailed variants restart nothing; a request runs exactly once."""
    flaky.declare()
    flaky.tick()
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})

    assert flaky.restart(False, False) == Counter([CONNECTOR])
    assert flaky.restart(True, False) == Counter([CONNECTOR, TASK0, TASK1])
    assert flaky.restart(False, True) == Counter()
    assert flaky.restart(True, True) == Counter()
    assert flaky.tick() == Counter()  # the last request is not executed again
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    applied = flaky.pipeline.live().applied["flaky"].restart
    assert applied == ["r1", "r2", "r3", "r4"]
    assert topic_keys(flaky.pipeline.settings, flaky.topic) == ids(COUNT)


def test_restarts_of_a_failed_connector(flaky: Restarts) -> None:
    """Case 27: every variant restarts a FAILED connector; it fails again while broken, stays
    FAILED without a restart once fixed, and comes up with its tasks when restarted."""
    flaky.connector_marker.touch()
    flaky.declare()
    flaky.tick()
    connector = flaky.pipeline.state("flaky")
    assert connector.connector_status is not None and connector.connector_status.state.value == "FAILED"
    assert "InjectedFailure: the connector fails on purpose" in (connector.connector_status.trace or "")
    assert connector.task_count is None and not connector.task_statuses

    assert flaky.restart(False, False) == Counter([CONNECTOR])
    assert flaky.pipeline.states("flaky") == ("FAILED", {})
    assert flaky.restart(False, True) == Counter([CONNECTOR])
    assert flaky.pipeline.states("flaky") == ("FAILED", {})

    flaky.connector_marker.unlink()  # fixed, but a FAILED connector stays FAILED until restarted
    assert flaky.tick() == Counter()
    assert flaky.pipeline.states("flaky") == ("FAILED", {})

    assert flaky.restart(True, True) == Counter([CONNECTOR])
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    status = flaky.pipeline.state("flaky").connector_status
    assert status is not None and status.trace is None


def test_restarts_with_one_failed_task_of_two(flaky: Restarts) -> None:
    """Case 28: (false,false) restarts the connector only; onlyFailed without includeTasks
    restarts nothing; onlyFailed+includeTasks restarts only the failed task; includeTasks
    restarts everything. The failed task moves no data until fixed and restarted."""
    flaky.tasks_marker.touch()
    flaky.declare()
    flaky.tick()
    task1 = flaky.pipeline.state("flaky").task_statuses[1]
    assert task1.state.value == "FAILED"
    assert (task1.trace or "").startswith("Traceback") and "task 1 fails on purpose" in (task1.trace or "")
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})

    assert flaky.restart(False, False) == Counter([CONNECTOR])
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})
    assert flaky.restart(False, True) == Counter()
    assert flaky.restart(True, True) == Counter([TASK1])  # still broken: fails again
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})
    produced = topic_keys(flaky.pipeline.settings, flaky.topic)
    assert set(produced) == {b"%d" % i for i in range(COUNT) if i % 4 in (0, 2)}  # task 0's shards only

    flaky.tasks_marker.unlink()
    assert flaky.tick() == Counter()  # fixed, but FAILED until restarted: still no data
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})
    assert topic_keys(flaky.pipeline.settings, flaky.topic) == produced

    assert flaky.restart(True, True) == Counter([TASK1])
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert flaky.restart(True, False) == Counter([CONNECTOR, TASK0, TASK1])
    assert topic_keys(flaky.pipeline.settings, flaky.topic) == ids(COUNT)


def test_restarted_failed_task_of_a_paused_connector_reports_paused(flaky: Restarts) -> None:
    """A FAILED task does not become PAUSED with its connector (docs/state-machine.md#pause-and-resume);
    restarted, it comes back
    in the current target state (PAUSED), and runs again once the connector is resumed."""
    flaky.tasks_marker.touch()
    flaky.declare()
    flaky.tick()
    flaky.declare(state="paused")
    flaky.tick()
    assert flaky.pipeline.states("flaky") == ("PAUSED", {0: "PAUSED", 1: "FAILED"})

    flaky.tasks_marker.unlink()
    assert flaky.restart(True, True) == Counter([TASK1])
    assert flaky.pipeline.states("flaky") == ("PAUSED", {0: "PAUSED", 1: "PAUSED"})
    history = [state for key, state in flaky.pipeline.status_history() if key == TASK1]
    assert history[-2:] == ["RESTARTING", "PAUSED"]

    flaky.declare(state="running")
    flaky.pipeline.ticks(2)
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert topic_keys(flaky.pipeline.settings, flaky.topic) == ids(COUNT)


def test_a_failed_connector_starts_again_when_its_config_is_updated(flaky: Restarts) -> None:
    """Connect restarts a FAILED connector on reconfiguration. The tick tells "updated since it
    failed" from our own failure mark, not from the status's generation: every status of ours
    is written at generation 0, under any Java worker's (docs/compatibility.md)."""
    flaky.connector_marker.touch()
    flaky.declare()
    flaky.tick()
    flaky.connector_marker.unlink()
    flaky.tick()
    assert flaky.pipeline.states("flaky") == ("FAILED", {})  # fixed, config unchanged: still FAILED
    flaky.pipeline.set("flaky", config={**flaky.pipeline.manifests["flaky"]["spec"]["config"], "batch.size": 50})
    flaky.tick()
    assert flaky.pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    generations = {
        json.loads(message.value)["generation"]
        for message in read_to_end(flaky.pipeline.settings, flaky.pipeline.settings.topics.status)
        if message.value is not None and (message.key or b"").startswith(b"status-connector-")
    }
    assert generations == {0}


def test_restart_records_from_before_the_first_tick_are_history(flaky: Restarts) -> None:
    """Java ignores the restart records it reads while starting; so does the first tick on a
    group. A restart our own `apply` wrote before that tick is still executed, once, and one
    written after the first tick (e.g. by Java's REST API) is executed by the next."""
    flaky.declare()
    settings = flaky.pipeline.settings
    # What a Java worker left: the connector's statuses, and a restart request it handled.
    java = InstanceStatus(state=InstanceState.RUNNING, worker_id="10.0.0.5:8083", generation=4)
    with TransactionalWriter(settings, transactional_id=f"java-{settings.group_id}") as writer:
        writer.write([
            rec.connector_status_record("flaky", java),
            rec.task_status_record("flaky", 0, java),
            rec.restart_record("flaky", include_tasks=True, only_failed=False),
        ])
    flaky.pipeline.set("flaky", restart={"id": "before-first-run", "includeTasks": False, "onlyFailed": False})
    paths = [str(flaky.pipeline.dir)]
    flaky.pipeline.worker.apply(load_or_raise(paths), manifest_paths=paths)  # `reconciler apply`

    before = flaky.pipeline.restarting()
    flaky.pipeline.worker.work()  # the first tick: only the apply's request (connector only)
    assert flaky.pipeline.restarting() - before == Counter([CONNECTOR])
    assert flaky.tick() == Counter()

    with TransactionalWriter(settings, transactional_id=f"java-{settings.group_id}") as writer:
        writer.write([rec.restart_record("flaky", include_tasks=True, only_failed=False)])
    assert flaky.tick() == Counter([CONNECTOR, TASK0, TASK1])
