"""Helpers for the runtime integration tests (no tests here): manifests written to a temporary
directory, ticks run in-process on the shared SparkSession, and readers of what the tick left
in Kafka (statuses, task configs, topic records) and on disk (Parquet rows).

Import the `pipeline` fixture into a test module to use it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import pytest
import yaml
from confluent_kafka import Producer

from reconciler.core.plan import PlanOptions
from reconciler.kafka.io import admin
from reconciler.core.live import InstanceState, LiveConnector, LiveState
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.io.client import new_producer
from reconciler.kafka.io.store import prepare, read_live_state
from reconciler.kafka.formats.records import decode_status
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from reconciler.runtime.executor import SparkExecutor
from reconciler.app.tick import TickReport, TickRunner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

FAULTY_SOURCE = "reconciler.connectors.faulty:FaultySource"
FAULTY_SINK = "reconciler.connectors.faulty:FaultySink"
WORKER_ID = "test-worker:1"
# Records per source task per batch: small, so data moves over several ticks.
SOURCE_BATCH = 150


def child_env(**extra: str) -> dict[str, str]:
    """The environment for a `reconciler` subprocess: ours, minus the failpoint settings that
    this process's own SparkSession put there (RECONCILER_DRIVER_PID names *this* process); its
    REST API (run and watch loops) on a free loopback port, not on the shared default 8083."""
    env = dict(os.environ)
    env.pop("RECONCILER_DRIVER_PID", None)
    env.pop("RECONCILER_FAILPOINTS", None)
    env["RECONCILER_HTTP_BIND"] = "127.0.0.1:0"
    env.update(extra)
    return env


def create_topic(settings: KafkaSettings, topic: str, partitions: int) -> None:
    admin.create_topic(settings, topic, partitions)


def produce_plain(settings: KafkaSettings, topic: str, records: list[tuple[bytes, bytes | None, int]]) -> None:
    """Non-transactional writes with batching (several records per batch, as Connect's producer does)."""
    producer: Any = new_producer(settings, **{"linger.ms": 20})
    for key, value, partition in records:
        producer.produce(topic, key=key, value=value, partition=partition)
    assert producer.flush(settings.timeout_s) == 0


def produce_ids(settings: KafkaSettings, topic: str, ids: range) -> None:
    """Records with key = value = the id, spread over the partitions by key."""
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "partitioner": "murmur2_random"})
    for i in ids:
        producer.produce(topic, b"%d" % i, b"%d" % i)
    assert producer.flush(settings.timeout_s) == 0


def topic_keys(settings: KafkaSettings, topic: str) -> Counter[bytes]:
    """How many times each key is in `topic` (read_committed)."""
    return Counter(message.key or b"" for message in read_to_end(settings, topic))


def parquet_keys(path: Path) -> Counter[bytes]:
    """How many times each key is in the parquet-sink's dataset (what readers see)."""
    keys: Counter[bytes] = Counter()
    if not path.exists():
        return keys
    for file in sorted(path.rglob("*.parquet")):
        if any(part[0] in "._" for part in file.relative_to(path).parts):
            continue  # temporary and superseded files are not part of the dataset
        keys.update(pq.read_table(file, columns=["key"]).column("key").to_pylist())
    return keys


def committed_everything(settings: KafkaSettings, group: str, topic: str) -> bool:
    """The group holds Connect's offset for every partition: its last record + 1 (a
    transactional topic ends with a commit marker, which is not delivered)."""
    last = {m.partition: m.offset for m in read_to_end(settings, topic)}
    committed = sink_group_offsets(settings, group)
    return bool(last) and all(committed.get((topic, p), 0) == offset + 1 for p, offset in last.items())


def ids(count: int) -> Counter[bytes]:
    """Datagen keys 0…count-1, once each."""
    return Counter(b"%d" % i for i in range(count))


@dataclass
class Pipeline:
    """Manifests in a directory + a worker ticking them against one test group."""

    settings: KafkaSettings
    root: Path
    source_batch: int = SOURCE_BATCH
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    worker: TickRunner = field(init=False)

    def __post_init__(self) -> None:
        self.dir = self.root / "manifests"
        self.dir.mkdir(parents=True, exist_ok=True)
        prepare(self.settings)  # the internal topics exist from the start (readers need them)
        executor = SparkExecutor(self.settings, source_batch_records=self.source_batch)
        self.worker = TickRunner(self.settings, executor, worker_id=WORKER_ID, plan_options=PlanOptions(prune=True))

    def topic(self, name: str, partitions: int = 0) -> str:
        """A data topic name unique to this test (the broker is shared); created when `partitions`."""
        topic = f"{self.settings.group_id}.{name}"
        if partitions:
            create_topic(self.settings, topic, partitions)
        return topic

    # --- manifests ---

    def connector(
        self,
        name: str,
        cls: str,
        config: dict[str, Any],
        *,
        state: str = "running",
        tasks_max: int = 1,
        restart: dict[str, Any] | None = None,
    ) -> None:
        spec: dict[str, Any] = {"class": cls, "tasksMax": tasks_max, "state": state, "config": config}
        if restart is not None:
            spec["restart"] = restart
        self.manifests[name] = {
            "apiVersion": "reconciler.io/v1",
            "kind": "Connector",
            "metadata": {"name": name},
            "spec": spec,
        }
        self._write(name)

    def set(self, name: str, **spec: Any) -> None:
        """Change spec fields (`state=…`, `restart=…`, `config=…`) of a declared connector."""
        self.manifests[name]["spec"].update(spec)
        self._write(name)

    def remove(self, name: str) -> None:
        del self.manifests[name]
        (self.dir / f"{name}.yaml").unlink()

    def _write(self, name: str) -> None:
        (self.dir / f"{name}.yaml").write_text(yaml.safe_dump(self.manifests[name], sort_keys=False))

    # --- running ---

    def tick(self) -> TickReport:
        paths = [str(self.dir)]
        return self.worker.tick(load_or_raise(paths), manifest_paths=paths)

    def ticks(self, count: int) -> list[TickReport]:
        return [self.tick() for _ in range(count)]

    def converge(self) -> TickReport:
        """A tick in which no connector or task ends FAILED: the run after a crash test's kills,
        or a run whose command output is not what is under test. In this process, on the
        session's SparkSession: what it checks is in the stores, and `reconciler run --once` in
        a subprocess would add a Spark start (6–10 s) to each of the suite's ~25 such runs."""
        report = self.tick()
        failed = failures(report)
        assert not failed, "\n".join(failed)
        return report

    def tick_failing(self) -> TickReport:
        """A tick in which some instance ends FAILED (what a `run --once` exiting 1 reports)."""
        report = self.tick()
        assert failures(report), f"nothing FAILED: {report.connectors}"
        return report

    # --- reading back ---

    def live(self) -> LiveState:
        return read_live_state(self.settings)

    def state(self, name: str) -> LiveConnector:
        connector = self.live().connector(name)
        assert connector is not None, f"connector {name} is unknown to the topics"
        return connector

    def states(self, name: str) -> tuple[str | None, dict[int, str]]:
        """(connector state, {task id: state}) as the status topic says."""
        connector = self.live().connector(name)
        if connector is None:
            return None, {}
        status = connector.connector_status
        return (
            None if status is None else status.state.value,
            {task: s.state.value for task, s in connector.task_statuses.items()},
        )

    def status_history(self) -> list[tuple[str, str | None]]:
        """Every status record ever written, as (key, state or None for a tombstone)."""
        history = []
        for message in read_to_end(self.settings, self.settings.topics.status):
            key = (message.key or b"").decode()
            if message.value is None:
                history.append((key, None))
                continue
            status = decode_status(message.value)
            history.append((key, getattr(status, "state", None) and status.state.value))  # type: ignore[union-attr]
        return history

    def restarting(self) -> Counter[str]:
        """How many times each status key was written RESTARTING."""
        return Counter(key for key, state in self.status_history() if state == InstanceState.RESTARTING.value)

    def config_records(self, prefix: str) -> list[tuple[str, Any]]:
        """Config-topic records whose key starts with `prefix`, in order, values parsed."""
        found = []
        for message in read_to_end(self.settings, self.settings.topics.configs):
            key = (message.key or b"").decode()
            if key.startswith(prefix):
                found.append((key, None if message.value is None else json.loads(message.value)))
        return found


def failures(report: TickReport) -> list[str]:
    """Every connector and task the tick left FAILED, with its trace."""
    found = []
    for connector in report.connectors:
        if connector.state is InstanceState.FAILED:
            found.append(f"{connector.name}: FAILED\n{connector.trace}")
        found += [f"{connector.name}/{task.task}: FAILED\n{task.trace}"
                  for task in connector.tasks if task.state is InstanceState.FAILED]
    return found


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path, spark_session: SparkSession) -> Iterator[Pipeline]:
    made = Pipeline(kafka_settings, tmp_path)
    try:
        yield made
    finally:
        made.worker.close()


@pytest.fixture
def big_batches(kafka_settings: KafkaSettings, tmp_path: Path, spark_session: SparkSession) -> Iterator[Pipeline]:
    """A pipeline whose in-process ticks move as much as the CLI's do (the default budget)."""
    made = Pipeline(kafka_settings, tmp_path, source_batch=1_000_000)
    try:
        yield made
    finally:
        made.worker.close()
