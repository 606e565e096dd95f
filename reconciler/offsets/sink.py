"""Sink connector offsets: the committed offsets of its consumer group (connect-internals.md §3.2).

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
from reconciler.kafka.client import kafka_error, new_admin, translate
from reconciler.kafka.reader import sink_group_offsets, wait_for_group_coordinator
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import SinkOffsets, TopicPartition, zombie_sink_message

ZOMBIE_HINT = "stop whatever still consumes with this group id, then run again: the request resumes where it stopped"


def group_offsets(settings: KafkaSettings, group: str) -> SinkOffsets:
    """(topic, partition) → committed offset; an unknown group has none."""
    return sink_group_offsets(settings, group)


def commit_offsets(
    settings: KafkaSettings, connector: str, group: str, offsets: Mapping[TopicPartition, int], action: OffsetsAction
) -> None:
    """Commit offsets for the group through the admin API (`alterConsumerGroupOffsets`, as
    Connect's `Worker.alterSinkConnectorOffsets`): accepted for an empty or unknown group,
    refused while members hold it."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition as KafkaTP

    if not offsets:
        return
    admin = new_admin(settings)  # keep a reference until the future completes
    wait_for_group_coordinator(settings, admin, group)
    partitions = [KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())]
    request = [ConsumerGroupTopicPartitions(group, partitions)]
    future = admin.alter_consumer_group_offsets(request, request_timeout=settings.timeout_s)[group]
    try:
        result = future.result(timeout=settings.timeout_s)
    except KafkaException as exc:
        raise _group_error(exc, settings, connector, group, action) from exc
    failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result.topic_partitions or [] if tp.error]
    if failed:
        raise ReconcilerError(f"altering offsets of consumer group {group} failed for " + ", ".join(failed))


def delete_group(settings: KafkaSettings, connector: str, group: str, action: OffsetsAction) -> bool:
    """Delete the group: True when deleted, False when it did not exist (success for Connect too)."""
    from confluent_kafka import KafkaError, KafkaException

    admin = new_admin(settings)
    wait_for_group_coordinator(settings, admin, group)
    future = admin.delete_consumer_groups([group], request_timeout=settings.timeout_s)[group]
    try:
        future.result(timeout=settings.timeout_s)
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
