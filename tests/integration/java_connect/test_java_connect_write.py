"""Our manifests → Java obeys: `reconciler apply` drives a real Java Kafka Connect worker.

Java's FileStreamSourceConnector / FileStreamSinkConnector are declared in our manifests by
class name and applied with our CLI to the `java_connect` worker's group. Java's REST must then
report the declared state, records must flow, and for each operation done both ways — through
our apply on one connector and through Java's REST on another — the config-topic records must
be the same bytes (names swapped). The one normalisation: task configs, which Java writes from
a `HashMap` (its own order), are compared as parsed JSON. The `java_connect` fixture fails a test
whose records made Java log any ERROR.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from java_write_support import (
    FILE_SINK,
    FILE_SOURCE,
    JavaGroup,
    normalised,
    renamed,
    rest_config,
    unique,
    wait_for,
    without_repeated_generations,
)

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest


@pytest.fixture
def java(java_connect: RunningConnect, kafka: KafkaUnderTest, tmp_path: Path) -> JavaGroup:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    return JavaGroup(java_connect, kafka.settings(java_connect.group_id), manifests)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_apply_creates_java_file_connectors_that_run_and_move_records(java: JavaGroup, tmp_path: Path) -> None:
    source, sink, topic = unique("fsrc"), unique("fsink"), unique("lines")
    inbox, outbox = tmp_path / "in.txt", tmp_path / "out.txt"
    inbox.write_text("alpha\nbeta\ngamma\n")
    source_config = {"file": str(inbox), "topic": topic}
    java.declare(source, FILE_SOURCE, source_config)
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": topic})
    start = java.config_end()

    java.apply()

    java.wait_states(source, "RUNNING", {0: "RUNNING"})
    java.wait_states(sink, "RUNNING", {0: "RUNNING"})
    wait_for("the lines to reach the sink's file", lambda: lines(outbox) == ["alpha", "beta", "gamma"] or None)
    with inbox.open("a") as more:
        more.write("delta\n")
    wait_for("a new line to follow", lambda: lines(outbox)[-1:] == ["delta"] or None)
    assert java.agree(source)["type"] == "source" and java.agree(sink)["type"] == "sink"

    # The same create through Java's REST writes the same bytes as our apply did.
    twin = unique("fsrc")
    java.rest("POST", "/connectors", {"name": twin, "config": rest_config(twin, FILE_SOURCE, source_config)})
    java.wait_states(twin, "RUNNING", {0: "RUNNING"})
    ours = java.config_records(source, start)
    theirs = java.config_records(twin, start)
    assert ours[0][0] == f"connector-{source}".encode()
    assert renamed(ours[:1], source, twin) == theirs[:1]
    # What Java wrote next for each (task configs, commit) is the same too.
    assert normalised(renamed(ours, source, twin)) == normalised(theirs)
    java.rest("DELETE", f"/connectors/{twin}")


def assert_same_records(java: JavaGroup, ours: str, twin: str, since: int) -> None:
    """What our apply wrote for `ours` (and Java wrote in reaction) equals, as bytes, what
    Java's REST wrote for `twin` since offset `since`; task configs compared parsed (HashMap)."""
    mine, theirs = java.config_records(ours, since), java.config_records(twin, since)
    assert mine, f"nothing was written for {ours}"
    assert normalised(renamed(mine, ours, twin)) == normalised(theirs)
    plain = [(k, v) for k, v in without_repeated_generations(renamed(mine, ours, twin)) if not k.startswith(b"task-")]
    assert plain == [(k, v) for k, v in without_repeated_generations(theirs) if not k.startswith(b"task-")]  # bytes


def test_pause_update_stop_resume_and_prune_write_what_javas_rest_writes(java: JavaGroup, tmp_path: Path) -> None:
    ours, twin = unique("life"), unique("life")

    def config(name: str, **extra: str) -> dict[str, str]:
        return {"file": str(tmp_path / f"{name}.txt"), "topic": f"{name}-lines", **extra}

    for name in (ours, twin):
        (tmp_path / f"{name}.txt").write_text("one\n")
    since = java.config_end()
    java.declare(ours, FILE_SOURCE, config(ours))
    java.apply()
    java.rest("POST", "/connectors", {"name": twin, "config": rest_config(twin, FILE_SOURCE, config(twin))})
    for name in (ours, twin):
        java.wait_states(name, "RUNNING", {0: "RUNNING"})
    assert_same_records(java, ours, twin, since)
    wait_for("the first line in the topic", lambda: java.topic_values(f"{ours}-lines") == ["one"] or None)

    steps = [  # (our manifest change, the same through Java's REST, the states Java reaches)
        ({"state": "paused"}, ("PUT", "pause", None), ("PAUSED", {0: "PAUSED"})),
        ({"state": "paused", "extra": {"batch.size": "100"}}, ("PUT", "config", True), ("PAUSED", {0: "PAUSED"})),
        ({"state": "stopped", "extra": {"batch.size": "100"}}, ("PUT", "stop", None), ("STOPPED", {})),
        ({"state": "running", "extra": {"batch.size": "100"}}, ("PUT", "resume", None), ("RUNNING", {0: "RUNNING"})),
    ]
    for change, (method, verb, body), (state, tasks) in steps:
        since = java.config_end()
        extra = change.get("extra", {})
        java.declare(ours, FILE_SOURCE, config(ours, **extra), state=change["state"])
        java.apply()
        payload = rest_config(twin, FILE_SOURCE, config(twin, **extra)) if body else None
        java.rest(method, f"/connectors/{twin}/{verb}", payload)
        for name in (ours, twin):
            java.wait_states(name, state, tasks)
        assert_same_records(java, ours, twin, since)
        java.agree(ours)

    with (tmp_path / f"{ours}.txt").open("a") as more:
        more.write("two\n")
    wait_for("a line written after the resume", lambda: java.topic_values(f"{ours}-lines")[-1:] == ["two"] or None)

    since = java.config_end()
    java.forget(ours)
    java.apply("--prune", "--allow-empty")  # its only manifest is gone: a deliberate empty set
    java.rest("DELETE", f"/connectors/{twin}")
    for name in (ours, twin):
        java.wait_gone(name)
    assert java.config_records(ours, since) == [
        (f"connector-{ours}".encode(), None),
        (f"target-state-{ours}".encode(), None),
    ]
    assert_same_records(java, ours, twin, since)


def restarting(java: JavaGroup, name: str) -> tuple[int, int]:
    """How often Java wrote RESTARTING for the connector and for its task 0."""
    count = lambda key: sum(v["state"] == "RESTARTING" for v in java.status_values(key))  # noqa: E731
    return count(f"status-connector-{name}"), count(f"status-task-{name}-0")


def test_restart_block_restarts_what_kip745_says_once(java: JavaGroup, tmp_path: Path) -> None:
    name, twin = unique("rst"), unique("rst")
    config = {"file": str(tmp_path / "in.txt"), "topic": unique("rst-lines")}
    java.declare(name, FILE_SOURCE, config)
    java.apply()
    java.rest("POST", "/connectors", {"name": twin, "config": rest_config(twin, FILE_SOURCE, config)})
    for each in (name, twin):
        java.wait_states(each, "RUNNING", {0: "RUNNING"})

    # Nothing is FAILED (a failing Java task logs an ERROR, which the fixture forbids), so:
    # the connector alone; then the connector and its task; then onlyFailed: nothing at all.
    cases = [("r1", False, False, (1, 0)), ("r2", True, False, (2, 1)), ("r3", True, True, (2, 1))]
    for request_id, include_tasks, only_failed, expected in cases:
        since = java.config_end()
        restart = {"id": request_id, "includeTasks": include_tasks, "onlyFailed": only_failed}
        java.declare(name, FILE_SOURCE, config, restart=restart)
        java.apply()
        java.apply()  # the same id again: applied once, never twice
        assert java.config_records(name, since) == [
            (f"restart-connector-{name}".encode(),
             f'{{"include-tasks":{str(include_tasks).lower()},"only-failed":{str(only_failed).lower()}}}'.encode()),
        ]
        if include_tasks:  # (without tasks Java's REST restarts in place and writes no record)
            query = f"includeTasks={str(include_tasks).lower()}&onlyFailed={str(only_failed).lower()}"
            java.rest("POST", f"/connectors/{twin}/restart?{query}")
            wait_for(f"Java to write {twin}'s restart record", lambda s=since: java.config_records(twin, s) or None)
            assert renamed(java.config_records(name, since), name, twin) == java.config_records(twin, since)
        wait_for(f"{request_id} to restart {expected} (connector, task) times in all",
                 lambda e=expected: restarting(java, name) == e or None)
        java.wait_states(name, "RUNNING", {0: "RUNNING"})

    # r3 restarted nothing: a pause applied after it is handled after it (Java handles restart
    # requests before target states in a tick), and still nothing more was restarted.
    java.declare(name, FILE_SOURCE, config, state="paused")
    java.apply()
    java.wait_states(name, "PAUSED", {0: "PAUSED"})
    assert restarting(java, name) == (2, 1)
    java.agree(name)


def test_offsets_alter_and_reset_make_java_resume_from_them(java: JavaGroup, tmp_path: Path) -> None:
    source, twin, sink = unique("off"), unique("off"), unique("offsink")
    topic, outbox = unique("off-lines"), tmp_path / "out.txt"
    for name in (source, twin):
        (tmp_path / f"{name}.txt").write_text("a\nb\nc\n")

    def config(name: str) -> dict[str, str]:  # the twin's lines go to a topic of their own
        return {"file": str(tmp_path / f"{name}.txt"), "topic": topic if name == source else f"{name}-lines"}

    java.declare(source, FILE_SOURCE, config(source))
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": topic})
    java.apply()
    wait_for("a, b, c through source and sink", lambda: lines(outbox) == ["a", "b", "c"] or None)
    java.rest("POST", "/connectors", {"name": twin, "config": rest_config(twin, FILE_SOURCE, config(twin))})

    # Alter on a stopped connector: Java resumes reading the file from byte 2 (after "a\n").
    java.declare(source, FILE_SOURCE, config(source), state="stopped")
    java.apply()
    java.rest("PUT", f"/connectors/{twin}/stop")
    for name in (source, twin):
        java.wait_states(name, "STOPPED", {})
    since = _end(java, java.settings.topics.offsets)
    position = lambda name: {"partition": {"filename": str(tmp_path / f"{name}.txt")}, "offset": {"position": 2}}  # noqa: E731
    alter = {"id": "rewind-1", "action": "alter", "offsets": [position(source)]}
    java.declare(source, FILE_SOURCE, config(source), offsets=alter)
    java.apply()
    java.wait_states(source, "RUNNING", {0: "RUNNING"})
    wait_for("b and c again", lambda: lines(outbox) == ["a", "b", "c", "b", "c"] or None)
    java.rest("PATCH", f"/connectors/{twin}/offsets", {"offsets": [position(twin)]})
    assert_same_offsets(java, source, twin, since, b'{"position":2}')

    # Reset while running: stopped first (Java must report it), offsets gone, then from the start.
    since = _end(java, java.settings.topics.offsets)
    java.declare(source, FILE_SOURCE, config(source), offsets={"id": "again-1", "action": "reset"})
    java.apply()
    wait_for("a, b and c once more", lambda: lines(outbox) == ["a", "b", "c", "b", "c", "a", "b", "c"] or None)
    java.rest("DELETE", f"/connectors/{twin}/offsets")
    assert_same_offsets(java, source, twin, since, None)

    # A sink reset: Java's consumer group is deleted, the sink reads the topic from its start.
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": topic}, offsets={"id": "sink-reset", "action": "reset"})
    java.apply()
    java.wait_states(sink, "RUNNING", {0: "RUNNING"})
    wait_for("the topic written out twice", lambda: len(lines(outbox)) == 16 or None)
    assert lines(outbox)[8:] == ["a", "b", "c", "b", "c", "a", "b", "c"]
    java.agree(source)
    java.rest("DELETE", f"/connectors/{twin}")


def _end(java: JavaGroup, topic: str) -> dict[int, int]:
    from reconciler.kafka.io.consume import end_offsets

    return end_offsets(java.settings, topic)


def assert_same_offsets(java: JavaGroup, ours: str, twin: str, since: dict[int, int], value: bytes | None) -> None:
    """Our offsets records for `ours` equal Java's for `twin`: key and value bytes, and each on
    the partition Java's partitioner picks. Only records with `value` are compared: Java's
    resumed task commits its own offsets right after ours."""
    from reconciler.kafka.io.consume import read_to_end
    from reconciler.kafka.formats.partitioner import partition_for

    def written(name: str) -> list[tuple[int, bytes, bytes | None]]:
        prefix = f'["{name}",'.encode()
        return [
            (m.partition, m.key or b"", m.value)
            for m in read_to_end(java.settings, java.settings.topics.offsets)
            if m.offset >= since.get(m.partition, 0) and (m.key or b"").startswith(prefix) and m.value == value
        ]

    theirs = wait_for(f"Java to write {twin}'s offsets", lambda: written(twin) or None)
    mine = written(ours)
    assert [(k.replace(ours.encode(), twin.encode()), v) for _, k, v in mine] == [(k, v) for _, k, v in theirs]
    partitions = java.settings.topics.offsets_partitions
    assert all(p == partition_for(k, partitions) for p, k, _ in mine + theirs)  # where Java looks


def test_run_leaves_java_connectors_to_the_connect_worker(
    java: JavaGroup, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`reconciler run` applies the manifests but never starts, reports on or restarts a connector
    of a Java class: the group's Connect worker does, and the two never write over each other."""
    from reconciler.cli.main import main

    name, ours = unique("runj"), "reconciler-test:1"
    config = {"file": str(tmp_path / "in.txt"), "topic": unique("runj-lines")}
    java.declare(name, FILE_SOURCE, config, restart={"id": "r1", "includeTasks": True})
    settings = java.settings
    run = ["run", str(java.dir), "--once", "--worker-id", ours,
           "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]

    assert main(run) == 0
    prefix = "  left to the group's Kafka Connect workers (not Python connectors): "
    [line] = [line for line in capsys.readouterr().out.splitlines() if line.startswith(prefix)]
    assert name in line.removeprefix(prefix).split(", ")  # beside other tests' connectors of the shared worker
    java.wait_states(name, "RUNNING", {0: "RUNNING"})
    java.declare(name, FILE_SOURCE, config, state="paused")
    assert main(run) == 0
    java.wait_states(name, "PAUSED", {0: "PAUSED"})
    assert main(run) == 0

    statuses = java.status_values(f"status-connector-{name}") + java.status_values(f"status-task-{name}-0")
    assert statuses and all(s["worker_id"] == java.worker.url.removeprefix("http://") for s in statuses)
    tasks = [json.loads(v or b"{}") for k, v in java.config_records(name, 0) if k.startswith(b"task-")]
    assert tasks and all(t["properties"]["task.class"].endswith("FileStreamSourceTask") for t in tasks)
    assert not [k for k, _ in java.config_records(name, 0) if k.startswith(b"tasks-fencing-")]
    java.agree(name)


def test_apply_never_fences_the_config_producer_of_a_java_leader(java: JavaGroup, tmp_path: Path) -> None:
    """A Java leader with exactly-once support (`preparing` or `enabled`) writes the config topic
    under transactional id `connect-cluster-<group>` (`DistributedConfig.transactionalProducerId`).
    The session's worker runs without it, so a producer holding that id stands in for such a
    leader, with a transaction open while we apply: our apply claims its own id and leaves
    that transaction to commit (docs/compatibility.md, "Write side: deliberate differences")."""
    from confluent_kafka import Producer

    settings = java.settings
    leader = Producer({"bootstrap.servers": settings.bootstrap_servers,
                       "transactional.id": f"connect-cluster-{settings.group_id}"})
    leader.init_transactions(settings.timeout_s)
    leader.begin_transaction()
    leader.produce(unique("leader-scratch"), b"in flight")
    java.declare(unique("fence"), FILE_SOURCE, {"file": str(tmp_path / "in.txt"), "topic": unique("fence-lines")})
    java.apply()
    leader.commit_transaction(settings.timeout_s)  # raises when fenced
    assert settings.transactional_id != f"connect-cluster-{settings.group_id}"


def test_offsets_of_a_java_connector_wait_for_a_worker_to_report_it_stopped(
    kafka: KafkaUnderTest, group_id: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No Connect worker runs this group: nobody reports the connector stopped, so apply stops
    it and leaves its offsets alone (`waiting`) instead of racing tasks it cannot see."""
    from reconciler.cli.main import main
    from reconciler.kafka.io.store import read_live_state

    group = JavaGroup(None, kafka.settings(group_id), tmp_path)  # type: ignore[arg-type]
    config = {"file": str(tmp_path / "in.txt"), "topic": "lines"}
    group.declare("src", FILE_SOURCE, config)
    args = ["apply", str(tmp_path), "--bootstrap-servers", kafka.bootstrap, "--group-id", group_id]
    assert main(args) == 0
    args += ["--timeout", "5"]  # how long the offsets request waits for a worker's STOPPED
    offsets = {"id": "o1", "action": "alter",
               "offsets": [{"partition": {"filename": config["file"]}, "offset": {"position": 1}}]}
    group.declare("src", FILE_SOURCE, config, offsets=offsets)
    assert main(args) == 0
    assert "has not reported it STOPPED with no tasks yet" in capsys.readouterr().out
    live = read_live_state(group.settings)
    connector = live.connector("src")
    assert connector is not None and connector.target_state.value == "STOPPED" and connector.task_count == 0
    assert not live.is_applied("src", "offsets", "o1")
