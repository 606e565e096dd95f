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
connector's offsets. What a task does in its Spark partition is `source_batch`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from reconciler.connectors.api import ConnectorError, PartitionKey, SourceConnector, SourceOffset, partition_key
from reconciler.connectors.registry import load_connector
from reconciler.errors import RetryableError
from reconciler.kafka.io.admin import ensure_offsets_topic
from reconciler.kafka.io.client import probe_bootstrap
from reconciler.kafka.io.consume import end_offsets
from reconciler.kafka.io.offset_stores import OffsetsStore, StoreKey, read_stores, source_stores
from reconciler.kafka.io.overrides import PRODUCER, client_settings
from reconciler.kafka.io.produce import take_over, task_transactional_id
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.source_batch import (
    DEFAULT_BATCH_RECORDS,
    STABLE_WAIT_S,
    CommittedOffsets,
    SourceTaskResult,
    SourceTaskWork,
    source_partition,
)
from reconciler.runtime.spark import PartitionFailed, run_partitions
from reconciler.runtime.tasks import TaskOutcome, TaskWork

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG = logging.getLogger(__name__)


class OpenTransaction(RetryableError):
    """The offsets topic cannot be read to a stable end yet; try the source tasks next batch."""


# --- driver ---------------------------------------------------------------------------------


def connector_stores(settings: KafkaSettings, works: Sequence[TaskWork]) -> dict[str, list[OffsetsStore]]:
    """Each source connector's offsets stores, primary first (`kafka.io.offset_stores.source_stores`)."""
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
        probe_bootstrap(store.settings)  # a store's cluster nothing listens on is known now, not after the timeout
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
