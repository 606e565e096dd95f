"""Crash tests: `reconciler run --once` SIGKILLed at chosen points (RECONCILER_FAILPOINTS, see
reconciler/failpoints.py), then the next run leaves exactly the input in the output —
no id lost, none duplicated — and a restart request still takes effect exactly once.

The crashing runs are real subprocesses (their own driver, JVM and Python workers, killed with
no cleanup); the recovery runs are in-process ticks on the shared SparkSession, to keep Spark
start-ups few: the tests are grouped per side (sink, source, worker), and several crashes hit
one pipeline before it recovers.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path


from crash_support import run_once
from run_support import FAULTY_SOURCE, Pipeline, big_batches, committed_everything, ids, parquet_keys, topic_keys

__all__ = ["big_batches"]  # the fixture

def test_sink_killed_mid_write_and_after_files_loses_and_duplicates_nothing(
    big_batches: Pipeline, tmp_path: Path
) -> None:
    # Enough records that a partition is read in several batches (the sink reader takes up to
    # 10,000 at a time), so there is a "middle" of a write to crash in.
    pipeline, count = big_batches, 40_000
    topic = pipeline.topic("orders", 2)
    source = {"topic": topic, "count": count, "shards": 4, "record.bytes": 40}
    pipeline.connector("src", "datagen", source, tasks_max=2)
    pipeline.tick()
    assert topic_keys(pipeline.settings, topic) == ids(count)
    pipeline.set("src", state="stopped")  # the crashing runs below are about the sink alone
    out = tmp_path / "parquet"
    pipeline.connector("sink", "parquet-sink", {"topics": topic, "path": str(out), "flush.records": 4000}, tasks_max=2)

    run_once(pipeline, "sink.mid_write")  # first file of a partition written, more to read
    partial = parquet_keys(out)
    assert 0 < sum(partial.values()) < count and set(partial.values()) == {1}
    assert not committed_everything(pipeline.settings, "connect-sink", topic)

    run_once(pipeline, "sink.after_files")  # a partition's files in place, its offsets not committed
    assert set(parquet_keys(out).values()) == {1}

    pipeline.tick()  # recovery: files are trusted, nothing is written twice
    assert parquet_keys(out) == ids(count)
    assert committed_everything(pipeline.settings, "connect-sink", topic)
    assert pipeline.states("sink") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})


def test_source_killed_after_commit_loses_and_duplicates_nothing(big_batches: Pipeline, tmp_path: Path) -> None:
    pipeline = big_batches
    topic = pipeline.topic("events", 2)
    out = tmp_path / "parquet"
    # One task: the kill is exactly after its transaction committed, with no other in flight.
    pipeline.connector("src", "datagen", {"topic": topic, "count": 1000, "shards": 4})
    pipeline.connector("sink", "parquet-sink", {"topics": topic, "path": str(out)}, state="paused")

    run_once(pipeline, "source.after_commit")
    assert topic_keys(pipeline.settings, topic) == ids(1000)  # committed, nothing recorded after

    pipeline.set("src", config={"topic": topic, "count": 1500, "shards": 4})
    pipeline.set("sink", state="running")
    pipeline.tick()  # continues from the committed offsets
    assert topic_keys(pipeline.settings, topic) == ids(1500)
    pipeline.tick()
    assert parquet_keys(out) == ids(1500)


def test_source_killed_before_commit_loses_and_duplicates_nothing(big_batches: Pipeline) -> None:
    """The killed run's open transaction is aborted when the task's transactional id is
    initialised again; readers (read_committed) never see its records."""
    pipeline = big_batches
    topic = pipeline.topic("events", 2)
    pipeline.connector("src", "datagen", {"topic": topic, "count": 1000, "shards": 4}, tasks_max=2)
    run_once(pipeline, "source.before_commit")
    pipeline.tick()
    assert topic_keys(pipeline.settings, topic) == ids(1000)


def test_worker_killed_between_its_steps_restarts_once_and_moves_each_id_once(big_batches: Pipeline, tmp_path: Path) -> None:
    pipeline = big_batches
    topic = pipeline.topic("flaky", 2)
    marker = tmp_path / "task-1-broken"
    marker.touch()
    config = {"topic": topic, "count": 400, "shards": 4, "fail.tasks.if.exists": str(marker), "fail.task.ids": "1"}
    pipeline.connector("flaky", FAULTY_SOURCE, config, tasks_max=2)
    pipeline.tick()
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "FAILED"})
    task1 = "status-task-flaky-1"

    # Killed right after RESTARTING is committed: the restart is executed again by the next run
    # (its mark is written with the statuses the restart leads to), and never after that.
    marker.unlink()
    pipeline.set("flaky", restart={"id": "fix-1", "includeTasks": True, "onlyFailed": False})
    run_once(pipeline, "worker.after_restarting")
    everyone = Counter(["status-connector-flaky", "status-task-flaky-0", task1])
    assert pipeline.restarting() == everyone
    assert pipeline.states("flaky") == ("RESTARTING", {0: "RESTARTING", 1: "RESTARTING"})
    pipeline.tick()  # executes the restart (the statuses already say RESTARTING: not rewritten)
    assert pipeline.restarting() == everyone
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    pipeline.tick()  # without the mark, this tick would restart (and write RESTARTING) again
    assert pipeline.restarting() == everyone
    assert topic_keys(pipeline.settings, topic) == ids(400)

    # Killed after new task configs were committed, before the batch: the next run uses them.
    pipeline.set("flaky", tasksMax=3, config={**config, "count": 600})
    run_once(pipeline, "worker.after_task_commit")
    assert pipeline.state("flaky").task_count == 3
    assert topic_keys(pipeline.settings, topic) == ids(400)
    report = pipeline.tick()
    assert report.connector("flaky") is not None
    assert pipeline.config_records("commit-flaky") == [("commit-flaky", {"tasks": 2}), ("commit-flaky", {"tasks": 3})]
    assert topic_keys(pipeline.settings, topic) == ids(600)

    # Killed after the batch, before its statuses and the restart mark: the restart is done
    # again (its effect is the same), the data is not produced twice.
    pipeline.set("flaky", restart={"id": "all-2", "includeTasks": True, "onlyFailed": False}, config={**config, "count": 800})
    run_once(pipeline, "worker.before_status")
    assert topic_keys(pipeline.settings, topic) == ids(800)
    restarted = pipeline.restarting()
    pipeline.tick()
    again = pipeline.restarting() - restarted
    assert again == Counter(["status-connector-flaky", "status-task-flaky-0", task1, "status-task-flaky-2"])
    pipeline.tick()
    assert pipeline.restarting() - restarted == again
    assert pipeline.states("flaky") == ("RUNNING", {0: "RUNNING", 1: "RUNNING", 2: "RUNNING"})
    assert topic_keys(pipeline.settings, topic) == ids(800)
