"""The offsets executor against the real broker, driven directly (no Spark): every step's
records, Java's key bytes, sink groups, refusals, and the resumable step records."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reconciler.core.live import ConnectTargetState
from reconciler.core.models import DesiredConnector
from reconciler.kafka import records as rec
from reconciler.kafka.apply import apply_manifests
from reconciler.kafka.consume import read_to_end
from reconciler.kafka.produce import TransactionalWriter
from reconciler.kafka.reader import read_live_state, sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from reconciler.offsets import model
from reconciler.offsets.executor import execute_offsets_request, run_pending_offsets_requests
from reconciler.offsets.sink import commit_offsets
from reconciler.offsets.state import current_body, read_offsets_state

PLUGINS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "connect-offsets"
sys.path.insert(0, str(PLUGINS_DIR))
REFUSING_SINK = "offsets_test_plugins:RefusingSink"
PLAIN_SINK = "offsets_test_plugins:PlainSink"
CONFIRMING_SOURCE = "offsets_test_plugins:ConfirmingSource"
PLAIN_SOURCE = "offsets_test_plugins:PlainSource"


def create_topic(settings: KafkaSettings, topic: str, partitions: int = 1, **config: str) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    for future in admin.create_topics([NewTopic(topic, partitions, 1, config=config)]).values():
        future.result(timeout=settings.timeout_s)


def manifest(name: str, cls: str, config: dict[str, Any], *, state: str = "running", offsets: str = "", tasks: int = 1) -> str:
    doc = {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": name},
        "spec": {"class": cls, "tasksMax": tasks, "state": state, "config": config},
    }
    text = json.dumps(doc)  # JSON is YAML
    if offsets:
        import yaml

        loaded = yaml.safe_load(text)
        loaded["spec"]["offsets"] = yaml.safe_load(textwrap.dedent(offsets))
        text = json.dumps(loaded)
    return text


def desired_of(tmp_path: Path, *docs: str) -> list[DesiredConnector]:
    path = tmp_path / "manifests.yaml"
    path.write_text("\n---\n".join(docs))
    return load_or_raise([path])


def run_tasks(settings: KafkaSettings, name: str, count: int) -> None:
    """What a worker writes when it starts a connector's tasks: task configs, then the commit."""
    records = [rec.task_config_record(name, i, {"task.index": str(i)}) for i in range(count)]
    records.append(rec.commit_record(name, count))
    with TransactionalWriter(settings, transactional_id=f"test-{settings.group_id}") as writer:
        writer.write(records)


def write_raw(settings: KafkaSettings, topic: str, pairs: list[tuple[bytes, bytes | None]]) -> None:
    from reconciler.kafka.client import new_producer

    producer = new_producer(settings)
    for key, value in pairs:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(settings.timeout_s) == 0


def config_records(settings: KafkaSettings, name: str) -> list[tuple[str, bytes | None]]:
    keys = {f"commit-{name}", f"target-state-{name}"}
    return [
        (m.key.decode(), m.value)
        for m in read_to_end(settings, settings.topics.configs)
        if m.key is not None and m.key.decode() in keys
    ]


def reconciler_records(settings: KafkaSettings, name: str) -> list[tuple[str, bytes | None]]:
    return [
        (m.key.decode(), m.value)
        for m in read_to_end(settings, settings.topics.reconciler)
        if m.key is not None and f"/{name}" in m.key.decode()
    ]


def offsets_records(settings: KafkaSettings, topic: str | None = None) -> list[tuple[bytes, bytes | None]]:
    return [(m.key or b"", m.value) for m in read_to_end(settings, topic or settings.topics.offsets)]


@pytest.fixture
def sink_topic(kafka_settings: KafkaSettings) -> str:
    topic = f"{kafka_settings.group_id}-orders"
    create_topic(kafka_settings, topic, 2)
    return topic


# --- sink ------------------------------------------------------------------------------------------


def sink_doc(topic: str, tmp_path: Path, offsets: str = "", **kwargs: Any) -> str:
    return manifest("orders-archive", "parquet-sink", {"topics": topic, "path": str(tmp_path / "out")}, offsets=offsets, **kwargs)


def test_sink_alter_runs_every_step_and_records_it(
    kafka_settings: KafkaSettings, tmp_path: Path, sink_topic: str
) -> None:
    settings = kafka_settings
    apply_manifests(settings, desired_of(tmp_path, sink_doc(sink_topic, tmp_path)))
    run_tasks(settings, "orders-archive", 2)
    commit_offsets(settings, "orders-archive", "connect-orders-archive", {(sink_topic, 0): 50, (sink_topic, 1): 70}, model.OffsetsAction.ALTER)
    offsets = f"""\
        id: rewind-1
        action: alter
        offsets:
          - partition: {{kafka_topic: {sink_topic}, kafka_partition: 0}}
            offset: {{kafka_offset: 10}}
        """
    desired = desired_of(tmp_path, sink_doc(sink_topic, tmp_path, offsets))
    (outcome,) = run_pending_offsets_requests(settings, desired, read_live_state(settings))

    assert outcome.status == "applied", outcome.render()
    assert outcome.message == model.success_message(model.OffsetsAction.ALTER, True)  # parquet-sink confirms
    assert outcome.steps == ("stop", "snapshot", "alter", "return")
    # Augment only: partition 1 keeps its offset.
    assert sink_group_offsets(settings, "connect-orders-archive") == {(sink_topic, 0): 10, (sink_topic, 1): 70}
    # Stop = zero-task commit then STOPPED; then back to the declared state.
    assert config_records(settings, "orders-archive")[-3:] == [
        ("commit-orders-archive", b'{"tasks":0}'),
        ("target-state-orders-archive", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        ("target-state-orders-archive", b'{"state":"STARTED","state.v2":"STARTED"}'),
    ]
    state = read_offsets_state(settings)
    assert state.live.is_applied("orders-archive", "offsets", "rewind-1")
    assert "orders-archive" not in state.progress
    assert state.snapshot("orders-archive", "rewind-1") == model.sink_body({(sink_topic, 0): 50, (sink_topic, 1): 70})
    # Never twice: a second run finds the id applied and writes nothing.
    before = reconciler_records(settings, "orders-archive")
    assert run_pending_offsets_requests(settings, desired, read_live_state(settings)) == []
    again = execute_offsets_request(settings, desired[0])
    assert again.status == "already-applied"
    assert reconciler_records(settings, "orders-archive") == before
