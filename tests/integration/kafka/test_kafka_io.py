"""Generic Kafka I/O against the real broker: read to end, end offsets, internal topics, reachability."""

from __future__ import annotations

import dataclasses
import time
from typing import TYPE_CHECKING, Any

import pytest

from reconciler.kafka.io import admin
from reconciler.errors import BrokerUnreachable, ReconcilerError
from reconciler.kafka.io.admin import ensure_topics, internal_topics, topic_partitions
from reconciler.kafka.io.client import check_reachable, new_admin, new_producer
from reconciler.kafka.io.consume import LogBounds, end_offsets, log_bounds, read_to_end
from reconciler.kafka.io.kept_listers import KeptListers
from reconciler.kafka.settings import KafkaSettings
from offsets_support import delete_records
from run_support import produce_plain

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest


def create_topic(settings: KafkaSettings, name: str, partitions: int, **config: str) -> None:
    admin.create_topic(settings, name, partitions, config)


def cleanup_policy(settings: KafkaSettings, name: str) -> str:
    from confluent_kafka.admin import ConfigResource

    admin = new_admin(settings)
    [future] = admin.describe_configs([ConfigResource("topic", name)]).values()
    value: str = future.result(timeout=settings.timeout_s)["cleanup.policy"].value
    return value


def test_read_to_end_of_empty_multi_partition_topic(kafka_settings: KafkaSettings) -> None:
    create_topic(kafka_settings, "empty", 5)
    started = time.monotonic()
    assert list(read_to_end(kafka_settings, "empty")) == []
    assert end_offsets(kafka_settings, "empty") == {p: 0 for p in range(5)}
    assert time.monotonic() - started < 5


def test_read_to_end_returns_every_record_in_partition_order(kafka_settings: KafkaSettings) -> None:
    create_topic(kafka_settings, "data", 3)
    # partition 2 stays empty; partitions 0/1 get multi-record batches.
    records = [(f"k{i}".encode(), f"v{i}".encode(), i % 2) for i in range(2500)]
    records.append((b"gone", None, 0))  # a tombstone stays a None value
    produce_plain(kafka_settings, "data", records)

    read = list(read_to_end(kafka_settings, "data"))

    assert len(read) == len(records)
    for partition in (0, 1):
        mine = [m for m in read if m.partition == partition]
        assert [m.offset for m in mine] == list(range(len(mine)))
        assert [(m.key, m.value) for m in mine] == [(k, v) for k, v, p in records if p == partition]
    assert end_offsets(kafka_settings, "data") == {0: 1251, 1: 1250, 2: 0}


def test_log_bounds_are_the_log_start_the_end_and_the_end_a_reader_stops_at(kafka_settings: KafkaSettings) -> None:
    """Partition 0: ten records, the first four deleted. Partition 1: a committed transaction of
    two records (its marker at 2), then an open one of three: a read_committed reader stops at 3."""
    topic = f"bounds-{kafka_settings.group_id}"
    create_topic(kafka_settings, topic, 2)
    produce_plain(kafka_settings, topic, [(b"k", b"v%d" % i, 0) for i in range(10)])
    delete_records(kafka_settings, topic, 0, 4)
    producer = new_producer(kafka_settings, None, **{"transactional.id": f"bounds-{kafka_settings.group_id}"})
    producer.init_transactions(kafka_settings.timeout_s)
    for committed in (True, False):
        producer.begin_transaction()
        for i in range(2 if committed else 3):
            producer.produce(topic, key=b"k", value=b"t%d" % i, partition=1)
        if committed:
            producer.commit_transaction(kafka_settings.timeout_s)
    producer.flush(kafka_settings.timeout_s)
    try:
        assert log_bounds(kafka_settings, [topic]) == {(topic, 0): LogBounds(4, 10, 10), (topic, 1): LogBounds(0, 6, 3)}
        uncommitted = log_bounds(kafka_settings, [topic], isolation_level="read_uncommitted")
        assert uncommitted == {(topic, 0): LogBounds(4, 10, 10), (topic, 1): LogBounds(0, 6, 6)}
        assert end_offsets(kafka_settings, topic) == {0: 10, 1: 3}
        assert log_bounds(kafka_settings, []) == {}  # a sink whose topics do not exist yet
    finally:
        producer.abort_transaction(kafka_settings.timeout_s)


def test_kept_listers_answer_with_one_consumer_per_isolation_level_and_drop_one_that_failed(
    kafka_settings: KafkaSettings,
) -> None:
    """What an idle tick asks every time (`kafka.io.kept_listers`): the same consumer answers
    again, each isolation level its own; a consumer whose question failed is not kept."""
    topic = f"kept-{kafka_settings.group_id}"
    create_topic(kafka_settings, topic, 2)
    produce_plain(kafka_settings, topic, [(b"k", b"v%d" % i, i % 2) for i in range(5)])
    kept = KeptListers()
    try:
        assert end_offsets(kafka_settings, topic, kept=kept) == {0: 3, 1: 2}
        committed = kept.take(kafka_settings, "read_committed")
        kept.give_back(kafka_settings, "read_committed", committed)
        assert end_offsets(kafka_settings, topic, isolation_level="read_uncommitted", kept=kept) == {0: 3, 1: 2}
        produce_plain(kafka_settings, topic, [(b"k", b"late", 0)])
        assert end_offsets(kafka_settings, topic, kept=kept) == {0: 4, 1: 2}  # asked anew, not remembered
        assert kept.take(kafka_settings, "read_committed") is committed
        assert kept.take(kafka_settings, "read_uncommitted") is not committed
        kept.give_back(kafka_settings, "read_committed", committed)
        with pytest.raises(ReconcilerError, match="no-such-topic"):
            end_offsets(kafka_settings, "no-such-topic", kept=kept)
        assert kept.take(kafka_settings, "read_committed") is not committed  # closed after its failure
    finally:
        kept.close()


def test_read_to_end_of_a_missing_topic_is_an_error(kafka_settings: KafkaSettings) -> None:
    with pytest.raises(ReconcilerError, match="no-such-topic"):
        list(read_to_end(kafka_settings, "no-such-topic"))


def test_ensure_topics_creates_connect_layout_and_is_idempotent(kafka_settings: KafkaSettings) -> None:
    ensure_topics(kafka_settings)
    ensure_topics(kafka_settings)  # existing, correct topics are accepted

    partitions = topic_partitions(kafka_settings)
    topics = kafka_settings.topics
    assert partitions[topics.configs] == 1
    assert partitions[topics.status] == topics.status_partitions == 5
    assert partitions[topics.offsets] == topics.offsets_partitions == 25
    assert partitions[topics.reconciler] == 1
    for spec in internal_topics(kafka_settings):
        assert cleanup_policy(kafka_settings, spec.name) == "compact"


def test_no_create_topics_refuses_and_names_the_missing_topics(kafka_settings: KafkaSettings) -> None:
    settings = dataclasses.replace(kafka_settings, create_topics=False)
    create_topic(settings, settings.topics.configs, 1, **{"cleanup.policy": "compact"})

    with pytest.raises(ReconcilerError) as excinfo:
        ensure_topics(settings)

    message = excinfo.value.message
    assert settings.topics.status in message and settings.topics.offsets in message
    assert settings.topics.configs not in message
    assert "--no-create-topics" in message
    assert settings.topics.status not in topic_partitions(settings)  # nothing was created


def test_config_topic_with_two_partitions_is_refused(kafka_settings: KafkaSettings) -> None:
    create_topic(kafka_settings, kafka_settings.topics.configs, 2, **{"cleanup.policy": "compact"})
    with pytest.raises(ReconcilerError, match=r"config topic .* has 2 partitions; Connect requires exactly 1"):
        ensure_topics(kafka_settings)


@pytest.mark.parametrize("policy", ["delete", "compact,delete"])
def test_internal_topic_that_is_not_compact_only_is_refused(kafka_settings: KafkaSettings, policy: str) -> None:
    status = kafka_settings.topics.status
    create_topic(kafka_settings, status, 5, **{"cleanup.policy": policy})
    with pytest.raises(ReconcilerError) as excinfo:
        ensure_topics(kafka_settings)
    assert f"{status} (status) has cleanup.policy={policy}" in excinfo.value.message
    assert excinfo.value.hint is not None and "cleanup.policy=compact" in excinfo.value.hint


def test_check_reachable_fails_fast_naming_the_address() -> None:
    settings = KafkaSettings(bootstrap_servers="127.0.0.1:1", timeout_s=2)
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as excinfo:
        check_reachable(settings)
    assert time.monotonic() - started < 1  # refused: known at once, not after the 2 s timeout
    assert excinfo.value.message == "cannot reach Kafka at 127.0.0.1:1: connection refused (nothing listens on that port)"
    assert excinfo.value.hint is not None and "--bootstrap-servers" in excinfo.value.hint


def test_bad_client_setting_is_a_clear_error(kafka: KafkaUnderTest, group_id: str) -> None:
    settings = kafka.settings(group_id, client_config={"no.such.setting": "1"})
    with pytest.raises(ReconcilerError, match='invalid Kafka client setting: No such configuration property: "no.such.setting"'):
        check_reachable(settings)


def test_sink_group_offsets_reads_committed_offsets(kafka_settings: KafkaSettings) -> None:
    from confluent_kafka import TopicPartition

    from reconciler.kafka.io.client import new_consumer
    from reconciler.kafka.io.groups import sink_group_offsets

    topic = f"orders-{kafka_settings.group_id}"  # its own: the session broker is shared by every test
    create_topic(kafka_settings, topic, 3)
    group = f"connect-sink-{kafka_settings.group_id}"
    assert sink_group_offsets(kafka_settings, group) == {}  # no commits yet
    consumer: Any = new_consumer(kafka_settings, None, **{"group.id": group})
    try:  # what a sink task does after writing its output: commit, without joining the group
        consumer.commit(offsets=[TopicPartition(topic, 0, 1200), TopicPartition(topic, 2, 7)], asynchronous=False)
    finally:
        consumer.close()
    assert sink_group_offsets(kafka_settings, group) == {(topic, 0): 1200, (topic, 2): 7}


@pytest.mark.parametrize(
    ("deleted", "reset", "read"),
    [(0, None, range(8)), (3, None, range(3, 8)), (0, "latest", range(8)), (3, "latest", range(0))],
)
def test_a_sink_range_reads_from_its_start_and_the_policy_resets_a_start_retention_passed(
    kafka: KafkaUnderTest, kafka_settings: KafkaSettings, deleted: int, reset: str | None, read: range
) -> None:
    """The driver decides the start (`sink.reset`); if retention (here DeleteRecords) removes it
    before the task fetches, the task's consumer resets by its `auto.offset.reset`, as Java's
    does: the log start (`earliest`, Connect's), or the end (`latest`: nothing read)."""

    from reconciler.runtime.sink.ranges import SinkPartitionWork
    from reconciler.runtime.sink.reader import RangeReader

    topic = f"retained-{kafka_settings.group_id}"  # one per parameter set
    create_topic(kafka_settings, topic, 1)
    produce_plain(kafka_settings, topic, [(b"k%d" % i, b"v%d" % i, 0) for i in range(8)])
    if deleted:
        delete_records(kafka_settings, topic, 0, deleted)
    overrides = {} if reset is None else {"auto.offset.reset": reset}
    work = SinkPartitionWork(
        settings=kafka_settings,
        connector="sink",
        connector_class="parquet-sink",
        task_id=0,
        task_config={},
        topic=topic,
        partition=0,
        start=0,
        committed=True,
        end=8,
        consumer_config=overrides,
    )
    reader = RangeReader(work, 0)
    values = [v.as_py() for batch in reader.batches() for v in batch.column("value")]
    assert values == [b"v%d" % i for i in read]
    assert (reader.position, reader.done) == (8, True)
