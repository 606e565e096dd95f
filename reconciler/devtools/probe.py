"""Probe what a broker can do, so tests needing a capability Tansu lacks skip with a reason.

Measured Tansu deviations (design.md): read_committed still returns records of aborted
transactions, and deleting a consumer group that has active members succeeds. Code must be
correct on Apache Kafka; tests of those behaviours run against a real Kafka
(RECONCILER_TEST_BOOTSTRAP) and skip — saying why — on Tansu. Each probe creates its own
uniquely named topic/group, so it never disturbs other users of the broker.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from typing import Any

from reconciler.kafka import admin
from reconciler.kafka.client import kafka_error, new_admin, new_consumer, new_producer
from reconciler.kafka.consume import read_to_end
from reconciler.kafka.settings import KafkaSettings

ABORT_FILTERING = "read_committed filters records of aborted transactions"
NONEMPTY_GROUP_REFUSAL = "deleting a consumer group with active members is refused (NON_EMPTY_GROUP)"


def _settings(bootstrap: str, timeout_s: float) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, timeout_s=timeout_s)


def is_tansu(bootstrap: str, timeout_s: float = 10.0) -> bool:
    """Tansu's default cluster id; only used to decide between skipping and failing."""
    return admin.is_tansu(_settings(bootstrap, timeout_s))


def _create_topic(settings: KafkaSettings, topic: str) -> None:
    from confluent_kafka.cimpl import NewTopic

    admin = new_admin(settings)
    admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(timeout=settings.timeout_s)


def _delete_topic(settings: KafkaSettings, topic: str) -> None:
    admin = new_admin(settings)
    try:
        admin.delete_topics([topic])[topic].result(timeout=settings.timeout_s)
    except Exception:  # best effort: a leftover probe topic harms nobody
        pass


def filters_aborted_transactions(bootstrap: str, timeout_s: float = 15.0) -> bool:
    """Write one aborted and one committed record; does a read_committed reader see only the latter?"""
    settings = _settings(bootstrap, timeout_s)
    topic = f"reconciler-probe-abort-{uuid.uuid4().hex[:12]}"
    _create_topic(settings, topic)
    try:
        producer = new_producer(settings, None, **{"transactional.id": f"probe-{topic}"})
        producer.init_transactions(timeout_s)
        for key, commit in ((b"aborted", False), (b"committed", True)):
            producer.begin_transaction()
            producer.produce(topic, key=key, value=b"probe")
            producer.flush(timeout_s)
            if commit:
                producer.commit_transaction(timeout_s)
            else:
                producer.abort_transaction(timeout_s)
        keys = {msg.key for msg in read_to_end(settings, topic)}
        return keys == {b"committed"}
    finally:
        _delete_topic(settings, topic)


def refuses_deleting_nonempty_group(bootstrap: str, timeout_s: float = 20.0) -> bool:
    """Join a group with a live member, try to delete the group: refused, as Kafka does?"""
    from confluent_kafka import KafkaError, KafkaException

    settings = _settings(bootstrap, timeout_s)
    topic = f"reconciler-probe-group-{uuid.uuid4().hex[:12]}"
    group = f"{topic}-group"
    _create_topic(settings, topic)
    consumer = new_consumer(settings, None, **{"group.id": group, "session.timeout.ms": 6000})
    try:
        _join(consumer, topic, timeout_s)
        admin = new_admin(settings)  # keep a reference: a collected client never completes its futures
        future = admin.delete_consumer_groups([group], request_timeout=timeout_s)[group]
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            error = kafka_error(exc)
            return error is not None and error.code() == KafkaError.NON_EMPTY_GROUP
        return False
    finally:
        consumer.close()
        _delete_topic(settings, topic)


def _join(consumer: Any, topic: str, timeout_s: float) -> None:
    assigned: list[object] = []
    consumer.subscribe([topic], on_assign=lambda c, partitions: assigned.extend(partitions))
    deadline = time.monotonic() + timeout_s
    while not assigned:
        if time.monotonic() > deadline:
            raise TimeoutError(f"probe consumer did not join its group within {timeout_s:g}s")
        consumer.poll(0.1)


@dataclasses.dataclass
class BrokerCapabilities:
    """Lazily probed, cached capabilities of one broker (probes cost ~0.1–4 s each)."""

    bootstrap: str
    _cache: dict[str, bool] = dataclasses.field(default_factory=dict)

    def has(self, capability: str) -> bool:
        if capability not in self._cache:
            probe = {ABORT_FILTERING: filters_aborted_transactions, NONEMPTY_GROUP_REFUSAL: refuses_deleting_nonempty_group}
            self._cache[capability] = probe[capability](self.bootstrap)
        return self._cache[capability]
