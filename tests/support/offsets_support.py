"""Helpers for the offsets integration tests (no tests here): manifests, simulated running
tasks, raw records as a Java worker writes them, and readers of what the executor left."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from reconciler.kafka.io import admin
from reconciler.core.models import DesiredConnector
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.client import new_admin
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise

PLUGINS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "connect-offsets"
sys.path.insert(0, str(PLUGINS_DIR))
REFUSING_SINK = "offsets_test_plugins:RefusingSink"
PLAIN_SINK = "offsets_test_plugins:PlainSink"
CONFIRMING_SOURCE = "offsets_test_plugins:ConfirmingSource"
PLAIN_SOURCE = "offsets_test_plugins:PlainSource"


def create_topic(settings: KafkaSettings, topic: str, partitions: int = 1, **config: str) -> None:
    admin.create_topic(settings, topic, partitions, config)


def delete_records(settings: KafkaSettings, topic: str, partition: int, before: int) -> None:
    """DeleteRecords: the partition's log then starts at `before`.

    The topic's metadata is fetched first, by the same admin client: with its leader in the
    client's metadata cache, librdkafka's leader lookup for the request completes on this thread
    (without it, the lookup waits asynchronously in a way that can crash the process:
    `list_offsets` in reconciler/kafka/io/consume.py)."""
    from confluent_kafka import TopicPartition

    client = new_admin(settings)  # kept until the future completes
    client.list_topics(topic, timeout=settings.timeout_s)
    [future] = client.delete_records([TopicPartition(topic, partition, before)]).values()
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
    from reconciler.kafka.io.client import new_producer
    from reconciler.kafka.io.store import prepare

    prepare(settings)  # the internal topics, compacted, before anything writes to them
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


def written_since(settings: KafkaSettings, before: list[tuple[bytes, bytes | None]], topic: str | None = None) -> list[tuple[bytes, bytes | None]]:
    """Records added since `before` (partitions are read in no particular order: compare as multisets)."""
    return sorted((Counter(offsets_records(settings, topic)) - Counter(before)).elements(), key=repr)


def child_env(failpoint: str) -> dict[str, str]:
    """The environment of a child process that SIGKILLs itself at `failpoint`.

    Without this process's driver pid: a SparkSession started in the test process marks it as
    the driver, and `failpoints.hit` would kill the test run along with the child.
    """
    from reconciler.failpoints import ENV_DRIVER_PID, ENV_POINTS

    env = {key: value for key, value in os.environ.items() if key != ENV_DRIVER_PID}
    env[ENV_POINTS] = failpoint
    return env
