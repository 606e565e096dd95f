"""`reconciler run` (looping) and `reconciler watch` as real processes: ticks repeat, manifests
are re-read when they change (an invalid edit keeps the previous ones running), SIGINT/SIGTERM
finish the current batch, stop Spark and exit 0 with nothing left running; a SIGKILLed `watch`'s
statuses are taken over by the next runner, whose stop releases them."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from reconciler.core.live import InstanceStatus, LiveState
from reconciler.kafka.formats.records import decode_status
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from loop_support import ROOT, WAIT_S, Running, eventually, manifest, write
from run_support import child_env, create_topic, ids, topic_keys



def test_run_loop_repeats_and_exits_0_on_sigint_without_starting_spark(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    write(tmp_path / "c.yaml", manifest("idle", {"topic": "never", "count": 10}, state="stopped"))
    run = Running(["run", str(tmp_path), "--interval", "0.5"], kafka_settings)
    try:
        run.wait_for_line("idle: STOPPED")
        run.wait_for_line("idle: STOPPED")  # a second tick, by itself
        assert run.stop(signal.SIGINT) == 0
    finally:
        run.close()
    assert "SIGINT: finishing the current batch, then stopping" in run.output()
    assert "Spark" not in run.output()  # no task work: Spark never started


def test_watch_reloads_manifests_keeps_the_last_valid_ones_and_stops_on_sigterm(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    topic = f"{kafka_settings.group_id}.watched"
    create_topic(kafka_settings, topic, 1)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    file = manifests / "gen.yaml"
    write(file, manifest("gen", {"topic": topic, "count": 300, "batch.size": 100}, tasks_max=2))
    args = ["watch", str(manifests), "--interval", "2", "--worker-id", "watcher:7"]
    watch = Running(args + ["--spark-conf", "spark.driver.memory=768m"], kafka_settings)
    try:
        watch.wait_for_line("gen: RUNNING")
        eventually(lambda: sum(topic_keys(kafka_settings, topic).values()) == 300)

        file.write_text(file.read_text().replace("tasksMax: 2", "tasksMax: two"))
        watch.wait_for_line("still running the previous valid ones")
        watch.wait_for_line("gen: RUNNING")  # the previous manifests keep being applied

        write(file, manifest("gen", {"topic": topic, "count": 300}, state="paused", tasks_max=2))
        watch.wait_for_line("manifests reloaded: 1 connector(s)")
        watch.wait_for_line("gen: PAUSED")
        live = read_live_state(kafka_settings).connector("gen")
        assert live is not None and live.connector_status is not None
        assert live.connector_status.state.value == "PAUSED" and live.connector_status.worker_id == "watcher:7"
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()
    assert "SIGTERM: finishing the current batch, then stopping" in watch.output()
    assert topic_keys(kafka_settings, topic) == ids(300)


def owners(live: LiveState) -> dict[str, tuple[str, str | None]]:
    """Every status of the group: key → (state, worker id)."""
    found: dict[str, tuple[str, str | None]] = {}
    for name, connector in live.connectors.items():
        if connector.connector_status is not None:
            found[f"status-connector-{name}"] = (connector.connector_status.state.value, connector.connector_status.worker_id)
        for task, status in connector.task_statuses.items():
            found[f"status-task-{name}-{task}"] = (status.state.value, status.worker_id)
    return found


def written_by(settings: KafkaSettings, worker_id: str) -> list[tuple[str, str]]:
    """The status records `worker_id` wrote, in the order of each key's partition: (key, state)."""
    found = []
    for message in read_to_end(settings, settings.topics.status):
        status = None if message.value is None else decode_status(message.value)
        if isinstance(status, InstanceStatus) and status.worker_id == worker_id:
            found.append(((message.key or b"").decode(), status.state.value))
    return found


def test_a_killed_watchs_statuses_are_taken_over_by_the_next_run_and_released(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """Issue 27, item 8: after a SIGKILLed `watch`, `run --once` writes the RUNNING and PAUSED
    statuses the dead worker held under its own id while it runs, and its stop releases every
    one of them to UNASSIGNED (before, they said RUNNING on the dead worker's id for ever)."""
    topic = f"{kafka_settings.group_id}.owned"
    create_topic(kafka_settings, topic, 1)
    write(tmp_path / "gen.yaml", manifest("gen", {"topic": topic, "count": 200, "batch.size": 100}, tasks_max=2))
    write(tmp_path / "idle.yaml", manifest("idle", {"topic": topic, "count": 10}, state="paused"))
    spark = ["--spark-conf", "spark.driver.memory=768m"]
    watch = Running(["watch", str(tmp_path), "--interval", "60", "--worker-id", "doomed:1", *spark], kafka_settings)
    try:
        watch.wait_for_line("gen: RUNNING")
        eventually(lambda: sum(topic_keys(kafka_settings, topic).values()) == 200)
        family = psutil.Process(watch.process.pid).children(recursive=True)
        watch.process.kill()  # no release, no cleanup: what a crash or the OOM killer leaves
        watch.process.wait(timeout=WAIT_S)
        for process in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(family, timeout=30)
    finally:
        watch.close()
    crashed = owners(read_live_state(kafka_settings))
    assert crashed == {
        "status-connector-gen": ("RUNNING", "doomed:1"),
        "status-task-gen-0": ("RUNNING", "doomed:1"),
        "status-task-gen-1": ("RUNNING", "doomed:1"),
        "status-connector-idle": ("PAUSED", "doomed:1"),
        **{key: ("PAUSED", "doomed:1") for key in crashed if key.startswith("status-task-idle-")},
    }

    command = [sys.executable, "-m", "reconciler.cli.main", "run", str(tmp_path), "--once", "--worker-id", "heir:2", *spark]
    command += ["--bootstrap-servers", kafka_settings.bootstrap_servers, "--group-id", kafka_settings.group_id]
    done = subprocess.run(command, cwd=ROOT, env=child_env(), capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr

    assert owners(read_live_state(kafka_settings)) == {key: ("UNASSIGNED", "heir:2") for key in crashed}
    history = written_by(kafka_settings, "heir:2")
    for key, (state, _) in crashed.items():  # while it ran, `status` named the live runner
        assert [s for k, s in history if k == key] == [state, "UNASSIGNED"], (key, history)
    assert f"stopped: {len(crashed)} status(es) now UNASSIGNED" in done.stdout + done.stderr
    assert topic_keys(kafka_settings, topic) == ids(200)
