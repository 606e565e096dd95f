"""One source task's batch in its Spark partition: poll, then produce records and offsets in one
Kafka transaction (KIP-618, docs/runtime.md#source-tasks).

The task is polled until it has nothing more or the batch's record budget is spent, its offsets
advanced locally between polls; a batch that moved only offsets (e.g. past blank lines) still
commits them. Records are produced straight from the worker, never through the JVM, under
`transactional.id = ${group}-${connector}-${task}`: initialising it fences any older producer
with it — a zombie task from a crashed or slow run — and aborts its open transaction, so of two
runs of the same task at most one commits. The driver side is `driver` and `job`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import length_hint
from typing import TYPE_CHECKING, Any

from reconciler import failpoints
from reconciler.connectors.api import (
    ConnectorError,
    PartitionKey,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    partition_from_key,
)
from reconciler.connectors.registry import load_connector
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.client import ErrorCollector, describe, kafka_error, new_producer
from reconciler.kafka.io.consume import wait_until_stable
from reconciler.kafka.io.offset_stores import OffsetsStore
from reconciler.kafka.io.produce import task_transactional_id
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.io.topic_creation import ensure_topics, from_config
from reconciler.runtime.batch.task_logs import TaskLogging, task_logging
from reconciler.runtime.source.committed import STABLE_WAIT_S, CommittedOffsets, read_after_fence

if TYPE_CHECKING:
    from confluent_kafka import KafkaException

LOG = logging.getLogger(__name__)

DEFAULT_BATCH_RECORDS = 1_000_000
PRODUCE_CHUNK = 10_000
# A task stops polling after this long, well inside the transaction timeout below, so a slow
# source commits what it has instead of having its transaction aborted by the broker.
MAX_POLLING_S = 30.0
# Large batches, no compression, a short linger: throughput with few round trips
# (docs/runtime.md#producer-settings).
PRODUCER_TUNING: dict[str, Any] = {
    "linger.ms": 20,
    "batch.num.messages": 100_000,
    "batch.size": 4_000_000,
    "queue.buffering.max.messages": 500_000,
    "queue.buffering.max.kbytes": 1_048_576,
    "compression.type": "none",
    # Java's default: a task killed mid-transaction holds readers of the offsets topic back at
    # most this long (if nothing takes its transactional id over sooner).
    "transaction.timeout.ms": 60_000,
}


@dataclass(frozen=True, kw_only=True)
class SourceTaskWork:
    settings: KafkaSettings
    connector: str
    connector_class: str
    task_id: int
    task_config: dict[str, str]
    committed: CommittedOffsets
    max_records: int = DEFAULT_BATCH_RECORDS
    # The worker's offsets topic when the connector has its own store (`settings` then reach
    # the primary one): written after each commit, best effort, as Connect does (KIP-618).
    secondary: OffsetsStore | None = None
    logging: TaskLogging = TaskLogging()  # how the task logs in its worker
    # Wait after the commit until read_committed readers see it (`_wait_until_readable`); off
    # when the driver waits once for a whole packed job instead (`job.run_sources`).
    wait_readable: bool = True
    # Read the committed offsets again after this task's fence instead of trusting `committed`:
    # a task of a failed job may still commit after the driver read them (`committed`'s docs).
    reread: bool = False


@dataclass(frozen=True, kw_only=True)
class SourceTaskResult:
    task_id: int
    records: int
    error: str | None = None
    seconds: float = 0.0  # time spent in the partition (debug log: job overhead = job - max)
    bytes: int = 0  # key and value bytes of the records committed
    topics: tuple[str, ...] = ()  # the topics of the records committed, sorted (KIP-558 active topics)


# --- Spark partition ------------------------------------------------------------------------


def source_partition(item: SourceTaskWork) -> SourceTaskResult:
    """Runs in a Python worker: poll the task and produce records + offsets in one transaction."""
    started, records, size, error = time.monotonic(), 0, 0, None
    topics: tuple[str, ...] = ()
    try:
        with task_logging(item.logging, item.connector, item.task_id):
            task = _new_task(item)
            try:
                batch = TransactionalBatch(item)
                records, size = batch.run(task), batch.bytes
                topics = tuple(sorted(batch.topics)) if records else ()  # committed: what readers now see
            finally:
                task.stop()
    except Exception:
        records, size, error, topics = 0, 0, traceback.format_exc(), ()
    return SourceTaskResult(
        task_id=item.task_id,
        records=records,
        error=error,
        seconds=time.monotonic() - started,
        bytes=size,
        topics=topics,
    )


def _new_task(item: SourceTaskWork) -> SourceTask:
    connector = load_connector(item.connector_class)
    if not issubclass(connector, SourceConnector):
        raise ConnectorError(f"{item.connector_class!r} is not a source connector")
    return connector.task_class(item.task_config)


class TransactionalBatch:
    """Polls a task to the end of its budget and writes everything in one transaction."""

    def __init__(self, item: SourceTaskWork) -> None:
        self.item = item
        self.txn_id = task_transactional_id(item.settings.group_id, item.connector, item.task_id)
        self.errors = ErrorCollector()
        self.producer: Any = None
        self.topics: set[str] = set()  # every data topic this batch produced to
        # KIP-158: topics this source writes to are created first, when its config asks for it.
        self.topic_creation = from_config(item.task_config)
        self.topics_checked: set[str] = set()
        self.bytes = 0  # key and value bytes produced

    def run(self, task: SourceTask) -> int:
        from confluent_kafka import KafkaException

        settings = self.item.settings
        tuning = {**PRODUCER_TUNING, "transactional.id": self.txn_id}
        self.producer = new_producer(settings, self.errors, **tuning)
        try:
            # Fences every older producer with this id and aborts its open transaction.
            self.producer.init_transactions(settings.timeout_s)
        except KafkaException as exc:
            raise self._failed(exc) from exc
        if self.item.reread:
            stores = [OffsetsStore(settings, settings.topics.offsets)]
            stores += [self.item.secondary] if self.item.secondary is not None else []
            self.item = dataclasses.replace(self.item, committed=read_after_fence(self.item.connector, stores))
        records, moved = self._transaction(task)
        failpoints.hit(failpoints.SOURCE_AFTER_COMMIT)
        if moved and self.item.secondary is not None:
            self._write_secondary(self.item.secondary, moved)
        return records

    def _write_secondary(self, store: OffsetsStore, moved: Mapping[PartitionKey, SourceOffset]) -> None:
        """Connect's secondary write: after the primary commit, outside any transaction; a
        failure is logged, never the task's (the primary store is the one that counts)."""
        keys, errors = self.item.committed.secondary_keys, ErrorCollector()
        producer = new_producer(store.settings, errors)
        try:
            for key, offset in moved.items():
                value = rec.encode_offset_value(offset)
                for raw in self._keys(keys, key):
                    self._produce_on(producer, store.topic, raw, value)
            left = producer.flush(store.settings.timeout_s)
            if left:
                LOG.warning(
                    "task %s-%d: %d offsets record(s) not written to the secondary store %s%s",
                    self.item.connector,
                    self.item.task_id,
                    left,
                    store,
                    errors.explain(),
                )
        except Exception:
            LOG.warning(
                "task %s-%d: offsets not written to the secondary store %s",
                self.item.connector,
                self.item.task_id,
                store,
                exc_info=True,
            )

    def _transaction(self, task: SourceTask) -> tuple[int, dict[PartitionKey, SourceOffset]]:
        from confluent_kafka import KafkaException

        timeout_s = self.item.settings.timeout_s
        try:
            records, moved = self._poll_and_produce(task)
            if not moved and not records:
                return 0, moved
            self._produce_offsets(moved)
            # Everything on the broker before committing (the commit would flush anyway), so a
            # crash here leaves a whole open transaction behind, the case fencing must clean up.
            self.producer.flush(timeout_s)
            failpoints.hit(failpoints.SOURCE_BEFORE_COMMIT)
            self.producer.commit_transaction(timeout_s)
            if self.item.wait_readable:
                self._wait_until_readable()
            return records, moved
        except KafkaException as exc:
            raise self._failed(exc) from exc
        except BaseException:
            # The task itself failed mid-batch. Abort now: an open transaction would hold every
            # source connector's offsets back (the stable-offsets gate) until it times out.
            self._abort_quietly()
            raise

    def _wait_until_readable(self) -> None:
        """Return only once read_committed readers see this commit (see `wait_until_stable`), so
        that what `run --once` reports as written is what the next command reads."""
        topics = sorted({*self.topics, self.item.settings.topics.offsets})
        late = wait_until_stable(self.item.settings, topics, STABLE_WAIT_S)
        if late:
            LOG.info(
                "task %s-%d: committed, but %s still hold(s) an open transaction of another producer",
                self.item.connector,
                self.item.task_id,
                ", ".join(late),
            )

    def _abort_quietly(self) -> None:
        try:
            self.producer.abort_transaction(self.item.settings.timeout_s)
        except Exception:  # no transaction was begun, or the producer is already unusable
            LOG.debug("abort of %s after a task error did not complete", self.txn_id, exc_info=True)

    def _poll_and_produce(self, task: SourceTask) -> tuple[int, dict[PartitionKey, SourceOffset]]:
        position = dict(self.item.committed.offsets)
        moved: dict[PartitionKey, SourceOffset] = {}
        records, budget = 0, self.item.max_records
        deadline = time.monotonic() + MAX_POLLING_S
        while records < budget and time.monotonic() < deadline:
            batch = task.poll_batch(position, budget - records)
            if batch.is_empty or (not len(batch) and _unchanged(batch.offsets, position)):
                break
            if not moved and not records:
                self.producer.begin_transaction()
            self._produce_records(batch)
            records += len(batch)
            position.update(batch.offsets)
            moved.update(batch.offsets)
        return records, moved

    def _produce_records(self, batch: SourceBatch) -> None:
        topics = batch.topics
        if not topics:
            return
        # `map(len, …)` over the non-null values runs in C: no Python frame per record.
        self.bytes += sum(map(len, filter(None, batch.values))) + sum(map(len, filter(None, batch.keys)))
        # One topic, as most sources' batches: `count` compares in C (identity first), where a
        # set of the column would hash every record's topic.
        single = topics[0] == topics[-1] and topics.count(topics[0]) == len(topics)
        self.topics.update((topics[0],) if single else set(topics))
        if self.topic_creation is not None:
            self._create_topics((topics[0],) if single else topics)
        if single:
            self._produce_all(topics[0], _as_list(batch.keys), _as_list(batch.values))
            return
        for topic, key, value in zip(topics, batch.keys, batch.values, strict=True):
            self._produce_retry(topic, key, value)

    def _create_topics(self, topics: Sequence[str]) -> None:
        new = set(topics) - self.topics_checked
        if new and self.topic_creation is not None:
            created = ensure_topics(self.item.settings, new, self.topic_creation)
            if created:
                LOG.info("task %s-%d created topic(s) %s", self.item.connector, self.item.task_id, ", ".join(created))
            self.topics_checked |= new

    def _produce_all(self, topic: str, keys: list[bytes | None], values: list[bytes | None]) -> None:
        """produce() for every record, iterated in C (`map`), about a third less overhead than a
        Python loop; when the local queue is full, resume at the record that did not fit."""
        produce, position, count = self.producer.produce, 0, len(values)
        while position < count:
            end = min(count, position + PRODUCE_CHUNK)
            pending = iter(values[position:end])
            try:
                deque(map(produce, repeat(topic, end - position), pending, keys[position:end]), maxlen=0)
                position = end
            except BufferError:  # `map` took the record that failed from `pending`: retry it
                position = end - length_hint(pending) - 1
                self.producer.poll(0.05)  # let deliveries drain the queue

    def _produce_retry(self, topic: str, key: bytes | None, value: bytes | None) -> None:
        self._produce_on(self.producer, topic, key, value)

    @staticmethod
    def _produce_on(producer: Any, topic: str, key: bytes | None, value: bytes | None) -> None:
        while True:
            try:
                producer.produce(topic, value, key)
                return
            except BufferError:
                producer.poll(0.05)

    def _produce_offsets(self, moved: Mapping[PartitionKey, SourceOffset]) -> None:
        keys = self.item.committed.raw_keys
        topic = self.item.settings.topics.offsets
        for key, offset in moved.items():
            value = rec.encode_offset_value(offset)
            for raw in self._keys(keys, key):
                self._produce_retry(topic, raw, value)

    def _keys(self, known: Mapping[PartitionKey, tuple[bytes, ...]], key: PartitionKey) -> tuple[bytes, ...]:
        """Where a partition's new offset goes; a partition never seen: Java's bytes for it."""
        return known.get(key) or (rec.encode_offset_key(self.item.connector, partition_from_key(key)),)

    def _failed(self, exc: KafkaException) -> ConnectorError:
        error = kafka_error(exc)
        if error is not None and not error.fatal() and error.txn_requires_abort():
            try:
                self.producer.abort_transaction(self.item.settings.timeout_s)
            except Exception:  # the transaction dies with the producer anyway
                LOG.debug("abort after a failed transaction failed too", exc_info=True)
        return ConnectorError(
            f"task {self.item.connector}-{self.item.task_id} (transactional.id {self.txn_id}): "
            f"the transaction was not committed: {describe(exc)}{self.errors.explain()}"
        )


def _as_list(column: Sequence[bytes | None]) -> list[bytes | None]:
    """The column itself when it is a list already (no copy of a million references)."""
    return column if isinstance(column, list) else list(column)


def _unchanged(offsets: Mapping[PartitionKey, SourceOffset], position: Mapping[PartitionKey, SourceOffset]) -> bool:
    return all(position.get(key) == offset for key, offset in offsets.items())
