"""`reconciler offsets NAME [--history]` and `reconciler offsets import` on the real broker
(acceptance cases B13–B15, docs/state-machine.md#acceptance-cases; migration from a Connect cluster's offsets topic)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.kafka.io.store import LiveStore
from reconciler.cli.main import main
from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.app.apply import apply_manifests
from reconciler.kafka.io.store import prepare, read_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from reconciler.offsets import model
from reconciler.app.offsets import run_pending_offsets_requests
from reconciler.offsets.sink import commit_offsets

from offsets_support import (
    PLAIN_SOURCE,
    create_topic,
    desired_of,
    manifest,
    offsets_records,
    write_raw,
)

ROOT = Path(__file__).resolve().parents[3]


def cli(capsys: pytest.CaptureFixture[str], settings: KafkaSettings, *args: str) -> tuple[int, str, str]:
    code = main([*args, "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, "--timeout", "20"])
    out, err = capsys.readouterr()
    return code, out, err


def test_offsets_of_an_unknown_connector_is_connects_404(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings
) -> None:
    prepare(kafka_settings)  # the group exists, the connector does not
    code, out, err = cli(capsys, kafka_settings, "offsets", "ghost")
    assert (code, out) == (1, "")
    assert err.strip() == "error: Connector ghost not found"


def test_sink_offsets_default_and_overridden_group(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    topic = f"{settings.group_id}-t"
    create_topic(settings, topic, 2)
    plain, custom = f"s-{uuid.uuid4().hex[:8]}", f"s-{uuid.uuid4().hex[:8]}"
    own_group = f"my-group-{uuid.uuid4().hex[:8]}"
    apply_manifests(settings, desired_of(
            tmp_path,
            manifest(plain, "parquet-sink", {"topics": topic, "path": "/tmp/x"}, state="stopped"),
            manifest(custom, "parquet-sink", {"topics": topic, "path": "/tmp/y", "consumer.override.group.id": own_group}),
        ), PlanOptions(), store=LiveStore.one_shot(settings))
    commit_offsets(settings, plain, f"connect-{plain}", {(topic, 1): 7, (topic, 0): 3}, model.OffsetsAction.ALTER)
    commit_offsets(settings, custom, own_group, {(topic, 0): 11}, model.OffsetsAction.ALTER)

    code, out, _ = cli(capsys, settings, "offsets", plain)
    assert code == 0
    assert json.loads(out) == {
        "offsets": [
            {"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 3}},
            {"partition": {"kafka_topic": topic, "kafka_partition": 1}, "offset": {"kafka_offset": 7}},
        ]
    }
    code, out, _ = cli(capsys, settings, "offsets", custom, "--format", "table")
    assert code == 0
    assert out.splitlines() == [
        "PARTITION" + " " * (len(f'{{"kafka_topic": "{topic}", "kafka_partition": 0}}') - 9) + "  OFFSET",
        f'{{"kafka_topic": "{topic}", "kafka_partition": 0}}  {{"kafka_offset": 11}}',
    ]


def test_source_offsets_from_the_worker_topic_and_its_own_topic(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    own = f"{settings.group_id}-own-offsets"
    create_topic(settings, own, 1, **{"cleanup.policy": "compact"})
    apply_manifests(
        settings, desired_of(tmp_path, manifest("src", PLAIN_SOURCE, {}), manifest("own", PLAIN_SOURCE, {"offsets.storage.topic": own})), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    write_raw(settings, settings.topics.offsets, [(b'["src",{"file":"a"}]', b'{"pos":1}'), (b'["src",{"file":"b"}]', b'{"pos":2}')])
    write_raw(settings, settings.topics.offsets, [(b'["src",{"file":"b"}]', None)])
    write_raw(settings, own, [(b'["own",{"file":"c"}]', b'{"pos":3}')])

    code, out, _ = cli(capsys, settings, "offsets", "src")
    assert (code, json.loads(out)) == (0, {"offsets": [{"partition": {"file": "a"}, "offset": {"pos": 1}}]})
    code, out, _ = cli(capsys, settings, "offsets", "own")
    assert (code, json.loads(out)) == (0, {"offsets": [{"partition": {"file": "c"}, "offset": {"pos": 3}}]})


def test_history_lists_the_rollback_snapshots(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    write_raw(settings, settings.topics.offsets, [(b'["src",{"file":"a"}]', b'{"pos":10}')])
    request = "{id: rewind-1, action: alter, offsets: [{partition: {file: a}, offset: {pos: 0}}]}"
    desired = desired_of(tmp_path, manifest("src", PLAIN_SOURCE, {}, offsets=request))
    apply_manifests(settings, desired, PlanOptions(), store=LiveStore.one_shot(settings))
    (outcome,) = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert outcome.status == "applied"

    code, out, _ = cli(capsys, settings, "offsets", "src", "--history")
    assert code == 0
    (entry,) = json.loads(out)["history"]
    assert (entry["id"], entry["status"]) == ("rewind-1", "applied")
    assert entry["offsets"] == [{"partition": {"file": "a"}, "offset": {"pos": 10}}]
    code, out, _ = cli(capsys, settings, "offsets", "src", "--history", "--format", "table")
    lines = out.splitlines()
    assert lines[0].startswith("rewind-1  taken ") and lines[0].endswith("  applied")
    assert lines[2] == '{"file": "a"}  {"pos": 10}'
    code, out, _ = cli(capsys, settings, "offsets", "src")
    assert json.loads(out) == {"offsets": [{"partition": {"file": "a"}, "offset": {"pos": 0}}]}


# --- migration ----------------------------------------------------------------------------------

JAVA_FIXTURE = ROOT / "tests" / "fixtures" / "connect-offsets" / "java-offsets-topic.records"


def java_records() -> list[tuple[bytes, bytes | None]]:
    """The fixture's records: `<key> TAB <value>` lines, `~` = tombstone, `#` = comment."""
    records = []
    for line in JAVA_FIXTURE.read_bytes().splitlines():
        if not line or line.startswith(b"#"):
            continue
        key, value = line.split(b"\t")
        records.append((key, None if value == b"~" else value))
    return records


@pytest.fixture
def old_cluster(tmp_path: Path) -> Iterator[RunningBroker]:
    """A second broker playing the Kafka Connect cluster we migrate from."""
    broker = start_broker(tmp_path / "old-broker", quick=True)
    try:
        yield broker
    finally:
        broker.stop(timeout_s=1.0)


def test_import_from_a_connect_cluster_reuses_javas_key_bytes(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path, old_cluster: RunningBroker
) -> None:
    settings = kafka_settings
    old = KafkaSettings(bootstrap_servers=old_cluster.bootstrap, group_id="connect-cluster", timeout_s=20)
    create_topic(old, "connect-offsets", 25, **{"cleanup.policy": "compact"})
    topic = f"orders-{uuid.uuid4().hex[:8]}"  # the data topic, on both clusters (mirrored)
    create_topic(old, topic, 2)
    create_topic(settings, topic, 2)
    write_raw(old, "connect-offsets", java_records())
    sink = f"orders-archive-{uuid.uuid4().hex[:8]}"
    commit_offsets(old, sink, f"connect-{sink}", {(topic, 0): 1200, (topic, 1): 800}, model.OffsetsAction.ALTER)
    manifests = tmp_path / "manifests.yaml"
    manifests.write_text(
        "\n---\n".join(
            [
                manifest("jdbc-src", PLAIN_SOURCE, {}),
                manifest(sink, "parquet-sink", {"topics": topic, "path": str(tmp_path / "out")}),
            ]
        )
    )
    code, out, err = cli(
        capsys, settings, "offsets", "import", str(manifests),
        "--from-connect-offsets-topic", "connect-offsets", "--from-bootstrap-servers", old.bootstrap_servers, "--id", "migrate-1",
    )
    assert code == 0, err
    assert "note: file-src: has source offsets in the old cluster but is not declared in the manifests; skipped" in err
    assert "# --- connector jdbc-src (" in out and f"# --- connector {sink} (" in out
    assert "note:" not in out  # every Java key re-encodes to the same bytes

    # Paste each block under its connector's spec, then run the request like any other.
    blocks = dict(_blocks(out))
    manifests.write_text(
        "\n---\n".join(
            [
                manifest("jdbc-src", PLAIN_SOURCE, {}, offsets=blocks["jdbc-src"]),
                manifest(sink, "parquet-sink", {"topics": topic, "path": str(tmp_path / "out")}, offsets=blocks[sink]),
            ]
        )
    )
    desired = load_or_raise([manifests])
    apply_manifests(settings, desired, PlanOptions(), store=LiveStore.one_shot(settings))
    outcomes = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert [o.status for o in outcomes] == ["applied", "applied"], [o.render() for o in outcomes]
    java_live = {
        k: v
        for k, v in _latest(java_records()).items()
        if k.startswith(b'["jdbc-src",{') and v is not None  # `["jdbc-src",null]` is no partition to Java
    }
    ours = {k: v for k, v in _latest(offsets_records(settings)).items() if k.startswith(b'["jdbc-src"')}
    assert ours == java_live  # byte for byte: keys and values
    from reconciler.kafka.io.groups import sink_group_offsets

    assert sink_group_offsets(settings, f"connect-{sink}") == {(topic, 0): 1200, (topic, 1): 800}


def _latest(records: list[tuple[bytes, bytes | None]]) -> dict[bytes, bytes | None]:
    latest: dict[bytes, bytes | None] = {}
    for key, value in records:
        latest[key] = value
    return latest


def _blocks(text: str) -> Iterator[tuple[str, str]]:
    """(connector, the `offsets:` mapping's body) per block of the import output."""
    import yaml

    for chunk in text.split("# --- connector ")[1:]:
        name = chunk.split(" ", 1)[0]
        yaml_text = "\n".join(line for line in chunk.splitlines()[1:] if not line.startswith("#"))
        yield name, json.dumps(yaml.safe_load(yaml_text)["offsets"])


def test_import_of_a_connector_not_in_the_manifests_is_an_error(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    manifests = tmp_path / "m.yaml"
    manifests.write_text(manifest("jdbc-src", PLAIN_SOURCE, {}))
    create_topic(kafka_settings, f"{kafka_settings.group_id}-connect-offsets", 1)
    code, _, err = cli(
        capsys, kafka_settings, "offsets", "import", str(manifests), "--connector", "ghost",
        "--from-connect-offsets-topic", f"{kafka_settings.group_id}-connect-offsets",
    )
    assert code == 1
    assert err.splitlines()[0] == "error: Connector ghost not found in the manifests"


def test_plan_against_kafka_shows_each_partition_from_and_to(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    topic = f"{settings.group_id}-t"
    create_topic(settings, topic, 2)
    name = f"s-{uuid.uuid4().hex[:8]}"
    config = {"topics": topic, "path": str(tmp_path / "out")}
    apply_manifests(
        settings, desired_of(tmp_path, manifest(name, "parquet-sink", config)), PlanOptions(), store=LiveStore.one_shot(settings)
    )
    commit_offsets(settings, name, f"connect-{name}", {(topic, 0): 5000, (topic, 1): 4000}, model.OffsetsAction.ALTER)
    alter = f"{{id: rewind-1, action: alter, offsets: [{{partition: {{kafka_partition: 0, kafka_topic: {topic}}}, offset: {{kafka_offset: 1200}}}}]}}"
    path = tmp_path / "manifests.yaml"
    path.write_text(manifest(name, "parquet-sink", config, offsets=alter))

    code, out, _ = cli(capsys, settings, "plan", str(path))
    assert code == 0
    lines = [line.strip() for line in out.splitlines()]
    steps = lines.index("~ offsets request rewind-1 (alter, sink connector):")
    assert lines[steps + 1 : steps + 7] == [
        "1. stop the connector: commit zero tasks, write target state STOPPED, wait for its tasks to stop",
        f"2. record the current offsets of consumer group connect-{name} (kept for rollback)",
        "3. alter the offsets of 1 partition(s)",
        # In the manifest's own key order, paired with the group's current offset.
        f'{{"kafka_partition": 0, "kafka_topic": "{topic}"}}: {{"kafka_offset": 5000}} -> {{"kafka_offset": 1200}}',
        "4. return to the declared state: running",
        "5. record offsets request rewind-1 as applied",
    ]

    path.write_text(manifest(name, "parquet-sink", config, offsets="{id: reset-1, action: reset}"))
    code, out, _ = cli(capsys, settings, "plan", str(path), "--format", "markdown")
    assert code == 0
    assert (
        f'{{"kafka_topic": "{topic}", "kafka_partition": 0}}: {{"kafka_offset": 5000}} -> null (reset)\n'
        f'{{"kafka_topic": "{topic}", "kafka_partition": 1}}: {{"kafka_offset": 4000}} -> null (reset)\n'
    ) in out
    assert "3. reset all offsets: delete consumer group connect-" in out
