"""A sink partition's dead letters on the real broker: produced with the original record's
bytes, timestamp and headers plus Connect's context headers; once, when a retry sends the same
letters again (the marker committed in their transaction); a zombie's open transaction is fenced
and its letters never appear; the DLQ topic is created as Java creates it (one partition)."""

from __future__ import annotations

import uuid

import pytest

from reconciler.errors import ReconcilerError
from reconciler.kafka.formats.dead_letter import DeadLetter, ErrorContext
from reconciler.kafka.io.admin import create_topic, topic_partitions
from reconciler.kafka.io.consume import raw_to_end
from reconciler.kafka.io.dead_letters import TransactionalDeadLetters
from reconciler.kafka.settings import KafkaSettings

CONTEXT = ErrorContext(connector="sink", task_id=1, stage="VALUE_CONVERTER", executing_class="a.Converter",
                       exception_class="a.DataException", message="bad", trace="a.DataException: bad\n")


def letters(offsets: range, topic: str) -> list[DeadLetter]:
    return [DeadLetter(topic=topic, partition=3, offset=o, timestamp=1_700_000_000_000 + o, key=b"k%d" % o,
                       value=b"v%d" % o, headers=(("h", b"%d" % o),), context=CONTEXT) for o in offsets]


def names(settings: KafkaSettings) -> tuple[str, str, str]:
    """(source topic, created with 4 partitions; DLQ topic; sink group), unique to the test."""
    tag = uuid.uuid4().hex[:8]
    create_topic(settings, f"orders-{tag}", 4)
    return f"orders-{tag}", f"dlq-{tag}", f"connect-{tag}"


def sender(settings: KafkaSettings, source: str, dlq: str, sink_group: str) -> TransactionalDeadLetters:
    return TransactionalDeadLetters(settings, connector="sink", sink_group=sink_group, source=(source, 3),
                                    topic=dlq, replication_factor=1, end=1_000)


def test_a_retry_sending_the_same_letters_produces_them_once(kafka_settings: KafkaSettings) -> None:
    source, dlq, group = names(kafka_settings)
    first = sender(kafka_settings, source, dlq, group)
    first.send(letters(range(0, 5), source))
    first.close()
    assert topic_partitions(kafka_settings)[dlq] == 1

    retry = sender(kafka_settings, source, dlq, group)  # the crash's retry: the same range, and more
    retry.send(letters(range(0, 8), source))
    retry.close()

    found = list(raw_to_end(kafka_settings, [dlq]))
    assert [m.key() for m in found] == [b"k%d" % o for o in range(8)]
    message = found[6]
    assert message.value() == b"v6" and message.timestamp()[1] == 1_700_000_000_006
    assert message.headers()[:4] == [("h", b"6"), ("__connect.errors.topic", source.encode()),
                                     ("__connect.errors.partition", b"3"), ("__connect.errors.offset", b"6")]


def test_a_zombies_letters_are_fenced_and_never_read(kafka_settings: KafkaSettings) -> None:
    source, dlq, group = names(kafka_settings)
    zombie = sender(kafka_settings, source, dlq, group)
    zombie._claim()
    zombie.producer.begin_transaction()
    zombie.producer.produce(dlq, key=b"zombie", value=b"z")
    zombie.producer.flush(10)

    live = sender(kafka_settings, source, dlq, group)  # takes the transactional id over: the zombie's is aborted
    live.send(letters(range(2), source))
    live.close()
    with pytest.raises(Exception, match="(?i)fenced|epoch"):
        zombie.producer.commit_transaction(10)
    assert [m.key() for m in raw_to_end(kafka_settings, [dlq])] == [b"k0", b"k1"]


def test_a_topic_that_cannot_be_created_fails_in_one_line(kafka_settings: KafkaSettings) -> None:
    source, dlq, group = names(kafka_settings)
    broken = TransactionalDeadLetters(kafka_settings, connector="sink", sink_group=group, source=(source, 3),
                                      topic=dlq, replication_factor=5, end=10)
    with pytest.raises(ReconcilerError, match=f"cannot create the dead letter queue topic {dlq} .*factor=5"):
        broken.send(letters(range(1), source))
