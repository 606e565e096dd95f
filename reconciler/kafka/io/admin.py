"""Make sure the internal topics exist with Connect's layout, or say exactly what is wrong.

Connect's rules (docs/record-formats.md#topics-and-their-layout): every internal topic is `cleanup.policy=compact`
(an existing one is checked to be compact-only), and the config topic has exactly one
partition — the config log's order is its meaning. The check reads the config back instead of
trusting the create call: another client may have created the topic first, with other settings
(a create racing ours answers TOPIC_ALREADY_EXISTS and leaves its settings in place).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client import describe, kafka_error, new_admin, translate
from reconciler.kafka.io.consume import log_starts
from reconciler.kafka.formats.records import TopicRole
from reconciler.kafka.settings import KafkaSettings

if TYPE_CHECKING:
    from confluent_kafka import KafkaException

COMPACT = "compact"


@dataclass(frozen=True)
class TopicSpec:
    role: TopicRole
    name: str
    partitions: int


def internal_topics(settings: KafkaSettings) -> list[TopicSpec]:
    topics = settings.topics
    return [
        TopicSpec(TopicRole.CONFIGS, topics.configs, 1),
        TopicSpec(TopicRole.STATUS, topics.status, topics.status_partitions),
        TopicSpec(TopicRole.OFFSETS, topics.offsets, topics.offsets_partitions),
        TopicSpec(TopicRole.RECONCILER, topics.reconciler, 1),
    ]


def topic_partitions(settings: KafkaSettings, admin: Any | None = None) -> dict[str, int]:
    """Partition count of every topic in the cluster."""
    from confluent_kafka import KafkaException

    admin = admin or new_admin(settings)
    try:
        metadata = admin.list_topics(timeout=settings.timeout_s)
    except KafkaException as exc:
        raise translate(exc, settings, "listing topics") from exc
    return {name: len(meta.partitions) for name, meta in metadata.topics.items() if meta.error is None}


def ensure_topics(settings: KafkaSettings) -> None:
    """Create missing internal topics (unless `create_topics` is off); validate existing ones."""
    admin = new_admin(settings)
    existing = topic_partitions(settings, admin)
    wanted = internal_topics(settings)
    missing = [spec for spec in wanted if spec.name not in existing]
    present = [spec for spec in wanted if spec.name in existing]
    if missing and not settings.create_topics:
        names = ", ".join(f"{spec.name} ({spec.role})" for spec in missing)
        raise ReconcilerError(
            f"internal topic(s) missing: {names}; not creating them because of --no-create-topics",
            hint="create them with cleanup.policy=compact (the configs topic with 1 partition), "
            "or run without --no-create-topics",
        )
    _check_layout(settings, admin, present, existing)
    if missing:
        _create(settings, admin, missing)


def check_for_reading(settings: KafkaSettings) -> bool:
    """For commands that only read (status, plan, snapshot, offsets): never create a topic.

    Connect's three topics must exist (and are checked like `ensure_topics` checks them); our
    own topic may be missing, in a group only Connect has used so far. Returns whether it exists.
    A group with none of the topics is most likely a typo'd `--group-id`: the error says so and
    names the groups that do have internal topics on this cluster.
    """
    admin = new_admin(settings)
    existing = topic_partitions(settings, admin)
    start_reading_check(settings, existing, admin)()
    return settings.topics.reconciler in existing


def group_is_new(settings: KafkaSettings) -> bool:
    """None of the group's internal topics (Connect's and ours) exists on the cluster yet: a group
    no `apply`, `run` or Connect worker has used. One that has some of them is not new: reading it
    says which are missing."""
    existing = topic_partitions(settings)
    return not any(spec.name in existing for spec in internal_topics(settings))


def start_reading_check(settings: KafkaSettings, existing: dict[str, int], admin: Any = None) -> Callable[[], None]:
    """`check_for_reading` on partition counts already fetched (`existing`): missing topics and
    the config topic's partitions are checked now; the cleanup policies take a round trip, which
    is started now and checked by the call returned (a reader reads meanwhile)."""
    wanted = internal_topics(settings)
    connect = [spec for spec in wanted if spec.role is not TopicRole.RECONCILER]
    missing = [spec for spec in connect if spec.name not in existing]
    if missing:
        raise _missing_for_reading(settings, missing, all_missing=len(missing) == len(connect), existing=existing)
    present = [spec for spec in wanted if spec.name in existing]
    _check_partitions(present, existing)
    client = admin if admin is not None else new_admin(settings)
    futures = _describe_policies(client, [spec.name for spec in present])

    def finish() -> None:
        _check_policies(present, _policies(settings, client, futures))

    return finish


def _missing_for_reading(
    settings: KafkaSettings, missing: list[TopicSpec], *, all_missing: bool, existing: dict[str, int]
) -> ReconcilerError:
    names = ", ".join(f"{spec.name} ({spec.role})" for spec in missing)
    where = f"at {settings.bootstrap_servers}"
    if all_missing:
        message = f"group {settings.group_id} has no internal topics {where} (looked for {names}); nothing was read"
    else:
        message = f"group {settings.group_id} is missing internal topic(s) {where}: {names}; nothing was read"
    groups = groups_with_topics(existing)
    known = (
        f"groups with internal topics there: {', '.join(groups[:10])}"
        if groups
        else "no group has internal topics there"
    )
    return ReconcilerError(
        message,
        hint=f"check --group-id (a typo?) and --bootstrap-servers; {known}. Only `reconciler apply`, `run` and "
        "`watch` create a group's topics (for a new group, `plan --new-group` plans against an empty state)",
    )


def groups_with_topics(existing: dict[str, int]) -> list[str]:
    """Group ids whose default-named config and status topics both exist, sorted."""
    suffix = "-configs"
    return sorted(
        name[: -len(suffix)]
        for name in existing
        if name.endswith(suffix) and f"{name[: -len(suffix)]}-status" in existing
    )


def ensure_offsets_topic(settings: KafkaSettings, topic: str) -> None:
    """A connector-specific offsets topic (`offsets.storage.topic`, or the worker topic's name on
    the connector's own cluster): created like the worker's when missing, checked when present."""
    admin = new_admin(settings)
    existing = topic_partitions(settings, admin)
    spec = TopicSpec(TopicRole.OFFSETS, topic, settings.topics.offsets_partitions)
    if topic in existing:
        _check_layout(settings, admin, [spec], existing)
    elif not settings.create_topics:
        raise ReconcilerError(
            f"offsets topic {topic} at {settings.bootstrap_servers} is missing; not creating it because of "
            "--no-create-topics",
            hint="create it with cleanup.policy=compact, or run without --no-create-topics",
        )
    else:
        _create(settings, admin, [spec])


def _check_layout(settings: KafkaSettings, admin: Any, present: list[TopicSpec], partitions: dict[str, int]) -> None:
    _check_partitions(present, partitions)
    names = [spec.name for spec in present]
    _check_policies(present, _policies(settings, admin, _describe_policies(admin, names)))


def _check_partitions(present: list[TopicSpec], partitions: dict[str, int]) -> None:
    for spec in present:
        if spec.role is TopicRole.CONFIGS and partitions[spec.name] != 1:
            raise ReconcilerError(
                f"config topic {spec.name} has {partitions[spec.name]} partitions; "
                "Connect requires exactly 1 (the order of its records is their meaning)",
                hint="use a single-partition topic (--config-topic) or another --group-id",
            )


def _check_policies(present: list[TopicSpec], policies: dict[str, str]) -> None:
    for spec in present:
        policy = policies.get(spec.name, "")
        if {part.strip() for part in policy.split(",")} != {COMPACT}:
            raise ReconcilerError(
                f"internal topic {spec.name} ({spec.role}) has cleanup.policy={policy or '<unset>'}; "
                "Connect's internal topics must be compact-only, or old records would be deleted",
                hint=f"set cleanup.policy=compact on {spec.name} (kafka-configs --alter "
                "--add-config cleanup.policy=compact), or use another --group-id / topic name",
            )


def _describe_policies(admin: Any, names: list[str]) -> dict[Any, Any]:
    """The futures of one DescribeConfigs request for these topics (none: no request)."""
    from confluent_kafka.admin import ConfigResource  # type: ignore[attr-defined]  # re-exported, no __all__

    return admin.describe_configs([ConfigResource("topic", name) for name in names]) if names else {}


def _policies(settings: KafkaSettings, admin: Any, futures: dict[Any, Any]) -> dict[str, str]:
    """Each topic's cleanup.policy from `_describe_policies`' futures (`admin` kept alive till then)."""
    from confluent_kafka import KafkaException

    policies: dict[str, str] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(timeout=settings.timeout_s)
        except KafkaException as exc:
            raise translate(exc, settings, f"describing topic {resource.name}") from exc
        entry = entries.get("cleanup.policy")
        policies[resource.name] = entry.value if entry is not None and entry.value is not None else ""
    return policies


def _create(settings: KafkaSettings, admin: Any, specs: list[TopicSpec]) -> None:
    from confluent_kafka.cimpl import NewTopic

    new_topics = [
        NewTopic(
            spec.name,
            num_partitions=spec.partitions,
            replication_factor=settings.topics.replication_factor,
            config={"cleanup.policy": COMPACT},
        )
        for spec in specs
    ]

    def failure(name: str, exc: KafkaException) -> ReconcilerError:
        return ReconcilerError(
            f"cannot create internal topic {name}: {describe(exc)}",
            hint="create it yourself (cleanup.policy=compact) and pass --no-create-topics, "
            "or grant this principal CREATE on the cluster",
        )

    create_new_topics(settings, admin, new_topics, failure)
    wait_until_led(settings, [spec.name for spec in specs], admin)


def create_new_topics(
    settings: KafkaSettings, admin: Any, new_topics: list[Any], failure: Callable[[str, KafkaException], ReconcilerError]
) -> None:
    """CreateTopics for confluent-kafka `NewTopic`s, each awaited. One that exists already is
    fine: another client (a reconciler, a worker, a task) created it between our listing and now."""
    from confluent_kafka import KafkaError, KafkaException

    futures = admin.create_topics(new_topics, operation_timeout=settings.timeout_s, request_timeout=settings.timeout_s)
    for name, future in futures.items():
        try:
            future.result(timeout=settings.timeout_s)
        except KafkaException as exc:
            error = kafka_error(exc)
            if error is not None and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise failure(name, exc) from exc


def create_topic(settings: KafkaSettings, name: str, partitions: int = 1, config: dict[str, str] | None = None) -> None:
    """Create a (data) topic and wait until it can be used; one that exists already is fine."""
    from confluent_kafka.cimpl import NewTopic

    admin = new_admin(settings)
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=settings.topics.replication_factor,
        config=dict(config or {}),
    )

    create_new_topics(settings, admin, [topic], lambda name, exc: translate(exc, settings, f"creating topic {name}"))
    wait_until_led(settings, [name], admin)


def wait_until_led(settings: KafkaSettings, names: list[str], admin: Any | None = None) -> None:
    """Wait until every partition of `names` has a leader that answers for it.

    Kafka answers CreateTopics once the controller has recorded the topic; the brokers learn
    of it (and take the partitions' leadership) a moment later, and until then a ListOffsets or
    a fetch answers NOT_LEADER_OR_FOLLOWER (measured: 100–150 ms on one node). The metadata
    names the leader before the leader answers: a consumer that starts then asks where each
    partition begins, is told NOT_LEADER_OR_FOLLOWER, and librdkafka asks again only 500 ms
    later (measured: a store's first read after creating the topics 0.54 s, 0.04 s a second
    later). So this waits for both: a leader in the metadata, then an answer to ListOffsets
    from every partition's leader, asked again within milliseconds. A topic this process
    created is then usable by whatever it does next, without that wait.
    """
    from confluent_kafka import KafkaException

    admin = admin or new_admin(settings)
    doing = "waiting for new topics' leaders"
    try:
        partitions = _until_led(settings, admin, names)
    except KafkaException as exc:
        raise translate(exc, settings, doing) from exc
    # Asked every 20 ms: the leaders take 100–150 ms, which a doubling pause would overshoot.
    log_starts(settings, partitions, doing, max_delay_s=0.02)


def _until_led(settings: KafkaSettings, admin: Any, names: list[str]) -> dict[str, list[int]]:
    """The partitions of `names`, once the metadata names a leader for every one."""
    deadline = time.monotonic() + settings.timeout_s
    while True:
        topics = admin.list_topics(timeout=settings.timeout_s).topics
        pending = sorted(name for name in names if not _led(topics.get(name)))
        if not pending:
            return {name: sorted(topics[name].partitions) for name in names}
        if time.monotonic() > deadline:
            raise ReconcilerError(
                f"topic(s) {', '.join(pending)} got no partition leader within "
                f"{settings.timeout_s:g}s of being created",
                hint="check the brokers' health",
            )
        time.sleep(0.05)


def _led(topic: Any) -> bool:
    return bool(
        topic is not None
        and topic.error is None
        and topic.partitions
        and all(meta.leader >= 0 and meta.error is None for meta in topic.partitions.values())
    )
