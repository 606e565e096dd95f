"""One batch of a source connector: each task polls and produces from its own Spark partition.

Exactly-once as KIP-618 does it (docs/runtime.md#source-tasks): a task produces its records and
its source offsets (Connect's offsets-topic key `["<name>",{partition}]`, murmur2-placed) in
ONE Kafka transaction with `transactional.id = ${group}-${connector}-${task}`. Initialising
that id fences any older producer with it — a zombie task from a crashed or slow run — and
aborts its open transaction, so of two runs of the same task at most one commits.

The driver first takes over the transactional ids of the tasks about to run (aborting what a
killed run left open, which would otherwise hide later offsets from read_committed readers),
checks that no other open transaction holds the offsets topic back (if one does, sources sit
this batch out rather than run on stale offsets), then reads the committed offsets (the topic
read to the end, once per batch for every source connector) and hands each task all of its
connector's offsets. In the partition,
the task is polled until it has nothing more or the batch's record budget is spent, its
offsets advanced locally between polls; a batch that moved only offsets (e.g. past blank lines)
still commits them. Records are produced straight from the worker, never through the JVM.
"""

from __future__ import annotations

import dataclasses
import logging
import time
import traceback
from collections import deque
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from operator import length_hint
from typing import TYPE_CHECKING, Any

from reconciler.connectors.api import (
    ConnectorError,
    PartitionKey,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    partition_from_key,
    partition_key,
)
from reconciler.connectors.registry import load_connector
from reconciler.errors import RetryableError
from reconciler.kafka import records as rec
from reconciler.kafka.admin import ensure_offsets_topic
from reconciler.kafka.client import ErrorCollector, describe, kafka_error, new_producer
from reconciler.kafka.consume import end_offsets, wait_until_stable
from reconciler.kafka.overrides import PRODUCER, client_settings
from reconciler.kafka.produce import take_over, task_transactional_id
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.topic_creation import ensure_topics, from_config
from reconciler.offsets.model import OffsetsStore, source_stores
from reconciler.offsets.source import StoreKey, read_stores
from reconciler import failpoints
from reconciler.runtime.spark import PartitionFailed, run_partitions

if TYPE_CHECKING:
    from confluent_kafka import KafkaException
    from pyspark.sql import SparkSession

    from reconciler.runtime.executor import TaskOutcome, TaskWork

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


class OpenTransaction(RetryableError):
    """The offsets topic cannot be read to a stable end yet; try the source tasks next batch."""


@dataclass(frozen=True)
class CommittedOffsets:
    """A connector's committed source offsets, and the key bytes a new offset of each known
    partition goes under in its primary store (and in the secondary one, the worker's topic,
    when it has its own): Java's bytes for it, then its other live encodings
    (`OffsetsReplay.keys_for`). A partition not listed gets Java's bytes only."""

    offsets: dict[PartitionKey, SourceOffset]
    raw_keys: dict[PartitionKey, tuple[bytes, ...]]
    secondary_keys: dict[PartitionKey, tuple[bytes, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class SourceTaskResult:
    task_id: int
    records: int
    error: str | None = None
    seconds: float = 0.0  # time spent in the partition (debug log: job overhead = job - max)
    bytes: int = 0  # key and value bytes of the records committed


# --- driver ---------------------------------------------------------------------------------


def connector_stores(settings: KafkaSettings, works: Sequence[TaskWork]) -> dict[str, list[OffsetsStore]]:
    """Each source connector's offsets stores, primary first (`offsets.model.source_stores`)."""
    return {w.connector: source_stores(settings, w.connector_config) for w in works}


def fence_tasks(settings: KafkaSettings, works: Sequence[TaskWork]) -> None:
    """Initialise the transactional id of every task about to run, before offsets are read,
    on the cluster the task produces to.

    A task killed mid-transaction leaves it open; until someone takes over its id, read_committed
    readers stop at that transaction's first offset (the last stable offset) in each partition
    it wrote to, so offsets committed after it — any connector's — would look older than they
    are. Taking the ids over aborts those transactions first, as Connect's workers do before a
    task reads its offsets.
    """
    targets = {
        task_transactional_id(settings.group_id, w.connector, w.task_id): client_settings(settings, w.connector_config, PRODUCER)
        for w in works
    }
    with ThreadPoolExecutor(min(8, len(targets) or 1), thread_name_prefix="fence") as pool:
        list(pool.map(lambda txn_id: take_over(targets[txn_id], txn_id), sorted(targets)))


def open_transactions(store: OffsetsStore) -> list[int]:
    """Offsets-topic partitions whose stable end lags their end: a transaction is still open
    there (a killed task of a connector not in this batch), hiding what was committed after it."""
    stable = end_offsets(store.settings, store.topic, isolation_level="read_committed")
    written = end_offsets(store.settings, store.topic, isolation_level="read_uncommitted")
    return sorted(p for p, end in written.items() if stable.get(p, end) < end)


# A transaction committed a moment ago can still look open: Kafka writes the commit markers to the
# partitions after the producer's commit returns. Waiting this long tells that lag from a
# transaction a killed task really left open.
STABLE_WAIT_S = 5.0


def wait_for_stable_offsets(stores: Sequence[OffsetsStore], wait_s: float = STABLE_WAIT_S) -> dict[str, list[int]]:
    """`open_transactions` of every store, re-checked with backoff until none is open or
    `wait_s` ran out; what is still open, by store."""
    timeout_s = min(store.settings.timeout_s for store in stores) if stores else wait_s
    deadline = time.monotonic() + min(wait_s, timeout_s)
    delay = 0.05
    while True:
        blocked = {str(store): open_transactions(store) for store in stores}
        blocked = {store: partitions for store, partitions in blocked.items() if partitions}
        if not blocked or time.monotonic() + delay > deadline:
            return blocked
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def source_offsets(settings: KafkaSettings, works: Sequence[TaskWork]) -> dict[StoreKey, OffsetsReplay]:
    """Fence the tasks, check no transaction hides offsets, and read every offsets store the
    connectors use (the worker's topic, and connector-specific ones, created when missing)."""
    started = time.monotonic()
    worker = OffsetsStore(settings, settings.topics.offsets)
    stores = _unique([worker] + [store for found in connector_stores(settings, works).values() for store in found])
    for store in stores:
        if store.key != worker.key:  # the worker's is an internal topic, made by `prepare`
            ensure_offsets_topic(store.settings, store.topic)
    fence_tasks(settings, works)
    fenced = time.monotonic()
    blocked = wait_for_stable_offsets(stores)
    LOG.debug("source offsets: fenced %d task(s) in %.3fs, checked transactions in %.3fs",
              len(works), fenced - started, time.monotonic() - fenced)
    if blocked:
        where = "; ".join(f"{store} partition(s) {partitions}" for store, partitions in blocked.items())
        raise OpenTransaction(
            f"offsets topic {where} hold an open transaction "
            "(a task killed mid-batch, of a connector not running now); source offsets read now could "
            "be stale, so no source task runs until the broker aborts it (transaction.timeout.ms)"
        )
    return read_stores(stores)


def _unique(stores: Sequence[OffsetsStore]) -> list[OffsetsStore]:
    """Each store once, in first-seen order."""
    seen: dict[StoreKey, OffsetsStore] = {}
    for store in stores:
        seen.setdefault(store.key, store)
    return list(seen.values())


def committed_offsets(
    replays: Mapping[StoreKey, OffsetsReplay], connector: str, stores: Sequence[OffsetsStore]
) -> CommittedOffsets:
    """The connector's offsets, the primary store winning; the key bytes of each store."""
    offsets: dict[PartitionKey, SourceOffset] = {}
    keys: list[dict[PartitionKey, tuple[bytes, ...]]] = []
    for store in stores:
        replay = replays[store.key]
        raw_keys: dict[PartitionKey, tuple[bytes, ...]] = {}
        for partition, offset, _raw in replay.offsets_for(connector):
            key = partition_key(partition)
            offsets.setdefault(key, offset)  # the primary wins; the secondary fills gaps
            raw_keys[key] = tuple(replay.keys_for(connector, partition))
        keys.append(raw_keys)
    return CommittedOffsets(offsets, keys[0], keys[1] if len(keys) > 1 else {})


def run_source(
    session: SparkSession,
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    committed: CommittedOffsets,
    *,
    pool: str,
    stores: Sequence[OffsetsStore] = (),
    max_records: int = DEFAULT_BATCH_RECORDS,
) -> list[TaskOutcome]:
    """One batch of every task in `works` (all of one source connector); one outcome per work.

    `stores`: the connector's offsets stores, primary first (default: the worker's topic). The
    tasks produce on the primary store's cluster."""
    from reconciler.runtime.executor import TaskOutcome

    name = works[0].connector
    if not issubclass(load_connector(works[0].connector_class), SourceConnector):
        raise ConnectorError(f"{works[0].connector_class!r} is not a source connector")
    primary = stores[0] if stores else OffsetsStore(settings, settings.topics.offsets)
    secondary = stores[1] if len(stores) > 1 else None
    # The task's settings reach the primary store's cluster and name its topic as `offsets`.
    task_settings = dataclasses.replace(
        primary.settings, topics=dataclasses.replace(primary.settings.topics, offsets=primary.topic)
    )
    items = [
        SourceTaskWork(
            task_settings, w.connector, w.connector_class, w.task_id, dict(w.task_config), committed, max_records, secondary,
        )
        for w in works
    ]
    started = time.monotonic()
    results = run_partitions(session, items, source_partition, pool=pool, description=f"source {name}")
    seconds = ", ".join(f"{r.seconds:.2f}" for r in results if isinstance(r, SourceTaskResult))
    LOG.debug("source %s: job %.3fs (tasks %s s)", name, time.monotonic() - started, seconds)
    outcomes = []
    for work, result in zip(works, results, strict=True):
        if isinstance(result, PartitionFailed):
            outcomes.append(TaskOutcome(name, work.task_id, 0, result.trace))
        else:
            outcomes.append(TaskOutcome(name, work.task_id, result.records, result.error, bytes=result.bytes))
    return outcomes


# --- Spark partition ------------------------------------------------------------------------


def source_partition(item: SourceTaskWork) -> SourceTaskResult:
    """Runs in a Python worker: poll the task and produce records + offsets in one transaction."""
    started, records, size, error = time.monotonic(), 0, 0, None
    try:
        task = _new_task(item)
        try:
            batch = TransactionalBatch(item)
            records, size = batch.run(task), batch.bytes
        finally:
            task.stop()
    except Exception:
        records, size, error = 0, 0, traceback.format_exc()
    return SourceTaskResult(item.task_id, records, error, time.monotonic() - started, size)


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
                LOG.warning("task %s-%d: %d offsets record(s) not written to the secondary store %s%s",
                            self.item.connector, self.item.task_id, left, store, errors.explain())
        except Exception:
            LOG.warning("task %s-%d: offsets not written to the secondary store %s",
                        self.item.connector, self.item.task_id, store, exc_info=True)

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
            LOG.info("task %s-%d: committed, but %s still hold(s) an open transaction of another producer",
                     self.item.connector, self.item.task_id, ", ".join(late))

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
        self.topics.update(set(topics))
        if self.topic_creation is not None:
            self._create_topics(topics)
        if topics[0] == topics[-1] and len(set(topics)) == 1:
            self._produce_all(topics[0], list(batch.keys), list(batch.values))
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


def _unchanged(offsets: Mapping[PartitionKey, SourceOffset], position: Mapping[PartitionKey, SourceOffset]) -> bool:
    return all(position.get(key) == offset for key, offset in offsets.items())
