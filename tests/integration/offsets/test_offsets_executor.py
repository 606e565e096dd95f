"""The offsets executor against the real broker, driven directly (no Spark): every step's
records, Java's key bytes, sink groups, refusals, and the resumable step records."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.kafka.io.store import LiveStore
from reconciler.core.live import ConnectTargetState
from reconciler.app.apply import apply_manifests
from reconciler.kafka.io.store import prepare, read_live_state
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets import model
from reconciler.app.offsets import execute_offsets_request, run_pending_offsets_requests
from reconciler.offsets.sink import commit_offsets
from reconciler.kafka.io.store import read_view
from reconciler.offsets.state import current_body
from offsets_support import (
    CONFIRMING_SOURCE,
    PLAIN_SINK,
    PLAIN_SOURCE,
    REFUSING_SINK,
    config_records,
    create_topic,
    desired_of,
    manifest,
    offsets_records,
    reconciler_records,
    run_tasks,
    write_raw,
    written_since,
)


@pytest.fixture
def sname() -> str:
    """A sink name unique to the test: its consumer group `connect-<name>` is broker-wide."""
    return f"orders-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def sink_topic(kafka_settings: KafkaSettings) -> str:
    topic = f"{kafka_settings.group_id}-orders"
    create_topic(kafka_settings, topic, 2)
    return topic


# --- sink ------------------------------------------------------------------------------------------


def sink_doc(sname: str, topic: str, tmp_path: Path, offsets: str = "", **kwargs: Any) -> str:
    return manifest(sname, "parquet-sink", {"topics": topic, "path": str(tmp_path / "out")}, offsets=offsets, **kwargs)


def test_sink_alter_runs_every_step_and_records_it(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    settings = kafka_settings
    apply_manifests(
        settings, desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    run_tasks(settings, sname, 2)
    commit_offsets(settings, sname, f"connect-{sname}", {(sink_topic, 0): 50, (sink_topic, 1): 70}, model.OffsetsAction.ALTER)
    offsets = f"""\
        id: rewind-1
        action: alter
        offsets:
          - partition: {{kafka_topic: {sink_topic}, kafka_partition: 0}}
            offset: {{kafka_offset: 10}}
        """
    desired = desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path, offsets))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )

    assert outcome.status == "applied", outcome.render()
    assert outcome.message == model.success_message(model.OffsetsAction.ALTER, True)  # parquet-sink confirms
    assert outcome.steps == ("stop", "snapshot", "alter", "return")
    # Augment only: partition 1 keeps its offset.
    assert sink_group_offsets(settings, f"connect-{sname}") == {(sink_topic, 0): 10, (sink_topic, 1): 70}
    # Stop = zero-task commit then STOPPED; then back to the declared state.
    assert config_records(settings, sname)[-3:] == [
        (f"commit-{sname}", b'{"tasks":0}'),
        (f"target-state-{sname}", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        (f"target-state-{sname}", b'{"state":"STARTED","state.v2":"STARTED"}'),
    ]
    state = read_view(settings)
    assert state.live.is_applied(sname, "offsets", "rewind-1")
    assert sname not in state.progress
    assert state.snapshot(sname, "rewind-1") == model.sink_body({(sink_topic, 0): 50, (sink_topic, 1): 70})
    # Never twice: a second run finds the id applied and writes nothing.
    before = reconciler_records(settings, sname)
    assert run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    ) == []
    again = execute_offsets_request(settings, desired[0], store=LiveStore.one_shot(settings))
    assert again.status == "already-applied"
    assert reconciler_records(settings, sname) == before


def group_of(settings: KafkaSettings, sname: str) -> dict[tuple[str, int], int]:
    return sink_group_offsets(settings, f"connect-{sname}")


def test_sink_null_offset_removes_that_partition_only(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    settings = kafka_settings
    doc = manifest(sname, PLAIN_SINK, {"topics": sink_topic})
    apply_manifests(settings, desired_of(tmp_path, doc), PlanOptions(), store=LiveStore.one_shot(settings))
    commit_offsets(settings, sname, f"connect-{sname}", {(sink_topic, 0): 50, (sink_topic, 1): 70}, model.OffsetsAction.ALTER)
    offsets = f"""\
        id: drop-0
        action: alter
        offsets:
          - partition: {{kafka_topic: {sink_topic}, kafka_partition: 0}}
            offset: null
        """
    desired = desired_of(tmp_path, manifest(sname, PLAIN_SINK, {"topics": sink_topic}, offsets=offsets))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "applied", outcome.render()
    assert outcome.message == model.success_message(model.OffsetsAction.ALTER, False)
    assert outcome.message.startswith("The Connect framework-managed offsets for this connector have been altered")
    assert group_of(settings, sname) == {(sink_topic, 1): 70}


def test_sink_reset_deletes_the_group_and_a_repeated_reset_succeeds(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    settings = kafka_settings
    prepare(settings)
    commit_offsets(settings, sname, f"connect-{sname}", {(sink_topic, 0): 5}, model.OffsetsAction.ALTER)
    for request_id in ("reset-1", "reset-2"):
        offsets = f"{{id: {request_id}, action: reset}}"
        desired = desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path, offsets, state="paused"))
        live = read_live_state(settings)
        apply_manifests(settings, desired, PlanOptions(), store=LiveStore.one_shot(settings))
        (outcome,) = run_pending_offsets_requests(settings, desired, live, store=LiveStore.one_shot(settings))
        assert outcome.status == "applied", outcome.render()
        assert outcome.message == "The offsets for this connector have been reset successfully"
        assert group_of(settings, sname) == {}
    state = read_view(settings)
    assert state.snapshot(sname, "reset-1") == model.sink_body({(sink_topic, 0): 5})
    assert state.snapshot(sname, "reset-2") == []
    assert state.live.connectors[sname].target_state is ConnectTargetState.PAUSED


def test_a_refusing_connector_fails_the_request_which_stays_pending(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    settings = kafka_settings
    calls = tmp_path / "calls.jsonl"
    config = {"topics": sink_topic, "calls.file": str(calls)}
    apply_manifests(
        settings, desired_of(tmp_path, manifest(sname, REFUSING_SINK, config)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    run_tasks(settings, sname, 1)
    commit_offsets(settings, sname, f"connect-{sname}", {(sink_topic, 0): 50}, model.OffsetsAction.ALTER)
    offsets = f"{{id: r1, action: alter, offsets: [{{partition: {{kafka_topic: {sink_topic}, kafka_partition: 0}}, offset: {{kafka_offset: 1}}}}]}}"
    desired = desired_of(tmp_path, manifest(sname, REFUSING_SINK, config, offsets=offsets))

    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "refused"
    assert outcome.message == (
        "the connector refused the request: this sink keeps its offsets in the target database; rewind it there"
    )
    assert group_of(settings, sname) == {(sink_topic, 0): 50}
    state = read_view(settings)
    assert not state.live.is_applied(sname, "offsets", "r1")
    assert state.live.connectors[sname].target_state is ConnectTargetState.STOPPED  # as Connect leaves it
    assert state.progress[sname] == model.Progress("r1", "snapshot")
    # The next run asks the connector again (it may have been fixed), without stopping twice.
    configs_before = config_records(settings, sname)
    (again,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert again.status == "refused" and again.steps == ()
    assert config_records(settings, sname) == configs_before
    assert len(calls.read_text().splitlines()) == 2


def test_connector_that_does_not_exist_is_not_found(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    desired = desired_of(tmp_path, manifest("ghost", PLAIN_SOURCE, {}, offsets="{id: g1, action: reset}"))
    outcome = execute_offsets_request(kafka_settings, desired[0], store=LiveStore.one_shot(kafka_settings))
    assert (outcome.status, outcome.message) == ("failed", "Connector ghost not found")


def test_without_proof_that_tasks_stopped_only_the_stop_step_runs(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    settings = kafka_settings
    apply_manifests(
        settings, desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    run_tasks(settings, sname, 2)
    commit_offsets(settings, sname, f"connect-{sname}", {(sink_topic, 0): 50}, model.OffsetsAction.ALTER)
    desired = desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path, "{id: w1, action: reset}"))
    outcome = execute_offsets_request(settings, desired[0], store=LiveStore.one_shot(settings), tasks_stopped=False)
    assert (outcome.status, outcome.steps) == ("waiting", ("stop",))
    state = read_view(settings)
    assert state.progress[sname] == model.Progress("w1", "stop")
    assert state.live.connectors[sname].task_count == 0
    assert group_of(settings, sname) == {(sink_topic, 0): 50}
    # The run tick then finishes it from the stop step.
    (outcome,) = run_pending_offsets_requests(settings, desired, state.live, store=LiveStore.one_shot(settings))
    assert (outcome.status, outcome.steps) == ("applied", ("snapshot", "reset", "return"))
    assert group_of(settings, sname) == {}


def test_sink_request_refused_while_a_zombie_holds_the_group(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str, sname: str
) -> None:
    from reconciler.kafka.io.client import new_consumer

    settings = kafka_settings
    apply_manifests(
        settings, desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    zombie = new_consumer(settings, None, **{"group.id": f"connect-{sname}", "session.timeout.ms": 6000})
    try:
        assigned: list[object] = []
        zombie.subscribe([sink_topic], on_assign=lambda c, ps: assigned.extend(ps))
        while not assigned:
            zombie.poll(0.1)
        desired = desired_of(tmp_path, sink_doc(sname, sink_topic, tmp_path, "{id: z1, action: reset}"))
        (outcome,) = run_pending_offsets_requests(
            settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
        )
    finally:
        zombie.close()
    assert outcome.status == "retry"
    assert "zombie sink tasks" in outcome.message and "can be safely retried" in outcome.message


# --- source ----------------------------------------------------------------------------------------

# Keys as a Java worker wrote them (HashMap order, Double.toString), per docs/record-formats.md#byte-exact-keys.
# Keys as Java writes them: the partition's fields in its HashMap's order (schema, then table).
JAVA_RECORDS: list[tuple[bytes, bytes | None]] = [
    (b'["jdbc-src",{"schema":"public","table":"orders"}]', b'{"incrementing":1300}'),
    (b'["jdbc-src",{"schema":"public","table":"customers"}]', b'{"incrementing":5}'),
    (b'["jdbc-src",{"ratio":1.0E10}]', b'{"ts":1.5E-7}'),
    # One logical partition under two encodings: both are live keys to Java.
    (b'["jdbc-src",{"shard":2,"region":"eu"}]', b'{"pos":10}'),
    (b'["jdbc-src",{"region":"eu","shard":2}]', b'{"pos":11}'),
    (b'["other-src",{"schema":"public","table":"orders"}]', b'{"incrementing":9}'),
]


def source_doc(offsets: str = "", cls: str = CONFIRMING_SOURCE, **config: Any) -> str:
    return manifest("jdbc-src", cls, dict(config), offsets=offsets, tasks=2)


def test_source_alter_writes_under_javas_exact_key_bytes(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    settings = kafka_settings
    calls = tmp_path / "calls.jsonl"
    apply_manifests(
        settings, desired_of(tmp_path, source_doc(**{"calls.file": str(calls)})), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    write_raw(settings, settings.topics.offsets, JAVA_RECORDS)
    before = offsets_records(settings)
    offsets = """\
        id: src-1
        action: alter
        offsets:
          - partition: {table: orders, schema: public}     # another key order than Java's bytes
            offset: {incrementing: 1000}
          - partition: {ratio: 10000000000.0}
            offset: {ts: 2.5}
          - partition: {region: eu, shard: 2}
            offset: null
          - partition: {table: new}
            offset: {incrementing: 1}
        """
    desired = desired_of(tmp_path, source_doc(offsets, **{"calls.file": str(calls)}))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "applied", outcome.render()
    assert outcome.message == "The offsets for this connector have been altered successfully"

    assert written_since(settings, before) == sorted(
        [
            (b'["jdbc-src",{"schema":"public","table":"orders"}]', b'{"incrementing":1000}'),
            (b'["jdbc-src",{"ratio":1.0E10}]', b'{"ts":2.5}'),
            (b'["jdbc-src",{"shard":2,"region":"eu"}]', None),
            (b'["jdbc-src",{"region":"eu","shard":2}]', None),
            (b'["jdbc-src",{"table":"new"}]', b'{"incrementing":1}'),
        ],
        key=repr,
    )
    body = current_body(settings, "jdbc-src", {})
    assert {json.dumps(e["partition"], sort_keys=True): e["offset"] for e in body} == {
        '{"schema": "public", "table": "orders"}': {"incrementing": 1000},
        '{"schema": "public", "table": "customers"}': {"incrementing": 5},
        '{"ratio": 10000000000.0}': {"ts": 2.5},
        '{"table": "new"}': {"incrementing": 1},
    }
    # The hook saw every partition of the request, keyed by canonical JSON (null = removed).
    (hooked,) = [json.loads(line) for line in calls.read_text().splitlines()]
    assert hooked['{"region":"eu","shard":2}'] is None
    assert hooked['{"schema":"public","table":"orders"}'] == {"incrementing": 1000}


def test_source_reset_tombstones_every_known_partition_and_repeats(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    write_raw(settings, settings.topics.offsets, JAVA_RECORDS)
    for request_id in ("reset-1", "reset-2"):
        desired = desired_of(tmp_path, source_doc(f"{{id: {request_id}, action: reset}}", cls=PLAIN_SOURCE))
        live = read_live_state(settings)
        apply_manifests(settings, desired, PlanOptions(), store=LiveStore.one_shot(settings))
        before = offsets_records(settings)
        (outcome,) = run_pending_offsets_requests(settings, desired, live, store=LiveStore.one_shot(settings))
        assert outcome.status == "applied", outcome.render()
        assert outcome.message == model.success_message(model.OffsetsAction.RESET, False)
        expected = [(k, None) for k, _ in JAVA_RECORDS if k.startswith(b'["jdbc-src"')] if request_id == "reset-1" else []
        assert written_since(settings, before) == sorted(expected, key=repr)
        assert current_body(settings, "jdbc-src", {}) == []
    assert current_body(settings, "other-src", {}) != []  # other connectors untouched


def test_source_with_its_own_offsets_topic_reads_both_and_writes_both(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    custom = f"{settings.group_id}-jdbc-offsets"
    create_topic(settings, custom, 3, **{"cleanup.policy": "compact"})
    write_raw(settings, custom, [(b'["jdbc-src",{"table":"a"}]', b'{"n":1}')])
    write_raw(settings, settings.topics.offsets, [(b'["jdbc-src",{"table":"b"}]', b'{"n":2}')])
    config = {"offsets.storage.topic": custom}
    # Java's ConnectorOffsetBackingStore.get lays the primary store's answer, nulls included, over
    # the worker topic's: a partition only the worker topic holds reads null (docs/compatibility.md).
    body = current_body(settings, "jdbc-src", config)
    assert {e["partition"]["table"]: e["offset"] for e in body} == {"a": {"n": 1}, "b": None}
    offsets = "{id: c1, action: alter, offsets: [{partition: {table: a}, offset: {n: 5}}]}"
    desired = desired_of(tmp_path, source_doc(offsets, cls=PLAIN_SOURCE, **config))
    apply_manifests(settings, desired, PlanOptions(), store=LiveStore.one_shot(settings))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "applied", outcome.render()
    key = b'["jdbc-src",{"table":"a"}]'
    # Partitions are read in no particular order; within the key's partition, the last one wins.
    for topic in (custom, settings.topics.offsets):
        assert [v for k, v in offsets_records(settings, topic) if k == key][-1] == b'{"n":5}', topic


def test_source_task_producers_are_fenced_before_offsets_change(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    from confluent_kafka import KafkaException

    from reconciler.kafka.io.client import new_producer

    settings = kafka_settings
    apply_manifests(
        settings, desired_of(tmp_path, source_doc(cls=PLAIN_SOURCE)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    run_tasks(settings, "jdbc-src", 2)
    # A zombie task 1 that initialised its producer before the request and writes after it.
    zombie = new_producer(settings, None, **{"transactional.id": f"{settings.group_id}-jdbc-src-1"})
    zombie.init_transactions(settings.timeout_s)

    desired = desired_of(tmp_path, source_doc("{id: f1, action: reset}", cls=PLAIN_SOURCE))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "applied", outcome.render()
    with pytest.raises(KafkaException) as raised:
        zombie.begin_transaction()
        zombie.produce(settings.topics.offsets, key=b'["jdbc-src",{"table":"z"}]', value=b'{"n":99}')
        zombie.commit_transaction(settings.timeout_s)
    assert "fenced" in str(raised.value).lower() or "epoch" in str(raised.value).lower()
