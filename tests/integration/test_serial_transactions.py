"""Concurrent source transactions leave every partition readable to its end (reconciler.runtime.serial).

Producers run as source tasks do: each in its own thread, its own transactional id, records to
the same data partitions plus one offsets record, committed while the others are mid-flight.
On Tansu 0.6.0 the unserialised version of this loop left a partition's stable offset stuck
below its end by round 7–10 (measured, three runs); the executor therefore serialises
transactions there, and this test runs the loop through that same lock.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

from reconciler.kafka.admin import is_tansu
from reconciler.kafka.client import new_producer
from reconciler.kafka.consume import end_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import OffsetsStore
from reconciler.runtime import serial
from reconciler.runtime.source_job import wait_for_stable_offsets
from test_offsets_support import create_topic

ROUNDS = 25
PRODUCERS = 3
RECORDS = 60


def _task(settings: KafkaSettings, txn_id: str, data: str, offsets: str, key: str | None) -> None:
    producer = new_producer(settings, None, **{"transactional.id": txn_id, "linger.ms": 5})
    producer.init_transactions(settings.timeout_s)
    with serial.one_at_a_time(key):
        producer.begin_transaction()
        for _ in range(RECORDS):
            producer.produce(data, b"v" * 50, uuid.uuid4().bytes)
        producer.produce(offsets, b"{}", txn_id.encode())
        producer.flush(settings.timeout_s)
        producer.commit_transaction(settings.timeout_s)


def test_serial_transactions_keep_stable_offsets_moving(kafka_settings: KafkaSettings) -> None:
    run = uuid.uuid4().hex[:8]
    data, offsets = f"serial-data-{run}", f"serial-offsets-{run}"
    create_topic(kafka_settings, data, 3)
    create_topic(kafka_settings, offsets, 5)
    # What the executor decides: the lock on Tansu, none on Apache Kafka.
    key = serial.lock_key(kafka_settings) if is_tansu(kafka_settings) else None
    stores = [OffsetsStore(kafka_settings, data), OffsetsStore(kafka_settings, offsets)]
    with ThreadPoolExecutor(PRODUCERS) as pool:
        for round_ in range(ROUNDS):
            futures = [pool.submit(_task, kafka_settings, f"{run}-{i}", data, offsets, key) for i in range(PRODUCERS)]
            for future in futures:
                future.result()
                # The runtime's own check: a stable offset below the end still after STABLE_WAIT_S
            # (a commit that just returned can take a moment to show; a stuck one never does).
            assert (round_, wait_for_stable_offsets(stores)) == (round_, {})
    ends = end_offsets(kafka_settings, data, isolation_level="read_committed")
    # Every record plus one commit marker per transaction and partition it wrote to.
    assert sum(ends.values()) >= ROUNDS * PRODUCERS * RECORDS
