"""Source connector offsets in the offsets topic(s): read as Connect reads them, written back
under the exact key bytes already there (connect-internals.md §3.1).

Java keys its offsets by raw key bytes, so a partition first written by a Java worker must be
altered or tombstoned under *those* bytes, never under a re-encoding that differs in key order
or number format. `OffsetsReplay` keeps every raw key per logical partition; new bytes are
minted only for partitions never seen.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.errors import RetryableError
from reconciler.kafka import records as rec
from reconciler.kafka.admin import topic_partitions
from reconciler.kafka.client import ErrorCollector, new_producer, translate
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.records import Invalid
from reconciler.kafka.replay import OffsetsReplay, partition_identity
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import SourcePair, source_body, source_topics
from reconciler.offsets.writer import Placed

LOG = logging.getLogger(__name__)


@dataclass
class SourceOffsets:
    """One connector's offsets in each offsets topic it uses (primary first), read to the end."""

    connector: str
    topics: list[str]
    replays: dict[str, OffsetsReplay]

    def pairs(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(partition, offset) of every known partition; the primary topic wins (KIP-618 reads)."""
        seen: dict[Any, tuple[dict[str, Any], dict[str, Any]]] = {}
        for topic in self.topics:
            for partition, offset, _raw in self.replays[topic].offsets_for(self.connector):
                seen.setdefault(partition_identity(partition), (partition, offset))
        return list(seen.values())

    def body(self) -> list[dict[str, Any]]:
        """The `offsets` array of `GET /connectors/{name}/offsets`."""
        return source_body(self.pairs())

    def live_keys(self) -> dict[str, list[bytes]]:
        """Per topic, every raw key of this connector that holds a value."""
        return {topic: self.replays[topic].live_raw_keys(self.connector) for topic in self.topics}

    def alter_records(self, pairs: Sequence[SourcePair]) -> list[Placed]:
        """Offsets writes for an alter: a set goes to every topic (primary first) under that
        topic's bytes for the partition; a null tombstones every live key of the partition,
        secondary first (Connect's order for tombstones)."""
        placed: list[Placed] = []
        for partition, offset in pairs:
            if offset is None:
                for topic in reversed(self.topics):
                    placed += [(topic, key, None) for key in self._live_keys_of(topic, partition)]
            else:
                value = rec.encode_offset_value(offset)
                placed += [(topic, self.replays[topic].key_for(self.connector, partition), value) for topic in self.topics]
        return placed

    def reset_records(self) -> list[Placed]:
        """A tombstone for every live key of the connector, secondary topic first."""
        keys = self.live_keys()
        return [(topic, key, None) for topic in reversed(self.topics) for key in keys[topic]]

    def _live_keys_of(self, topic: str, partition: Mapping[str, Any]) -> list[bytes]:
        wanted = partition_identity(dict(partition))
        keys = []
        for raw in self.replays[topic].live_raw_keys(self.connector):
            decoded = rec.decode_offset_key(raw)
            if not isinstance(decoded, Invalid) and partition_identity(decoded[1]) == wanted:
                keys.append(raw)
        return keys


def read_source_offsets(settings: KafkaSettings, connector: str, config: Mapping[str, str | None]) -> SourceOffsets:
    """The connector's offsets topics read to the end (a topic that does not exist yet is empty)."""
    topics = source_topics(settings.topics.offsets, config)
    return SourceOffsets(connector, topics, read_offsets_topics(settings, topics))


def read_offsets_topics(settings: KafkaSettings, topics: Sequence[str]) -> dict[str, OffsetsReplay]:
    replays = {topic: OffsetsReplay() for topic in topics}
    existing = topic_partitions(settings)
    readable = [topic for topic in topics if topic in existing]
    if readable:
        for batch in batches_to_end(settings, readable):
            for msg in batch:
                replays[msg.topic()].apply(msg.key(), msg.value(), msg.offset())
    for topic, replay in replays.items():
        if replay.skipped:
            LOG.info("%s: %d offsets record(s) ignored, as a Connect worker ignores them", topic, replay.skipped)
    return replays


def task_transactional_id(group_id: str, connector: str, task: int) -> str:
    """KIP-618 `Worker.taskTransactionalId`: `${group.id}-${connector}-${taskId}`."""
    return f"{group_id}-{connector}-{task}"


def fence_source_tasks(settings: KafkaSettings, connector: str, task_count: int) -> list[str]:
    """Fence the transactional producers of tasks 0..task_count-1 (zombie fencing, §4.3).

    `init_transactions` with a task's id bumps its epoch: a task still running elsewhere can no
    longer commit records or offsets, and its open transaction is aborted. Returns the ids.
    """
    from confluent_kafka import KafkaException

    fenced = []
    for task in range(task_count):
        txn_id = task_transactional_id(settings.group_id, connector, task)
        producer = new_producer(settings, ErrorCollector(), **{"transactional.id": txn_id})
        try:
            producer.init_transactions(settings.timeout_s)
        except KafkaException as exc:
            raise translate(exc, settings, f"fencing the producer of task {connector}-{task} ({txn_id})") from exc
        finally:
            producer.flush(0)
        fenced.append(txn_id)
    return fenced


def confirm_reset(settings: KafkaSettings, connector: str, topics: Sequence[str]) -> None:
    """Read the topics to the end again: no key of the connector may still hold a value."""
    replays = read_offsets_topics(settings, topics)
    left = {topic: len(replay.live_raw_keys(connector)) for topic, replay in replays.items()}
    if any(left.values()):
        where = ", ".join(f"{count} in {topic}" for topic, count in left.items() if count)
        raise RetryableError(
            f"after the reset, offsets of connector {connector} are still present ({where}): "
            "a task of it is still writing offsets",
            hint="make sure no task of the connector is running, then run again (the reset is safe to repeat)",
        )
