"""Where a connector's offsets live, and those places read to the end.

A sink's offsets are its consumer group's (`sink_group`, read and written by `kafka.io.groups`); a
source's are in one or two offsets topics (`source_stores`, KIP-618), each read through
`OffsetsReplay` as Connect's `KafkaOffsetBackingStore` reads it. The runtime's source tasks,
the offsets executor and `offsets import` all find and read them here; the runtime's batches
through `KeptOffsetsReaders`, whose reads continue where the last one stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import methodcaller

from reconciler.kafka.io.overrides import PRODUCER, client_settings, cluster_key, same_cluster
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.io.consume import PositionLost, TopicReader
from reconciler.kafka.io.kept_listers import KeptListers
from reconciler.kafka.io.store import read_offsets_topics

LOG = logging.getLogger(__name__)

CONSUMER_GROUP_OVERRIDE = "consumer.override.group.id"
OFFSETS_STORAGE_TOPIC = "offsets.storage.topic"
StoreKey = tuple[frozenset[str], str]  # (the cluster's bootstrap servers, the topic)


def sink_group(name: str, config: Mapping[str, str | None]) -> str:
    """Connect's `SinkUtils.consumerGroupId`: `connect-<name>`, or `consumer.override.group.id`."""
    return config.get(CONSUMER_GROUP_OVERRIDE) or f"connect-{name}"


@dataclass(frozen=True, eq=False)
class OffsetsStore:
    """An offsets topic on a cluster: where a source connector's offsets live."""

    settings: KafkaSettings
    topic: str

    @property
    def key(self) -> StoreKey:
        return cluster_key(self.settings), self.topic

    def __str__(self) -> str:
        return f"{self.topic} at {self.settings.bootstrap_servers}"


def source_stores(settings: KafkaSettings, config: Mapping[str, str | None]) -> list[OffsetsStore]:
    """The offsets stores of a source connector, primary first (KIP-618, Connect's
    `Worker.offsetStoreFor…SourceConnector`): a connector-specific store when the config names an
    `offsets.storage.topic` or its producer targets another cluster (`producer.override.bootstrap.servers`;
    the topic is then `offsets.storage.topic` or the worker topic's name, on that cluster), with
    the worker's own topic as secondary. Reads consult both, the primary winning."""
    producer = client_settings(settings, config, PRODUCER)
    custom = (config.get(OFFSETS_STORAGE_TOPIC) or "").strip()
    worker = OffsetsStore(settings, settings.topics.offsets)
    if not custom and same_cluster(producer, settings):
        return [worker]
    primary = OffsetsStore(producer, custom or settings.topics.offsets)
    return [primary] if primary.key == worker.key else [primary, worker]


def read_stores(stores: Sequence[OffsetsStore]) -> dict[StoreKey, OffsetsReplay]:
    """Every store read to the end, one pass per cluster."""
    by_cluster: dict[frozenset[str], list[OffsetsStore]] = {}
    for store in stores:
        by_cluster.setdefault(store.key[0], []).append(store)
    replays: dict[StoreKey, OffsetsReplay] = {}
    for group in by_cluster.values():
        read = read_offsets_topics(group[0].settings, [store.topic for store in group])
        replays.update({store.key: read[store.topic] for store in group})
    return replays


_TOPIC_OF = methodcaller("topic")


class KeptOffsetsReaders:
    """Offsets stores read by one reader per cluster kept across reads: each read continues where
    the last stopped and feeds the same replays, so a batch pays for the offsets written since
    the last one, not for the whole topic again (a thousand idle sources' offsets, every tick).
    The replays a read returns are its own until the next read. A partition that lost the
    position to continue from (records deleted, topic re-created), or a read that failed,
    starts that cluster over from the beginning; topics and partitions created since are picked
    up at the next read. `listers`: consumers kept for the stores' end offsets, asked before
    each read (`runtime.source.committed.open_transactions`)."""

    def __init__(self) -> None:
        self._kept: dict[frozenset[str], tuple[TopicReader, dict[str, OffsetsReplay]]] = {}
        self.listers = KeptListers()

    def read(self, stores: Sequence[OffsetsStore]) -> dict[StoreKey, OffsetsReplay]:
        by_cluster: dict[frozenset[str], list[OffsetsStore]] = {}
        for store in stores:
            by_cluster.setdefault(store.key[0], []).append(store)
        replays: dict[StoreKey, OffsetsReplay] = {}
        for cluster, group in by_cluster.items():
            try:
                read = self._read(cluster, group)
            except PositionLost:
                self._forget(cluster)
                read = self._read(cluster, group)
            replays.update({store.key: read[store.topic] for store in group})
        return replays

    def _read(self, cluster: frozenset[str], stores: Sequence[OffsetsStore]) -> dict[str, OffsetsReplay]:
        try:
            if cluster not in self._kept:
                self._kept[cluster] = (TopicReader(stores[0].settings), {})
            reader, replays = self._kept[cluster]
            for store in stores:
                replays.setdefault(store.topic, OffsetsReplay())
            existing = reader.topic_partitions()
            reader.assign({topic: existing[topic] for topic in replays if topic in existing})
            for batch in reader.to_end():
                for topic, run in groupby(batch, _TOPIC_OF):
                    if topic in replays:
                        replays[topic].feed(list(run))
            return replays
        except BaseException:
            self._forget(cluster)
            raise

    def _forget(self, cluster: frozenset[str]) -> None:
        kept = self._kept.pop(cluster, None)
        if kept is not None:
            kept[0].close()

    def close(self) -> None:
        for cluster in list(self._kept):
            self._forget(cluster)
        self.listers.close()
