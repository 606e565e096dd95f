"""A sink partition's dead letter queue records, produced exactly once across crashes.

Java's `DeadLetterQueueReporter` sends each record with a plain producer and the task's offsets
are committed later: a crash in between sends the records again on the retry (at least once).
Here a partition's dead letters are produced in one Kafka transaction that also commits, to
the consumer group `<sink group>-dlq`, the offset after the last of them (`marker_group`). The
transactional id is the partition's (`<group.id>-<connector>-dlq-<topic>-<partition>`): a
retry's `init_transactions` fences a zombie and ends its transaction, then reads the marker, and
drops the dead letters below it, which a committed transaction holds already. So a record
reaches the DLQ once, whatever is killed when; a rewind (KIP-875) re-delivers records to the
sink, not to the DLQ. The topic is created when missing, as Java's reporter creates it: one
partition, `errors.deadletterqueue.topic.replication.factor` replicas.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from reconciler import failpoints
from reconciler.core.offsets_rules import TopicPartition
from reconciler.errors import ReconcilerError
from reconciler.kafka.formats.dead_letter import NO_TIMESTAMP, DeadLetter
from reconciler.kafka.io.admin import create_new_topics, topic_partitions
from reconciler.kafka.io.client import ErrorCollector, describe, new_admin, new_consumer, new_producer, translate
from reconciler.kafka.io.groups import committed_offsets
from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)
DLQ_PARTITIONS = 1  # Java's DLQ_NUM_DESIRED_PARTITIONS


def marker_group(sink_group: str) -> str:
    return f"{sink_group}-dlq"


def dlq_transactional_id(group_id: str, connector: str, tp: TopicPartition) -> str:
    return f"{group_id}-{connector}-dlq-{tp[0]}-{tp[1]}"


class TransactionalDeadLetters:
    """The dead letters of one source partition (`source`) into `topic`; see the module."""

    def __init__(self, settings: KafkaSettings, *, connector: str, sink_group: str, source: TopicPartition,
                 topic: str, replication_factor: int, end: int) -> None:
        self.settings, self.connector, self.source, self.topic = settings, connector, source, topic
        self.group = marker_group(sink_group)
        self.replication_factor = replication_factor
        self.end = end  # the source partition's end: a marker past it is another topic's of the same name
        self.txn_id = dlq_transactional_id(settings.group_id, connector, source)
        self.errors = ErrorCollector()
        self.producer: Any = None
        self.marker = 0

    def send(self, letters: Sequence[DeadLetter]) -> None:
        """Produce the letters not produced yet, and the marker past them, in one transaction."""
        from confluent_kafka import KafkaException, TopicPartition as KafkaTP

        self._claim()
        fresh = [letter for letter in letters if letter.offset >= self.marker]
        if not fresh:
            LOG.info("dead letters of %s-%d below offset %d are in %s already", *self.source, self.marker, self.topic)
            return
        after = fresh[-1].offset + 1
        try:
            self.producer.begin_transaction()
            for letter in fresh:
                self._produce(letter)
            self.producer.send_offsets_to_transaction([KafkaTP(*self.source, after)], self._group_metadata(),
                                                      self.settings.timeout_s)
            self.producer.commit_transaction(self.settings.timeout_s)
        except KafkaException as exc:
            raise self._failed(exc, f"producing {len(fresh)} dead letter(s) to {self.topic}") from exc
        self.marker = after
        failpoints.hit(failpoints.SINK_AFTER_DEAD_LETTERS)

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(self.settings.timeout_s)
            self.producer = None

    def _claim(self) -> None:
        """Take the transactional id (fencing a zombie, ending its transaction), make sure the
        topic exists, and read the marker the last committed transaction left."""
        from confluent_kafka import KafkaException

        if self.producer is not None:
            return
        self._create_topic()
        producer = new_producer(self.settings, self.errors, **{"transactional.id": self.txn_id})
        try:
            producer.init_transactions(self.settings.timeout_s)
        except KafkaException as exc:
            raise self._failed(exc, f"initialising transactions as {self.txn_id}") from exc
        self.producer = producer
        found = committed_offsets(self.settings, self.group, [self.source]).get(self.source, 0)
        self.marker = found if found <= self.end else 0

    def _group_metadata(self) -> Any:
        """The marker group's metadata, as a simple consumer that never joins it has it."""
        consumer = new_consumer(self.settings, ErrorCollector(), **{"group.id": self.group})
        try:
            return consumer.consumer_group_metadata()
        finally:
            consumer.close()

    def _create_topic(self) -> None:
        from confluent_kafka.cimpl import NewTopic

        if self.topic in topic_partitions(self.settings):
            return
        LOG.warning("dead letter queue topic %s does not exist; creating it", self.topic)
        new = NewTopic(self.topic, num_partitions=DLQ_PARTITIONS, replication_factor=self.replication_factor)
        create_new_topics(self.settings, new_admin(self.settings), [new], lambda name, exc: ReconcilerError(
            f"cannot create the dead letter queue topic {name} (errors.deadletterqueue.topic.replication.factor="
            f"{self.replication_factor}): {describe(exc)}"))

    def _produce(self, letter: DeadLetter) -> None:
        extra = {} if letter.timestamp == NO_TIMESTAMP else {"timestamp": letter.timestamp}
        while True:
            try:
                self.producer.produce(self.topic, key=letter.key, value=letter.value, headers=letter.all_headers(),
                                      **extra)
                return
            except BufferError:  # local queue full: let deliveries drain, then retry
                self.producer.poll(0.1)

    def _failed(self, exc: Exception, doing: str) -> ReconcilerError:
        from confluent_kafka import KafkaException

        self.producer = None  # state unknown: the task fails; its retry starts with a fresh one
        if isinstance(exc, KafkaException):
            error = translate(exc, self.settings, doing)
            return ReconcilerError(f"{error.message}{self.errors.explain()}")
        return ReconcilerError(f"{doing}: {exc}")
