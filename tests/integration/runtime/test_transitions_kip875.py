"""KIP-875 target-state transitions (acceptance cases A1–A12, docs/state-machine.md#acceptance-cases) as manifest edits + ticks,
on the real broker and the shared SparkSession.

Each test drives a `datagen` source → topic → `parquet-sink` pipeline and checks the status
topic (connector and task states, task statuses gone when STOPPED), the config topic (task
configs committed, zero-task commits) and the data: nothing moves while a connector is PAUSED
or STOPPED, and after resuming every id lands exactly once in the topic and in Parquet.

"""

from __future__ import annotations

from pathlib import Path

from run_support import FAULTY_SOURCE, Pipeline, ids, parquet_keys, pipeline, topic_keys

__all__ = ["pipeline"]  # the fixture

COUNT = 1500  # ids; 2 tasks × 150 per batch → 5 source ticks


def declare_pair(pipeline: Pipeline, out: Path, *, source_state: str = "running", sink_state: str = "running") -> None:
    topic = pipeline.topic("orders", 2)
    pipeline.connector(
        "src",
        "datagen",
        {"topic": topic, "count": COUNT, "record.bytes": 60, "shards": 4},
        tasks_max=2,
        state=source_state,
    )
    pipeline.connector(
        "sink",
        "parquet-sink",
        {"topics": topic, "path": str(out), "flush.records": 1000},
        tasks_max=2,
        state=sink_state,
    )


def drain(pipeline: Pipeline, out: Path, max_ticks: int = 12) -> None:
    """Tick until the source produced every id and the sink archived them; then compare ids."""
    for _ in range(max_ticks):
        if min(counts(pipeline, out)) >= COUNT:
            break
        pipeline.tick()
    assert topic_keys(pipeline.settings, pipeline.topic("orders")) == ids(COUNT)
    assert parquet_keys(out) == ids(COUNT)


def counts(pipeline: Pipeline, out: Path) -> tuple[int, int]:
    """(records in the topic, rows in Parquet)."""
    in_topic = sum(topic_keys(pipeline.settings, pipeline.topic("orders")).values())
    return in_topic, sum(parquet_keys(out).values())


def test_running_stopped_running(pipeline: Pipeline, tmp_path: Path) -> None:
    """Cases 1 and 2: stop twice (idempotent), resume twice; data resumes without loss or duplicates."""
    out = tmp_path / "parquet"
    declare_pair(pipeline, out)
    src = pipeline.tick().connector("src")
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.states("sink") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert src is not None and [t.records for t in src.tasks] == [150, 150]
    pipeline.tick()
    moved = counts(pipeline, out)
    assert moved[0] == 600 and moved[1] > 0

    pipeline.set("src", state="stopped")
    pipeline.set("sink", state="stopped")
    for _ in range(2):
        report = pipeline.tick()
        assert report.works == 0
        for name in ("src", "sink"):
            assert pipeline.states(name) == ("STOPPED", {})
            live = pipeline.state(name)
            assert live.task_count == 0 and live.task_configs == []
        assert counts(pipeline, out) == moved  # nothing moves while STOPPED
    # The second stop wrote nothing new: no extra commit, no status rewrite.
    assert report.records_written == 0

    pipeline.set("src", state="running")
    pipeline.set("sink", state="running")
    pipeline.tick()
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.state("src").task_count == 2
    pipeline.tick()
    assert pipeline.states("sink") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    drain(pipeline, out)


def test_running_paused_stopped_paused_running(pipeline: Pipeline, tmp_path: Path) -> None:
    """Cases 3–6: pause twice, PAUSED → STOPPED, STOPPED → PAUSED (0 tasks), PAUSED → RUNNING."""
    out = tmp_path / "parquet"
    declare_pair(pipeline, out)
    pipeline.ticks(2)
    committed_configs = pipeline.config_records("task-src-")

    pipeline.set("src", state="paused")
    pipeline.set("sink", state="paused")
    moved = counts(pipeline, out)
    for _ in range(2):  # case 3, twice: idempotent
        report = pipeline.tick()
        assert report.works == 0
        for name in ("src", "sink"):
            assert pipeline.states(name) == ("PAUSED", {0: "PAUSED", 1: "PAUSED"})
            assert pipeline.state(name).task_count == 2  # paused tasks keep their configs
        assert counts(pipeline, out) == moved
    assert report.records_written == 0
    assert pipeline.config_records("task-src-") == committed_configs  # no regeneration while paused

    pipeline.set("src", state="stopped")  # case 4
    pipeline.tick()
    assert pipeline.states("src") == ("STOPPED", {})
    assert pipeline.state("src").task_configs == []

    pipeline.set("src", state="paused")  # case 5: paused with zero tasks
    pipeline.tick()
    assert pipeline.states("src") == ("PAUSED", {})
    assert pipeline.state("src").task_count == 0
    assert counts(pipeline, out) == moved

    pipeline.set("src", state="running")  # case 6: tasks regenerated
    pipeline.set("sink", state="running")
    pipeline.tick()
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.states("sink") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.state("src").task_count == 2
    drain(pipeline, out)


def test_create_paused_or_stopped_and_delete(pipeline: Pipeline, tmp_path: Path) -> None:
    """Cases 7, 11 and 12: created PAUSED → no tasks until resumed; created STOPPED → an empty
    task set; deleting connectors (after transitions, stopped, created paused/stopped) removes
    their configs and statuses."""
    events = pipeline.topic("events", 1)
    config = {"topic": events, "count": 300}
    pipeline.connector("born-paused", "datagen", config, state="paused", tasks_max=2)
    pipeline.connector("born-stopped", "datagen", config, state="stopped")
    pipeline.connector("moved-around", "datagen", {**config, "topic": pipeline.topic("other")}, tasks_max=2)
    pipeline.connector("stays", "datagen", {**config, "count": 0})
    pipeline.tick()
    assert pipeline.states("born-paused") == ("PAUSED", {})
    assert pipeline.state("born-paused").task_count is None  # never asked for task configs
    assert pipeline.states("born-stopped") == ("STOPPED", {})
    assert pipeline.state("born-stopped").task_count == 0  # the empty commit exists
    assert pipeline.states("moved-around") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert sum(topic_keys(pipeline.settings, events).values()) == 0

    pipeline.set("moved-around", state="paused")
    pipeline.tick()
    pipeline.set("moved-around", state="stopped")
    pipeline.set("born-paused", state="running")
    pipeline.tick()
    assert pipeline.states("moved-around") == ("STOPPED", {})
    assert pipeline.states("born-paused") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert topic_keys(pipeline.settings, events) == ids(300)

    for name in ("born-paused", "born-stopped", "moved-around"):
        pipeline.remove(name)
    report = pipeline.tick()
    assert report.applied is not None and report.applied.records_written > 0
    live = pipeline.live()
    for name in ("born-paused", "born-stopped", "moved-around"):
        gone = live.connector(name)
        assert gone is None or (not gone.exists and gone.connector_status is None and not gone.task_statuses), name
    assert [c.name for c in report.connectors] == ["stays"]
    assert pipeline.states("stays") == ("RUNNING", {0: "RUNNING"})
    # Deleting writes no task records or commits (Connect leaves them; they are ignored).
    assert pipeline.tick().records_written == 0


def test_failed_connector_can_be_stopped_fixed_and_resumed(pipeline: Pipeline, tmp_path: Path) -> None:
    """Cases 8 and 9: a connector FAILED on start (no tasks) is stopped → STOPPED; with its
    config fixed it resumes → RUNNING with tasks. And, as Connect restarts a connector on
    reconfiguration, fixing the config of a FAILED running connector brings it up too.
    (An invalid config never gets this far from a manifest: `apply` refuses it. The plugin
    fails on start instead, while its config names a marker file that exists.)"""
    events = pipeline.topic("events", 1)
    marker = tmp_path / "connector-broken"
    marker.touch()
    failing = {"fail.connector.if.exists": str(marker)}
    pipeline.connector("broken", FAULTY_SOURCE, {"topic": events, "count": 100, **failing}, tasks_max=2)
    pipeline.connector("broken-too", FAULTY_SOURCE, {"topic": events, "count": 50, "shards": 1, **failing})
    pipeline.tick()
    for name in ("broken", "broken-too"):
        live = pipeline.state(name)
        assert live.connector_status is not None and live.connector_status.state.value == "FAILED"
        assert live.connector_status.trace is not None and "fails on purpose" in live.connector_status.trace
        assert live.task_count is None and not live.task_statuses

    pipeline.set("broken", state="stopped")  # case 8
    pipeline.tick()
    assert pipeline.states("broken") == ("STOPPED", {})
    assert pipeline.state("broken").task_count == 0

    pipeline.set("broken", state="running", config={"topic": events, "count": 100})  # case 9
    pipeline.set("broken-too", config={"topic": events, "count": 50, "shards": 1})
    pipeline.tick()
    assert pipeline.states("broken") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.states("broken-too") == ("RUNNING", {0: "RUNNING"})
    keys = topic_keys(pipeline.settings, events)
    assert keys == ids(100) + ids(50)  # both ranges, each id once per connector


def test_connector_whose_stop_throws_is_still_stopped_and_resumes(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 10: `stop()` is called once when a RUNNING connector is stopped (and when paused);
    when it raises, the connector is STOPPED with no tasks all the same, and resumes later.
    Pausing differs, as in Java's `WorkerConnector.suspend`: a `stop()` that raises then fails
    the connector (its tasks paused), until a restart."""
    events = pipeline.topic("events", 1)
    stops, broken_stop = tmp_path / "stops", tmp_path / "stop-fails"
    broken_stop.touch()
    config = {"topic": events, "count": 600, "fail.stop.if.exists": str(broken_stop), "stop.log": str(stops)}
    pipeline.connector("src", FAULTY_SOURCE, config, tasks_max=2)
    pipeline.tick()
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert not stops.exists()  # a running connector is not stopped

    pipeline.set("src", state="stopped")
    for _ in range(2):
        pipeline.tick()
        assert pipeline.states("src") == ("STOPPED", {})
        assert pipeline.state("src").task_count == 0
    assert stops.read_text().splitlines() == ["stop"]  # once, though it raised

    moved = topic_keys(pipeline.settings, events)
    pipeline.set("src", state="running")
    pipeline.tick()
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert sum(topic_keys(pipeline.settings, events).values()) > sum(moved.values())
    pipeline.set("src", state="paused")  # pausing stops the Connector instance too
    for _ in range(2):
        pipeline.tick()
        assert pipeline.states("src") == ("FAILED", {0: "PAUSED", 1: "PAUSED"})
    status = pipeline.state("src").connector_status
    assert status is not None and "the connector's stop() fails on purpose" in (status.trace or "")
    assert stops.read_text().splitlines() == ["stop", "stop"]  # once more: the failed instance is not stopped again

    pipeline.set("src", state="running")  # a FAILED instance does not resume: it waits for a restart
    pipeline.tick()
    assert pipeline.states("src") == ("FAILED", {0: "UNASSIGNED", 1: "UNASSIGNED"})
    broken_stop.unlink()
    pipeline.set("src", restart={"id": "after-pause", "includeTasks": False, "onlyFailed": False})
    pipeline.tick()
    assert pipeline.states("src") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})


def test_created_stopped_offsets_altered_before_the_first_resume(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 12, offsets half: connectors created STOPPED get their offsets altered (source and
    sink) in the same tick, before any task exists; resumed, they start from those offsets."""
    topic = pipeline.topic("altered", 1)
    out = tmp_path / "parquet"
    source_offsets = {"id": "start-at-40", "action": "alter", "offsets": [{"partition": {"shard": 0}, "offset": {"position": 40}}]}
    sink_offsets = {
        "id": "skip-20",
        "action": "alter",
        "offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 20}}],
    }
    pipeline.connector("src", "datagen", {"topic": topic, "count": 100, "shards": 1}, state="stopped")
    pipeline.set("src", offsets=source_offsets)
    pipeline.connector("sink", "parquet-sink", {"topics": topic, "path": str(out)}, state="stopped")
    pipeline.set("sink", offsets=sink_offsets)
    report = pipeline.tick()
    assert sorted((o.connector, o.status) for o in report.offsets) == [("sink", "applied"), ("src", "applied")]
    assert pipeline.states("src") == ("STOPPED", {}) and pipeline.states("sink") == ("STOPPED", {})
    assert report.works == 0

    pipeline.set("src", state="running")
    report = pipeline.tick()
    assert report.offsets == []  # applied once
    assert topic_keys(pipeline.settings, topic) == ids(100) - ids(40)  # from position 40 on

    pipeline.set("sink", state="running")
    pipeline.tick()
    assert parquet_keys(out) == ids(100) - ids(60)  # topic offsets 20… hold ids 60…
