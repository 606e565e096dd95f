"""A sink connector's consumer group: its committed offsets, read and written. The one place
our code reads or commits a group's offsets.

Connect has two paths to a sink's group, and so do we. Tasks read and commit through a consumer
(`WorkerSinkTask`: `consumer.committed`, `consumer.commitSync`): `committed` asks for the
partitions the batch reads, `commit_offsets` commits. Offsets requests and
`GET /connectors/{name}/offsets` need every partition the group has an offset for, which only the
admin API lists (`Worker.alterSinkConnectorOffsets`, `sink_group_offsets`). The consumer here
never joins the group (no subscribe): it finds the group's coordinator, retries while the
coordinator is loading, and commits as a simple consumer (generation -1), which Kafka accepts
for an empty group and refuses while members hold it; `reconciler.offsets.sink` commits through
it too, for the same reasons.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from reconciler.core.offsets_rules import TopicPartition
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client import ErrorCollector, new_admin, new_consumer, retry_transient, translate
from reconciler.kafka.settings import KafkaSettings

# Any partition serves to ask a coordinator; Kafka's own offsets topic always exists once a
# coordinator does, and no group commits offsets for it.
COORDINATOR_PROBE = "__consumer_offsets"


def committed_offsets(
    settings: KafkaSettings, group: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, int]:
    """The group's committed offset of each of `partitions` that has one."""
    return {tp: offset for tp, (offset, _metadata) in committed(settings, group, partitions).items()}


def committed(
    settings: KafkaSettings, group: str, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, tuple[int, str]]:
    """The group's committed (offset, metadata) of each of `partitions` that has one."""
    from confluent_kafka import KafkaException, TopicPartition as KafkaTP

    wanted = [KafkaTP(topic, partition) for topic, partition in sorted(set(partitions))]
    if not wanted:
        return {}
    with _group_consumer(settings, group) as consumer:
        try:
            found = consumer.committed(wanted, timeout=settings.timeout_s)
        except KafkaException as exc:
            raise translate(exc, settings, f"reading committed offsets of consumer group {group}") from exc
    return {
        (tp.topic, tp.partition): (tp.offset, tp.metadata or "") for tp in found if tp.error is None and tp.offset >= 0
    }


def wait_for_coordinator(settings: KafkaSettings, group: str) -> None:
    """Return once the group's coordinator answers (an OffsetFetch of one partition nobody
    consumes), so that admin calls on the group do not meet a coordinator still loading."""
    committed_offsets(settings, group, [(COORDINATOR_PROBE, 0)])


class CommitFailed(ReconcilerError):
    """The broker refused a commit; `exc` is its KafkaException (UNKNOWN_MEMBER_ID: members hold the group)."""

    def __init__(self, message: str, exc: Any) -> None:
        super().__init__(message)
        self.exc = exc


def commit_offsets(
    settings: KafkaSettings, group: str, offsets: Mapping[TopicPartition, int | tuple[int, str]]
) -> None:
    """Commit `offsets` (the next offset to read, per partition, with commit metadata where a
    tuple gives it) for the group, synchronously."""
    from confluent_kafka import KafkaException, TopicPartition as KafkaTP

    if not offsets:
        return
    partitions = []
    for (topic, partition), commit in sorted(offsets.items()):
        offset, metadata = commit if isinstance(commit, tuple) else (commit, "")
        partitions.append(KafkaTP(topic, partition, offset, metadata=metadata))
    with _group_consumer(settings, group) as consumer:
        try:
            result = consumer.commit(offsets=partitions, asynchronous=False)
        except KafkaException as exc:
            raise CommitFailed(
                translate(exc, settings, f"committing offsets of consumer group {group}").message, exc
            ) from exc
    failed = [tp for tp in result or [] if tp.error]
    if failed:
        names = ", ".join(f"{tp.topic}[{tp.partition}]: {tp.error}" for tp in failed)
        raise CommitFailed(
            f"committing offsets of consumer group {group} failed for {names}", KafkaException(failed[0].error)
        )


class _group_consumer:
    """A consumer of `group` that is closed on leaving the block (closing never joins it)."""

    def __init__(self, settings: KafkaSettings, group: str) -> None:
        self.consumer = new_consumer(settings, ErrorCollector(), **{"group.id": group})

    def __enter__(self) -> Any:
        return self.consumer

    def __exit__(self, *exc: object) -> None:
        self.consumer.close()


def sink_group_offsets(settings: KafkaSettings, group: str) -> dict[TopicPartition, int]:
    """Committed offsets of a consumer group (a sink connector's `connect-<name>`).

    (topic, partition) → offset; partitions without a committed offset are left out.
    """
    return {tp: offset for tp, (offset, _metadata) in sink_group_commits(settings, group).items()}


def sink_group_commits(settings: KafkaSettings, group: str) -> dict[TopicPartition, tuple[int, str]]:
    """Committed (offset, metadata) of a consumer group, per (topic, partition)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

    # confluent-kafka 2.16 crashes the process (SIGSEGV) parsing the admin OffsetFetch answer
    # COORDINATOR_LOAD_IN_PROGRESS, which a group's coordinator gives while __consumer_offsets is
    # loading (a fresh cluster; measured 2 of 2 runs). Its consumer handles that answer: it waits
    # for the coordinator first, so the admin call below meets a loaded one.
    wait_for_coordinator(settings, group)
    admin = new_admin(settings)  # keep a reference until the future completes
    request = [ConsumerGroupTopicPartitions(group)]

    def listed() -> Any:
        future = admin.list_consumer_group_offsets(request, request_timeout=settings.timeout_s)[group]
        return future.result(timeout=settings.timeout_s)

    try:
        result = retry_transient(settings, listed)
    except KafkaException as exc:
        raise translate(exc, settings, f"listing offsets of consumer group {group}") from exc
    commits: dict[TopicPartition, tuple[int, str]] = {}
    for tp in result.topic_partitions or []:
        if tp.error is None and tp.offset >= 0:
            commits[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
    return commits
