"""The transactional writer against the real broker: placement, atomicity, fencing, SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter

import pytest

from reconciler.errors import Fenced, ReconcilerError
from reconciler.kafka.io.admin import ensure_topics
from reconciler.kafka.io.consume import Message, read_to_end
from reconciler.kafka.formats.partitioner import partition_for
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.formats.records import Record
from reconciler.kafka.settings import KafkaSettings


def latest_by_key(messages: list[Message]) -> dict[bytes | None, bytes | None]:
    return {m.key: m.value for m in messages}


def config_records(n: int, value: bytes = b'{"properties":{}}') -> list[Record]:
    return [Record("configs", f"connector-c{i}".encode(), value) for i in range(n)]


def placement_keys() -> list[bytes]:
    """Keys of every length mod 4 (murmur2's tail cases), ASCII and not, as Connect writes them."""
    keys = [f"status-task-connector-{i}-{i % 7}".encode() for i in range(400)]
    keys += [("x" * n).encode() for n in range(1, 17)]
    keys += ["status-connector-zürich-ü".encode(), "状態-connector".encode(), b"\xff\x00\x01"]
    keys += [f'["src-{i}",{{"file":"f{i}.txt"}}]'.encode() for i in range(200)]
    return keys


def test_keys_land_where_javas_murmur2_partitioner_puts_them(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    keys = placement_keys()
    status = [Record("status", key, b"{}") for key in keys]
    offsets = [Record("offsets", key, b"{}") for key in keys]
    with TransactionalWriter(kafka_settings) as writer:
        assert writer.write(status + offsets) == 2 * len(keys)

    topics = kafka_settings.topics
    for topic, partitions in ((topics.status, topics.status_partitions), (topics.offsets, topics.offsets_partitions)):
        read = list(read_to_end(kafka_settings, topic))
        assert len(read) == len(keys)
        wrong = [(m.key, m.partition) for m in read if m.partition != partition_for(m.key or b"", partitions)]
        assert wrong == []
        assert len(Counter(m.partition for m in read)) == partitions  # keys spread over all partitions


def test_write_commits_all_records_in_order(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    records = config_records(50) + [Record("configs", b"connector-c3", None), Record("reconciler", b"owner/c1", b"{}")]
    with TransactionalWriter(kafka_settings) as writer:
        assert writer.write(records) == len(records)

    configs = list(read_to_end(kafka_settings, kafka_settings.topics.configs))
    assert [(m.key, m.value) for m in configs] == [(r.key, r.value) for r in records[:51]]
    ours = list(read_to_end(kafka_settings, kafka_settings.topics.reconciler))
    assert [(m.key, m.value) for m in ours] == [(b"owner/c1", b"{}")]


def test_zero_records_means_no_transaction_at_all(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    with TransactionalWriter(kafka_settings) as active, TransactionalWriter(kafka_settings) as idle:
        active.claim()
        assert idle.write([]) == 0  # did not claim the id, so `active` is not fenced
        assert active.write(config_records(1)) == 1
    assert len(list(read_to_end(kafka_settings, kafka_settings.topics.configs))) == 1


def test_a_kept_claim_is_fenced_by_a_later_one_until_it_is_older_than_max_age(kafka_settings: KafkaSettings) -> None:
    """A writer kept across ticks keeps its claim (`claim(max_age_s=…)`): a claim made since by
    anyone fences it all the same; once older than `max_age_s` it claims again, fencing them."""
    ensure_topics(kafka_settings)
    with TransactionalWriter(kafka_settings) as kept, TransactionalWriter(kafka_settings) as other:
        kept.claim()
        other.claim()
        kept.claim(max_age_s=3600)  # young: kept, and fenced by `other`
        with pytest.raises(Fenced):
            kept.write(config_records(1, b'{"properties":{"n":"1"}}'))
        assert not kept.claimed  # a fenced producer is dropped: the next claim is a new one
        kept.claim()
        other.claim(max_age_s=3600)  # kept: fenced by `kept`'s new claim
        assert other.claimed
        other.claim(max_age_s=0.0)  # too old: claimed again, fencing `kept`
        assert other.write(config_records(1, b'{"properties":{"n":"2"}}')) == 1
        with pytest.raises(Fenced):
            kept.write(config_records(1, b'{"properties":{"n":"3"}}'))
    configs = list(read_to_end(kafka_settings, kafka_settings.topics.configs))
    assert [m.value for m in configs] == [b'{"properties":{"n":"2"}}']


TOO_LARGE = b"x" * 1_500_000  # over librdkafka's message.max.bytes: refused locally mid-transaction


def test_a_failed_write_is_aborted_and_the_writer_stays_usable(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    with TransactionalWriter(kafka_settings) as writer:
        with pytest.raises(ReconcilerError, match="the transaction was not committed"):
            writer.write(config_records(3) + [Record("configs", b"connector-big", TOO_LARGE)])
        assert writer.write([Record("configs", b"connector-after", b"{}")]) == 1
    keys = [m.key for m in read_to_end(kafka_settings, kafka_settings.topics.configs)]
    assert b"connector-after" in keys and b"connector-big" not in keys


def test_a_failed_write_leaves_nothing_visible(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    with TransactionalWriter(kafka_settings) as writer:
        with pytest.raises(ReconcilerError):
            writer.write(config_records(3) + [Record("configs", b"connector-big", TOO_LARGE)])
    assert list(read_to_end(kafka_settings, kafka_settings.topics.configs)) == []


def test_second_writer_on_the_same_group_fences_the_first(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    with TransactionalWriter(kafka_settings) as first, TransactionalWriter(kafka_settings) as second:
        first.claim()
        second.claim()  # same transactional id: the broker bumps the epoch
        with pytest.raises(Fenced) as excinfo:
            first.write([Record("configs", b"connector-first", b"1")])
        assert second.write([Record("configs", b"connector-second", b"2")]) == 1

    group = kafka_settings.group_id
    assert excinfo.value.message == f"another reconciler is applying to group {group}; this one was fenced"
    assert latest_by_key(list(read_to_end(kafka_settings, kafka_settings.topics.configs))).get(
        b"connector-second"
    ) == b"2"


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time
    from reconciler.kafka.io.client import new_producer
    from reconciler.kafka.settings import KafkaSettings, Topics
    bootstrap, group, topic = sys.argv[1:4]
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group))
    producer = new_producer(settings, None, **{"transactional.id": settings.transactional_id})
    producer.init_transactions(20)
    producer.begin_transaction()
    for i in range(20):
        producer.produce(topic, key=f"connector-c{i}".encode(), value=b"partial")
    producer.flush(20)  # produced, not committed
    print("produced", flush=True)
    time.sleep(120)
    """
)


def run_and_kill_between_produce_and_commit(settings: KafkaSettings, topic: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, settings.bootstrap_servers, settings.group_id, topic],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "produced"
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    proc.stdout.close()


def test_after_sigkill_mid_transaction_the_next_writer_converges(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    topic = kafka_settings.topics.configs
    run_and_kill_between_produce_and_commit(kafka_settings, topic)

    with TransactionalWriter(kafka_settings) as writer:  # same id: aborts the dead one's transaction
        assert writer.write(config_records(20, b"full")) == 20

    latest = latest_by_key(list(read_to_end(kafka_settings, topic)))
    assert latest == {f"connector-c{i}".encode(): b"full" for i in range(20)}


def test_after_sigkill_nothing_partial_is_ever_visible(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    topic = kafka_settings.topics.configs
    run_and_kill_between_produce_and_commit(kafka_settings, topic)
    assert list(read_to_end(kafka_settings, topic)) == []  # open transaction: hidden by the LSO
    with TransactionalWriter(kafka_settings) as writer:
        writer.claim()  # aborts it
    assert list(read_to_end(kafka_settings, topic)) == []
