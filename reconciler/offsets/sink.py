"""Sink connector offsets: the committed offsets of its consumer group (docs/record-formats.md#sink-offsets).

The group is `connect-<name>` unless `consumer.override.group.id` names another. Altering and
resetting use the admin API as Connect's `Worker` does, and rely on the broker, as Connect
does, to refuse either while zombie sink tasks are still members of the group: Kafka answers
UNKNOWN_MEMBER_ID to the commit and NON_EMPTY_GROUP to the deletion.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.core.models import OffsetsAction
from reconciler.errors import ReconcilerError, RetryableError
from reconciler.kafka.io import groups
from reconciler.kafka.io.client import kafka_error, new_admin, retry_transient, translate
from reconciler.kafka.settings import KafkaSettings
from reconciler.core.offsets_rules import TopicPartition
from reconciler.offsets.model import SinkOffsets, zombie_sink_message

ZOMBIE_HINT = "stop whatever still consumes with this group id, then run again: the request resumes where it stopped"


def group_offsets(settings: KafkaSettings, group: str) -> SinkOffsets:
    """(topic, partition) → committed offset; an unknown group has none."""
    return groups.sink_group_offsets(settings, group)


def commit_offsets(
    settings: KafkaSettings, connector: str, group: str, offsets: Mapping[TopicPartition, int], action: OffsetsAction
) -> None:
    """Commit offsets for the group as a consumer that never joins it: the same OffsetCommit
    (generation -1, no member id) as Java's `alterConsumerGroupOffsets`, which Kafka accepts for
    an empty group and refuses while members hold it. Through the consumer because librdkafka's
    consumer finds and waits for the group's coordinator itself, where its admin API hands back
    NOT_COORDINATOR per partition on a cluster whose `__consumer_offsets` is still loading."""

    try:
        groups.commit_offsets(settings, group, offsets)
    except groups.CommitFailed as failed:
        raise _group_error(failed.exc, settings, connector, group, action) from failed.exc


def delete_group(settings: KafkaSettings, connector: str, group: str, action: OffsetsAction) -> bool:
    """Delete the group: True when deleted, False when it did not exist (success for Connect too)."""
    from confluent_kafka import KafkaError, KafkaException

    groups.wait_for_coordinator(settings, group)  # see groups.sink_group_offsets: an admin call must not meet a loading one
    admin = new_admin(settings)

    def deleted() -> None:
        admin.delete_consumer_groups([group], request_timeout=settings.timeout_s)[group].result(timeout=settings.timeout_s)

    try:
        retry_transient(settings, deleted)
    except KafkaException as exc:
        error = kafka_error(exc)
        if error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
            return False
        raise _group_error(exc, settings, connector, group, action) from exc
    return True


def _group_error(exc: Any, settings: KafkaSettings, connector: str, group: str, action: OffsetsAction) -> ReconcilerError:
    """Kafka refuses while members remain (NON_EMPTY_GROUP, UNKNOWN_MEMBER_ID…): Connect's zombie error."""
    from confluent_kafka import KafkaError

    error = kafka_error(exc)
    zombie = {
        KafkaError.NON_EMPTY_GROUP,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.REBALANCE_IN_PROGRESS,
    }
    if error is not None and error.code() in zombie:
        return RetryableError(zombie_sink_message(connector, action), hint=ZOMBIE_HINT)
    return translate(exc, settings, f"changing offsets of consumer group {group}")
