"""Where a connector's offsets live, and those places read to the end.

A sink's offsets are its consumer group's (`sink_group`, read and written by `kafka.io.groups`); a
source's are in one or two offsets topics (`source_stores`, KIP-618), each read through
`OffsetsReplay` as Connect's `KafkaOffsetBackingStore` reads it. The runtime's source tasks,
the offsets executor and `offsets import` all find and read them here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reconciler.kafka.io.overrides import PRODUCER, client_settings, cluster_key, same_cluster
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings
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
