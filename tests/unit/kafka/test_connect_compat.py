"""Connect compatibility: topics exactly as a Connect 3.x worker writes them → the live state it sees.

The fixtures (tests/fixtures/connect/*.records, format in its README) are hand-written byte for
byte from docs/record-formats.md: V0 target states, an inconsistent task set, deleted and
compacted-away connectors, traces with `\\n\\t`, a session key, Java-written offsets keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.core.live import (
    ConnectTargetState,
    InstanceState,
    InstanceStatus,
    LiveConnector,
    LiveState,
    dump_snapshot,
    load_snapshot,
)
from reconciler.core.redact import is_seal, seal_matches
from reconciler.kafka.formats import records as rec
from reconciler.core.transitions import PendingRestart as RestartRequestRecord
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay import (
    ConfigReplay,
    OffsetsReplay,
    ReconcilerReplay,
    StatusReplay,
    build_live_state,
)

import record_encoders

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "connect"
STARTED, PAUSED, STOPPED = (
    ConnectTargetState.STARTED,
    ConnectTargetState.PAUSED,
    ConnectTargetState.STOPPED,
)


def load(name: str) -> list[tuple[bytes, bytes | None]]:
    records = []
    for line in (FIXTURES / name).read_bytes().split(b"\n"):
        if not line or line.startswith(b"#"):
            continue
        key, tab, value = line.partition(b"\t")
        assert tab, f"{name}: no TAB in {line!r}"
        records.append((key, None if value == b"~" else value))
    return records


def replayed_config() -> ConfigReplay:
    replay = ConfigReplay()
    for offset, (key, value) in enumerate(load("config-topic.records")):
        replay.apply(key, value, offset)
    return replay


def replayed_status() -> StatusReplay:
    replay = StatusReplay()
    for offset, (key, value) in enumerate(load("status-topic.records")):
        replay.apply(key, value, offset)
    return replay


@pytest.fixture(scope="module")
def live() -> LiveState:
    return build_live_state(replayed_config(), replayed_status(), ReconcilerReplay(), "connect-cluster")


def status(state: InstanceState, worker: str, generation: int, trace: str | None = None) -> InstanceStatus:
    return InstanceStatus(state=state, trace=trace, worker_id=worker, generation=generation)


def test_connectors_seen(live: LiveState) -> None:
    assert sorted(live.connectors) == [
        "archive-sink",
        "ghost",
        "jdbc-src",
        "leftover",  # status only: deleted while the leader was down
        "legacy-paused",
        "new-paused",
        "new-stopped",
        "orders-sink",
        "repaired",
        "resumed",
        "unicode-src",
    ]  # old-src was deleted: tombstones for its config, target state and statuses


def test_running_connector_with_a_failed_task(live: LiveState) -> None:
    c = live.connectors["jdbc-src"]
    assert c.config == {"connector.class": "io.x.JdbcSource", "tasks.max": "2", "name": "jdbc-src"}
    assert (c.target_state, c.task_count, c.inconsistent) == (STARTED, 2, False)
    assert c.task_configs == [
        {"table": "a", "task.class": "io.x.JdbcTask"},
        {"table": "b", "task.class": "io.x.JdbcTask"},
    ]
    assert c.connector_status == status(InstanceState.RUNNING, "10.0.0.5:8083", 7)
    # The stale UNASSIGNED (generation 6 after RUNNING at 7) was ignored.
    assert c.task_statuses[0] == status(InstanceState.RUNNING, "10.0.0.5:8083", 7)
    failed = c.task_statuses[1]
    assert failed.state is InstanceState.FAILED and failed.generation == 7
    assert failed.trace is not None
    assert failed.trace.startswith(
        "org.apache.kafka.connect.errors.ConnectException: connection refused\n\tat io.x.JdbcTask.poll("
    )


def test_v0_target_state_from_an_old_worker(live: LiveState) -> None:
    c = live.connectors["legacy-paused"]
    assert c.target_state is PAUSED
    assert c.task_configs[0]["batch.size"] == "2000"
    assert c.connector_status is not None and c.connector_status.state is InstanceState.PAUSED
    # UNASSIGNED of a newer generation replaces RUNNING.
    assert c.task_statuses[0].state is InstanceState.UNASSIGNED


def test_stopped_connector(live: LiveState) -> None:
    c = live.connectors["archive-sink"]
    assert c.target_state is STOPPED  # the later DRAINING record is not a TargetState: ignored
    assert (c.task_count, c.task_configs) == (0, [])
    assert c.config is not None and c.config["s3.bucket"] is None
    assert c.connector_status is not None and c.connector_status.state is InstanceState.STOPPED
    assert c.task_statuses == {}


def test_inconsistent_task_set(live: LiveState) -> None:
    c = live.connectors["orders-sink"]
    assert (c.inconsistent, c.task_count, c.task_configs) == (True, 3, [])
    assert c.connector_status is not None and c.connector_status.trace is not None
    assert "\x1b[31mdenied\x1b[0m\n\tat io.x.JdbcSink" in c.connector_status.trace


def test_inconsistency_repaired_by_a_complete_generation(live: LiveState) -> None:
    c = live.connectors["repaired"]
    assert not c.inconsistent
    assert c.task_configs == [{"table": "new-0"}, {"table": "new-1"}]


def test_compacted_deleted_connector_comes_back_consistent(live: LiveState) -> None:
    c = live.connectors["ghost"]
    assert (c.task_count, c.inconsistent) == (1, False)
    assert c.task_configs == [{"table": "fresh-0"}]


def test_created_paused_and_stopped_kip_980(live: LiveState) -> None:
    assert live.connectors["new-paused"].target_state is PAUSED
    assert live.connectors["new-stopped"].target_state is STOPPED
    assert live.connectors["new-stopped"].task_count is None


def test_resumed_and_unicode(live: LiveState) -> None:
    assert live.connectors["resumed"].target_state is STARTED
    config = live.connectors["unicode-src"].config
    assert config is not None
    assert config["description"] == "Größe ✓ 東京" and config["separator"] == "\x1f"


def test_status_only_connector(live: LiveState) -> None:
    c = live.connectors["leftover"]
    assert not c.exists and c.target_state is STARTED
    assert c.connector_status == status(InstanceState.UNASSIGNED, "10.0.0.5:8083", 4)


def test_config_topic_bookkeeping() -> None:
    replay = replayed_config()
    # (false,false) outranks the later (true,true); the offset is the newer record's.
    assert replay.restart_requests["jdbc-src"] == RestartRequestRecord(False, False, 7)
    assert replay.restart_requests["old-src"].only_failed  # kept; the runtime skips unknown ones
    assert replay.task_count_records == {"jdbc-src": 2}
    assert "jdbc-src" not in replay.pending_fencing and "ghost" in replay.pending_fencing
    assert replay.problems == ["target-state-archive-sink: invalid target state 'DRAINING'"]


def test_status_topic_bookkeeping() -> None:
    replay = replayed_status()
    assert replay.topics == {"archive-sink": {"orders": (0, 1700000000123)}}
    assert replay.skipped == 1  # the truncated jdbc-src value


def _unsealed(restored: LiveState, original: LiveState) -> LiveState:
    """`restored` with each sealed value replaced by the original value it matches."""
    connectors = {}
    for name, connector in restored.connectors.items():
        before = original.connectors[name]

        def opened(config: dict[str, str | None] | None, was: dict[str, str | None] | None) -> dict[str, str | None] | None:
            if config is None or was is None:
                return config
            return {k: was[k] if is_seal(v) and seal_matches(v or "", was[k] or "") else v for k, v in config.items()}

        tasks = [opened(t, w) or {} for t, w in zip(connector.task_configs, before.task_configs, strict=True)]
        connectors[name] = connector.model_copy(update={"config": opened(connector.config, before.config), "task_configs": tasks})
    return restored.model_copy(update={"connectors": connectors, "source_fingerprint": ""})


def test_snapshot_json_round_trip(live: LiveState) -> None:
    """A snapshot holds secrets only sealed; it still plans like the state it was made from."""
    assert LiveState.model_validate_json(live.model_dump_json()) == live
    secret = {"connector.class": "x", "db.password": "hunter2-pw", "uri": "mongodb://u:pw-in-url@h/db", "tag": "blue"}
    with_secrets = LiveConnector(name="secretive", config=secret, task_count=1, task_configs=[dict(secret)])
    live = live.model_copy(update={"connectors": {**live.connectors, "secretive": with_secrets}})
    text = dump_snapshot(live)
    assert "hunter2-pw" not in text and "pw-in-url" not in text and '"tag": "blue"' in text
    restored = load_snapshot(text)
    assert _unsealed(restored, live) == live
    assert restored.fingerprint() == live.fingerprint()  # a plan saved against it applies to the real state
    sealed = [v for c in restored.connectors.values() for v in (c.config or {}).values() if is_seal(v)]
    assert sealed, "the fixture has secret-looking keys; the snapshot must seal them"


def test_snapshot_keeps_a_lone_surrogate_java_wrote() -> None:
    """Java strings may hold an unpaired surrogate (JSON `\\ud800`); the reader keeps it, so the
    snapshot must write it (as the same escape) and read it back."""
    config = rec.decode_properties(b'{"properties":{"connector.class":"x","k":"a\\ud800b"}}')
    assert not isinstance(config, rec.Invalid) and config["k"] == "a\ud800b"
    live = LiveState(group_id="g", connectors={"c": LiveConnector(name="c", config=config)})
    text = dump_snapshot(live)
    assert "\\ud800" in text
    assert load_snapshot(text).model_copy(update={"source_fingerprint": ""}) == live


# --- we write what Java writes: decode each fixture value, re-encode, compare bytes --------------


def reencode_config(key: str, value: bytes) -> bytes | None:
    """Our encoding of a decoded config value, or None where nothing is to compare."""
    name = key.split("-", 1)[1]
    if key.startswith("target-state-"):
        state = rec.decode_target_state(value)
        legacy = b'"state.v2"' not in value  # V0 records are not what we write
        return None if isinstance(state, Invalid) or legacy else rec.encode_target_state(state)
    if key.startswith(("connector-", "task-")):
        props = rec.decode_properties(value)
        return None if isinstance(props, Invalid) else rec.encode_properties(props)
    if key.startswith("commit-"):
        return rec.commit_record(name, rec.decode_commit(value)).value  # type: ignore[arg-type]
    if key.startswith("tasks-fencing-"):
        return rec.tasks_fencing_record("x", rec.decode_tasks_fencing(value)).value  # type: ignore[arg-type]
    if key.startswith("restart-connector-"):
        flags = rec.decode_restart(value)
        assert not isinstance(flags, Invalid)
        return rec.restart_record("x", include_tasks=flags.include_tasks, only_failed=flags.only_failed).value
    return None


def test_config_values_reencode_byte_for_byte() -> None:
    compared = 0
    for key, value in load("config-topic.records"):
        if value is None:
            continue
        ours = reencode_config(key.decode(), value)
        if ours is not None:
            assert ours == value, key
            compared += 1
    assert compared == 46  # every config record but the V0 and invalid target states, worker-only keys


def test_status_values_reencode_byte_for_byte() -> None:
    compared = 0
    for key, value in load("status-topic.records"):
        if value is None or key.startswith(b"status-topic-"):
            continue
        decoded = rec.decode_status(value)
        if not isinstance(decoded, Invalid):
            # The fixtures are Connect 3.x's four fields; Kafka 4.x appends `"version":null`.
            assert rec.encode_status(decoded) == value[:-1] + b',"version":null}', key
            compared += 1
    assert compared == 16  # every status but the truncated one
    [(key, value)] = [(k, v) for k, v in load("status-topic.records") if k.startswith(b"status-topic-")]
    inner = json.loads(value or b"")["topic"]
    ours = record_encoders.topic_status_record(inner["name"], inner["connector"], inner["task"], inner["discoverTimestamp"])
    assert (ours.key, ours.value) == (key, value)


# --- offsets --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def offsets() -> OffsetsReplay:
    replay = OffsetsReplay()
    for offset, (key, value) in enumerate(load("offsets-topic.records")):
        replay.apply(key, value, offset)
    return replay


def test_source_offsets_as_java_reads_them(offsets: OffsetsReplay) -> None:
    assert offsets.connectors() == ["file-src", "float-src", "jdbc-src", "multi-key"]
    assert offsets.offsets_for("jdbc-src") == [
        ({"table": "orders"}, {"incrementing": 1300}, b'["jdbc-src",{"table":"orders"}]'),
        ({"table": "Bestellungen-ü"}, {"incrementing": 7}, '["jdbc-src",{"table":"Bestellungen-ü"}]'.encode()),
    ]
    assert offsets.offsets_for("float-src") == [({"ratio": 1e10}, {"ts": 1.5e-7}, b'["float-src",{"ratio":1.0E10}]')]
    assert offsets.skipped == 1  # the object-shaped key; `[name, null]` is skipped silently


def test_one_partition_under_two_java_keys(offsets: OffsetsReplay) -> None:
    # Java's partition set holds the map read first ({shard, region}); its GET serialises that
    # map (HashMap order: shard, region) and finds the first record's value under those bytes.
    assert offsets.reported("multi-key") == [({"shard": 2, "region": "eu"}, {"pos": 10})]
    # The runtime resumes from the newest value under either encoding.
    [(partition, offset, raw)] = offsets.offsets_for("multi-key")
    assert (partition, offset, raw) == (
        {"region": "eu", "shard": 2},
        {"pos": 11},
        b'["multi-key",{"region":"eu","shard":2}]',
    )
    # A reset must tombstone both keys, or a reader of the other one would still find it.
    assert offsets.live_raw_keys("multi-key") == [
        b'["multi-key",{"shard":2,"region":"eu"}]',
        b'["multi-key",{"region":"eu","shard":2}]',
    ]


def test_a_partition_tombstoned_under_one_encoding_resumes_from_the_other() -> None:
    """Java's set drops the partition (its GET lists nothing), but a Java task whose own
    encoding is the live one still reads that offset: the runtime resumes from it too."""
    replay = OffsetsReplay()
    live, other = b'["two",{"region":"eu","shard":2}]', b'["two",{"shard":2,"region":"eu"}]'
    for offset, (key, value) in enumerate([(other, b'{"pos":10}'), (live, b'{"pos":11}'), (other, None)]):
        replay.apply(key, value, offset)
    assert replay.reported("two") == []
    assert replay.offsets_for("two") == [({"region": "eu", "shard": 2}, {"pos": 11}, live)]
    assert replay.live_raw_keys("two") == [live]


def test_a_tombstoned_partition_is_written_again_under_javas_key(offsets: OffsetsReplay) -> None:
    assert offsets.keys_for("jdbc-src", {"table": "customers"}) == [b'["jdbc-src",{"table":"customers"}]']
    assert b'["jdbc-src",{"table":"customers"}]' not in offsets.live_raw_keys("jdbc-src")


def test_offsets_reencode_byte_for_byte(offsets: OffsetsReplay) -> None:
    """Every key Java wrote is what we mint for its partition, except the multi-key partition's
    second encoding, which another client wrote in non-HashMap order."""
    for key, _value in load("offsets-topic.records"):
        decoded = rec.decode_offset_key(key)
        if isinstance(decoded, Invalid) or key == b'["multi-key",{"region":"eu","shard":2}]':
            continue
        assert rec.encode_offset_key(*decoded) == key
    values = {key: value for key, value in load("offsets-topic.records") if value is not None}
    for key, value in values.items():
        decoded_value = rec.decode_offset_value(value)
        assert isinstance(decoded_value, dict)
        assert rec.encode_offset_value(decoded_value) == value, key


