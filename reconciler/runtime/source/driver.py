"""What the driver does before a batch of source tasks runs: take over the tasks' transactional
ids, check that no open transaction hides committed offsets, and read the offsets stores.

One connector's trouble stays its own: a store whose cluster cannot be reached, an open
transaction in a store, or a failed take-over of a connector's ids makes that connector's tasks
sit the batch out (`BatchOffsets.not_run`) while the others run, as each Java task reads its
own offsets and retries its own clients. The store every connector shares (the worker's offsets
topic) holds them all back, as it does in Java.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

from reconciler.kafka.io.admin import ensure_offsets_topic
from reconciler.kafka.io.client import probe_bootstrap
from reconciler.kafka.io.offset_stores import KeptOffsetsReaders, OffsetsStore, StoreKey, read_stores, source_stores
from reconciler.kafka.io.overrides import PRODUCER, client_settings
from reconciler.kafka.io.produce import take_over, task_transactional_id
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.source.committed import attempt, wait_for_stable_offsets
from reconciler.runtime.batch.tasks import NotRun, TaskWork

LOG = logging.getLogger(__name__)
FENCING_THREADS = 32
T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class BatchOffsets:
    """What the driver read for a batch's sources: each readable store's offsets, and, by
    connector, why its tasks do not run in this batch (a connector not in it runs)."""

    replays: Mapping[StoreKey, OffsetsReplay]
    not_run: Mapping[str, NotRun]


def source_offsets(
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    held: Collection[str] = frozenset(),
    readers: KeptOffsetsReaders | None = None,
) -> BatchOffsets:
    """Fence the tasks, check no transaction hides offsets, and read every offsets store the
    connectors use (the worker's topic, and connector-specific ones, created when missing).
    Each step leaves out the connectors an earlier one found unable to run.

    `held`: the `fence_key`s of tasks this process fenced before and whose every batch since
    ended cleanly (the executor keeps them): no transaction of theirs can be open, so they are
    not fenced again. Any other — a new process, a task whose batch failed — is. `readers`:
    the stores are read by these kept readers (the executor's), else read from the beginning."""
    started = time.monotonic()
    by_connector = connector_stores(settings, works)
    worker = OffsetsStore(settings, settings.topics.offsets)
    broken: dict[StoreKey, NotRun] = {}
    for store in _unique([worker] + [store for found in by_connector.values() for store in found]):
        if isinstance(why := attempt(_prepare, store, worker), NotRun):
            broken[store.key] = why
    not_run = _by_connector(by_connector, broken)
    to_fence = [w for w in works if w.connector not in not_run and fence_key(settings, w) not in held]
    not_run.update(fence_tasks(settings, to_fence))
    fenced = time.monotonic()
    needed = _unique([store for name, found in by_connector.items() if name not in not_run for store in found])
    broken.update(wait_for_stable_offsets(needed, kept=None if readers is None else readers.listers))
    replays: dict[StoreKey, OffsetsReplay] = {}
    for cluster in _by_cluster(store for store in needed if store.key not in broken):  # one pass per cluster
        read = attempt(read_stores if readers is None else readers.read, cluster)
        if isinstance(read, NotRun):
            broken.update(dict.fromkeys((store.key for store in cluster), read))
        else:
            replays.update(read)
    LOG.debug("source offsets: fenced %d task(s) in %.3fs, checked and read the stores in %.3fs",
              len(to_fence), fenced - started, time.monotonic() - fenced)
    return BatchOffsets(replays, {**_by_connector(by_connector, broken), **not_run})


def connector_stores(settings: KafkaSettings, works: Sequence[TaskWork]) -> dict[str, list[OffsetsStore]]:
    """Each source connector's offsets stores, primary first (`kafka.io.offset_stores.source_stores`)."""
    return {w.connector: source_stores(settings, w.connector_config) for w in works}


def fence_key(settings: KafkaSettings, work: TaskWork) -> str:
    """The task's transactional id on the cluster it produces to (`producer.override.*`)."""
    target = client_settings(settings, work.connector_config, PRODUCER)
    return f"{target.bootstrap_servers}/{task_transactional_id(settings.group_id, work.connector, work.task_id)}"


def fence_tasks(settings: KafkaSettings, works: Sequence[TaskWork]) -> dict[str, NotRun]:
    """Initialise the transactional id of every task about to run, before offsets are read,
    on the cluster the task produces to; the connectors whose take-over failed, with why.

    A task killed mid-transaction leaves it open; until someone takes over its id, read_committed
    readers stop at that transaction's first offset (the last stable offset) in each partition
    it wrote to, so offsets committed after it — any connector's — would look older than they
    are. Taking the ids over aborts those transactions first, as Connect's workers do before a
    task reads its offsets.
    """
    targets = {
        task_transactional_id(settings.group_id, w.connector, w.task_id):
            (w.connector, client_settings(settings, w.connector_config, PRODUCER))
        for w in works
    }

    def fence(txn_id: str) -> tuple[str, NotRun | None]:
        connector, target = targets[txn_id]
        return connector, attempt(take_over, target, txn_id)

    failed: dict[str, NotRun] = {}
    # InitProducerId is a wait on the transaction coordinator (~60 ms), not work: many at once.
    with ThreadPoolExecutor(min(FENCING_THREADS, len(targets) or 1), thread_name_prefix="fence") as pool:
        for connector, why in pool.map(fence, sorted(targets)):
            if why is not None:
                failed.setdefault(connector, why)
    return failed


def _prepare(store: OffsetsStore, worker: OffsetsStore) -> None:
    """A store's cluster nothing listens on is known now, not after the clients' timeout; a
    connector-specific topic is created when missing (the worker's is an internal topic, made
    by the worker's `prepare`)."""
    probe_bootstrap(store.settings)
    if store.key != worker.key:
        ensure_offsets_topic(store.settings, store.topic)


def _by_connector(by_connector: Mapping[str, Sequence[OffsetsStore]], broken: Mapping[StoreKey, NotRun]) -> dict[str, NotRun]:
    """Each connector one of whose stores is broken, with the first such store's reason."""
    return {
        name: next(broken[store.key] for store in stores if store.key in broken)
        for name, stores in by_connector.items()
        if any(store.key in broken for store in stores)
    }


def _by_cluster(stores: Iterable[OffsetsStore]) -> list[list[OffsetsStore]]:
    clusters: dict[frozenset[str], list[OffsetsStore]] = {}
    for store in stores:
        clusters.setdefault(store.key[0], []).append(store)
    return list(clusters.values())


def _unique(stores: Sequence[OffsetsStore]) -> list[OffsetsStore]:
    """Each store once, in first-seen order."""
    seen: dict[StoreKey, OffsetsStore] = {}
    for store in stores:
        seen.setdefault(store.key, store)
    return list(seen.values())
