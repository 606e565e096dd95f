"""KIP-158: the topics a source connector writes to, created before its first records.

As a Connect worker does (with `topic.creation.enable`, its default), a source whose config
sets `topic.creation.default.replication.factor` and `topic.creation.default.partitions` has
each topic it produces to created if it does not exist yet, with those settings (`-1`: the
broker's default) and every other `topic.creation.default.<topic config>` as the topic's
config. Without both keys nothing is created (the broker may still auto-create the topic,
with its own defaults). Only the `default` group: `topic.creation.groups` (per-topic-pattern
settings) is not supported, and a config naming groups is refused by `reconciler validate`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.admin import create_new_topics
from reconciler.kafka.io.client import describe, new_admin
from reconciler.kafka.settings import KafkaSettings

PREFIX = "topic.creation.default."
PARTITIONS = PREFIX + "partitions"
REPLICATION_FACTOR = PREFIX + "replication.factor"
GROUPS = "topic.creation.groups"
# Keys of a group that are not topic configs (TopicCreationConfig).
_NOT_TOPIC_CONFIGS = {PARTITIONS, REPLICATION_FACTOR, PREFIX + "include", PREFIX + "exclude"}


@dataclass(frozen=True)
class TopicCreation:
    partitions: int
    replication_factor: int
    configs: dict[str, str] = field(default_factory=dict)


def from_config(config: Mapping[str, str | None]) -> TopicCreation | None:
    """The default group's settings, or None when the config does not ask for topic creation."""
    partitions, replication = config.get(PARTITIONS), config.get(REPLICATION_FACTOR)
    if partitions is None or replication is None:
        return None
    try:
        counts = int(partitions.strip()), int(replication.strip())
    except ValueError:
        raise ReconcilerError(f"{PARTITIONS} and {REPLICATION_FACTOR} must be integers") from None
    configs = {
        key[len(PREFIX) :]: value
        for key, value in config.items()
        if key.startswith(PREFIX) and key not in _NOT_TOPIC_CONFIGS and value is not None
    }
    return TopicCreation(counts[0], counts[1], configs)


def ensure_topics(settings: KafkaSettings, topics: Iterable[str], creation: TopicCreation) -> list[str]:
    """Create those of `topics` that do not exist; the names created (a concurrent creation of
    the same topic, by another task or tool, counts as done)."""
    admin = new_admin(settings)
    wanted = sorted(set(topics))
    existing = admin.list_topics(timeout=settings.timeout_s).topics
    missing = [topic for topic in wanted if topic not in existing]
    if missing:
        _create(settings, admin, missing, creation)
    return missing


def _create(settings: KafkaSettings, admin: Any, names: list[str], creation: TopicCreation) -> None:
    from confluent_kafka.cimpl import NewTopic


    new = [
        NewTopic(
            name,
            num_partitions=creation.partitions,
            replication_factor=creation.replication_factor,
            config=dict(creation.configs),
        )
        for name in names
    ]
    create_new_topics(
        settings, admin, new,
        lambda name, exc: ReconcilerError(f"cannot create topic {name} (topic.creation.default.*): {describe(exc)}"),
    )
