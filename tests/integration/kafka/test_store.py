"""The one read model against the real broker: a store kept across reads returns, after each
read, exactly what a store reading from offset 0 returns, through plain writes (as a Connect
worker makes them), committed, aborted and still open transactions, and tombstones."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from polling import until

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.client import new_producer
from reconciler.kafka.io.consume import PositionLost, TopicReader
from reconciler.kafka.formats.own_records import restart_processed_record as processed_record
from reconciler.kafka.formats.own_records import runtime_started_record as started_record
from reconciler.kafka.io.produce import TransactionalWriter, topic_for
from reconciler.kafka.formats.records import Record
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.io.store import LiveStore, TopicsMode, prepare, read_view
from offsets_support import create_topic, delete_records

pytestmark = pytest.mark.integration


def plain(settings: KafkaSettings, records: Sequence[Record]) -> None:
    """Records as a Connect worker writes them: no transaction."""
    producer = new_producer(settings)
    for record in records:
        producer.produce(topic_for(settings, record.topic_role), key=record.key, value=record.value)
    assert producer.flush(settings.timeout_s) == 0


def transaction(settings: KafkaSettings, txn_id: str, records: Sequence[Record], *, commit: bool) -> Any:
    """A transaction of `records`, committed or aborted; returns the producer."""
    producer = new_producer(settings, **{"transactional.id": txn_id})
    producer.init_transactions(settings.timeout_s)
    producer.begin_transaction()
    for record in records:
        producer.produce(topic_for(settings, record.topic_role), key=record.key, value=record.value)
    producer.flush(settings.timeout_s)
    if commit:
        producer.commit_transaction(settings.timeout_s)
    else:
        producer.abort_transaction(settings.timeout_s)
    return producer


def connector(name: str, **props: str) -> list[Record]:
    base = {"connector.class": "org.example.Sink", "name": name, "tasks.max": "2", **props}
    return [
        rec.connector_config_record(name, base),
        rec.task_config_record(name, 0, {"task": "0", **props}),
        rec.task_config_record(name, 1, {"task": "1", **props}),
        rec.commit_record(name, 2),
    ]


def running(name: str, generation: int) -> list[Record]:
    status = InstanceStatus(state=InstanceState.RUNNING, worker_id="w:1", generation=generation)
    return [rec.task_status_record(name, 0, status), rec.connector_status_record(name, status)]


def same_as_a_fresh_read(store: LiveStore, settings: KafkaSettings, *, uncommitted: bool = False) -> None:
    kept = store.read(uncommitted=uncommitted)
    fresh = read_view(settings, uncommitted=uncommitted, topics=TopicsMode.PREPARED)
    assert kept == fresh
    assert kept.live.model_dump() == fresh.live.model_dump()


def test_a_kept_store_reads_what_a_fresh_read_reads(kafka_settings: KafkaSettings) -> None:
    settings = kafka_settings
    prepare(settings)
    with LiveStore(settings, topics=TopicsMode.PREPARED) as store:
        same_as_a_fresh_read(store, settings)  # empty topics
        plain(settings, [r for n in ("a", "b", "c") for r in connector(n, v="1")])
        plain(settings, [r for n in ("a", "b") for r in running(n, 1)])
        same_as_a_fresh_read(store, settings)
        with TransactionalWriter(settings) as writer:  # as apply writes: a transaction
            writer.write([rec.target_state_record("a", ConnectTargetState.PAUSED), *connector("b", v="2")])
            writer.write([started_record(5), processed_record("a", 3, 1)])
        plain(settings, [rec.connector_tombstone("c"), rec.target_state_tombstone("c"), *running("b", 2)])
        view = store.read()
        same_as_a_fresh_read(store, settings)
        assert view.live.connectors["a"].target_state is ConnectTargetState.PAUSED
        assert view.live.connectors["b"].config is not None and view.live.connectors["b"].config["v"] == "2"
        assert "c" not in view.live.connectors and not view.first_tick
        # Nothing new: the same value, without building anything again.
        assert store.read() is store.read()


def test_aborted_and_open_transactions(kafka_settings: KafkaSettings) -> None:
    settings = kafka_settings
    prepare(settings)
    plain(settings, connector("a", v="1"))
    with LiveStore(settings, topics=TopicsMode.PREPARED) as store:
        same_as_a_fresh_read(store, settings, uncommitted=True)
        assert store.read(uncommitted=True).live.uncommitted == {}
        transaction(settings, f"{settings.group_id}-aborted", connector("a", v="aborted"), commit=False)
        view = store.read(uncommitted=True)
        assert view.live.uncommitted["a"].config is not None and view.live.uncommitted["a"].config["v"] == "aborted"
        assert view.live.connectors["a"].config is not None and view.live.connectors["a"].config["v"] == "1"
        same_as_a_fresh_read(store, settings, uncommitted=True)
        # An open transaction: its records are not read until it commits, then they are.
        open_ = new_producer(settings, **{"transactional.id": f"{settings.group_id}-open"})
        open_.init_transactions(settings.timeout_s)
        open_.begin_transaction()
        for record in connector("b", v="open"):
            open_.produce(topic_for(settings, record.topic_role), key=record.key, value=record.value)
        open_.flush(settings.timeout_s)
        plain(settings, connector("c", v="after"))  # behind the open transaction: not read yet either
        assert "b" not in store.read().live.connectors and "c" not in store.read().live.connectors
        same_as_a_fresh_read(store, settings)
        open_.commit_transaction(settings.timeout_s)
        # The commit marker lands a moment later.
        until(lambda: "c" in store.read().live.connectors, settings.timeout_s, 0.05, what="the committed record")
        assert store.read().live.connectors["b"].config == {"connector.class": "org.example.Sink", "name": "b",
                                                            "tasks.max": "2", "v": "open"}
        same_as_a_fresh_read(store, settings, uncommitted=True)


def test_a_position_that_was_deleted_is_reported(kafka_settings: KafkaSettings) -> None:
    """The store reads from offset 0 again when records it was to continue from are gone; its
    reader reports that instead of jumping to the end (librdkafka's default)."""

    topic = f"{kafka_settings.group_id}-deleted"
    create_topic(kafka_settings, topic, 1, **{"cleanup.policy": "delete"})
    producer = new_producer(kafka_settings)
    for i in range(3):
        producer.produce(topic, key=b"k", value=b"%d" % i)
    producer.flush(kafka_settings.timeout_s)
    reader = TopicReader(kafka_settings)
    try:
        reader.assign({topic: [0]})
        assert sum(map(len, reader.to_end())) == 3
        for i in range(3):
            producer.produce(topic, key=b"k", value=b"%d" % i)
        producer.flush(kafka_settings.timeout_s)
        delete_records(kafka_settings, topic, 0, 5)
        with pytest.raises(PositionLost):
            list(reader.to_end())
    finally:
        reader.close()
