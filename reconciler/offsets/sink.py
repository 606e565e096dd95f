"""Sink connector offsets: the committed offsets of its consumer group (connect-internals.md §3.2).

The group is `connect-<name>` unless `consumer.override.group.id` names another. Altering and
resetting use the admin API as Connect's `Worker` does. Connect relies on the broker to refuse
an alter or a group deletion while zombie sink tasks are still members; not every broker does
(the test broker deletes a non-empty group), so members are checked here first as well.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.core.models import OffsetsAction
from reconciler.errors import ReconcilerError, RetryableError
from reconciler.kafka.client import ErrorCollector, kafka_error, new_admin, new_consumer, translate
from reconciler.kafka.reader import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import SinkOffsets, TopicPartition, zombie_sink_message

ZOMBIE_HINT = "stop whatever still consumes with this group id, then run again: the request resumes where it stopped"


def group_offsets(settings: KafkaSettings, group: str) -> SinkOffsets:
    """(topic, partition) → committed offset; an unknown group has none."""
    return sink_group_offsets(settings, group)


def active_members(settings: KafkaSettings, group: str) -> list[str]:
    """Member ids of the group (empty for an unknown or empty group)."""
    from confluent_kafka import KafkaError, KafkaException

    admin = new_admin(settings)  # keep a reference until the future completes
    future = admin.describe_consumer_groups([group], request_timeout=settings.timeout_s)[group]
    try:
        description = future.result(timeout=settings.timeout_s)
    except KafkaException as exc:
        error = kafka_error(exc)
        if error is not None and error.code() == KafkaError.GROUP_ID_NOT_FOUND:
            return []
        raise translate(exc, settings, f"describing consumer group {group}") from exc
    return [_member_name(member) for member in description.members or []]


def _member_name(member: Any) -> str:
    client = getattr(member, "client_id", "") or ""
    host = getattr(member, "host", "") or ""
    return f"{member.member_id} ({client}@{host})" if client or host else str(member.member_id)


def refuse_if_members(settings: KafkaSettings, connector: str, group: str, action: OffsetsAction) -> None:
    members = active_members(settings, group)
    if members:
        raise RetryableError(zombie_sink_message(connector, action, members), hint=ZOMBIE_HINT)


def commit_offsets(
    settings: KafkaSettings, connector: str, group: str, offsets: Mapping[TopicPartition, int], action: OffsetsAction
) -> None:
    """Commit offsets for the group as a consumer that never joins it (generation -1), which is
    what Kafka accepts for an empty group and refuses while members hold it.

    A consumer commit rather than the admin alter: the test broker refuses an admin commit to a
    group it has deleted (it drops the connection) until a consumer commit re-creates it.
    """
    from confluent_kafka import KafkaException, TopicPartition as KafkaTP

    if not offsets:
        return
    errors = ErrorCollector()
    consumer = new_consumer(settings, errors, **{"group.id": group})
    try:
        result = consumer.commit(offsets=[KafkaTP(t, p, o) for (t, p), o in sorted(offsets.items())], asynchronous=False)
    except KafkaException as exc:
        raise _group_error(exc, settings, connector, group, action) from exc
    finally:
        consumer.close()
    failed = [f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in result or [] if tp.error]
    if failed:
        raise ReconcilerError(f"altering offsets of consumer group {group} failed for " + ", ".join(failed))


def delete_group(settings: KafkaSettings, connector: str, group: str, action: OffsetsAction) -> bool:
    """Delete the group: True when deleted, False when it did not exist (success for Connect too)."""
    from confluent_kafka import KafkaError, KafkaException

    admin = new_admin(settings)
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
