"""Live state from Kafka: the internal topics read to the end through Connect's state machines.

`read_live_state` is what `plan`, `apply`, `status` and `snapshot` call. The decoding and the
state machines are pure (`reconciler.kafka.replay`); this module only moves bytes into them.

The reader is read_committed: records of an aborted or still open apply are not seen. A Java
worker without exactly-once support reads the config topic read_uncommitted and may act on
them; apply orders its records so that every prefix is safe, and the next apply converges
(docs/compatibility.md).
"""

from __future__ import annotations

import logging
import time
from itertools import groupby
from operator import methodcaller
from typing import Any

from reconciler import heap
from reconciler.core.live import LiveState
from reconciler.kafka.admin import ensure_topics
from reconciler.kafka.client import check_reachable, kafka_error, new_admin, translate
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)
_TOPIC_OF = methodcaller("topic")  # a C-level key function for groupby: no Python frame per record


def prepare(settings: KafkaSettings) -> None:
    """Fail fast when the broker is unreachable; create or validate the internal topics."""
    check_reachable(settings)
    ensure_topics(settings)


def read_live_state(settings: KafkaSettings, *, task_configs: bool = True) -> LiveState:
    """Check the broker and topics, then read the config, status and reconciler topics.

    `task_configs=False`: every connector's `task_configs` is left empty (see build_live_state).
    """
    prepare(settings)
    return read_state(settings, task_configs=task_configs)


def read_state(settings: KafkaSettings, *, task_configs: bool = True) -> LiveState:
    """The topics read to the end, assuming `prepare` ran (apply claims its id in between)."""
    topics = settings.topics
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    replays: dict[str, Any] = {topics.configs: config, topics.status: status, topics.reconciler: ours}
    with heap.building():
        # One consumer reads the three topics together; per-partition order is all replays need.
        # A batch holds runs of one partition's records: the replay is looked up once per run.
        for batch in batches_to_end(settings, list(replays)):
            for topic, run in groupby(batch, _TOPIC_OF):
                replays[topic].feed(run)
        live = build_live_state(config, status, ours, settings.group_id, task_configs=task_configs)
    for name, replay in replays.items():
        if replay.skipped:
            LOG.info("%s: %d record(s) ignored, as a Connect worker would ignore them", name, replay.skipped)
    return live


def sink_group_offsets(settings: KafkaSettings, group: str) -> dict[tuple[str, int], int]:
    """Committed offsets of a consumer group (a sink connector's `connect-<name>`).

    (topic, partition) → offset; partitions without a committed offset are left out.
    """
    return {tp: offset for tp, (offset, _metadata) in sink_group_commits(settings, group).items()}


def sink_group_commits(settings: KafkaSettings, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    """Committed (offset, metadata) of a consumer group, per (topic, partition)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

    admin = new_admin(settings)  # keep a reference until the future completes
    wait_for_group_coordinator(settings, admin, group)
    request = [ConsumerGroupTopicPartitions(group)]
    future = admin.list_consumer_group_offsets(request, request_timeout=settings.timeout_s)[group]
    try:
        result = future.result(timeout=settings.timeout_s)
    except KafkaException as exc:
        raise translate(exc, settings, f"listing offsets of consumer group {group}") from exc
    commits: dict[tuple[str, int], tuple[int, str]] = {}
    for tp in result.topic_partitions or []:
        if tp.error is None and tp.offset >= 0:
            commits[(tp.topic, tp.partition)] = (tp.offset, tp.metadata or "")
    return commits


# While the group coordinator loads its partition (a broker that just started), Kafka answers
# OffsetFetch with a coordinator error, and librdkafka's ListConsumerGroupOffsets handler then
# dereferences a null consumer group and crashes the process (librdkafka issue #5040, open in
# 2.16). DescribeConsumerGroups answers the same errors safely: ask it until the coordinator is
# ready, before asking for offsets.
_COORDINATOR_ERRORS = frozenset(
    {"COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR", "_TIMED_OUT"}
)
_ASK_S = 2.0  # one DescribeConsumerGroups; a coordinator that just started answers within seconds


def wait_for_group_coordinator(settings: KafkaSettings, admin: Any, group: str) -> None:
    """Return once `group`'s coordinator answers (a missing group is an answer too)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + settings.timeout_s
    delay = 0.05
    while True:
        ask = min(_ASK_S, max(0.1, deadline - time.monotonic()))
        future = admin.describe_consumer_groups([group], request_timeout=ask)[group]
        try:
            future.result(timeout=ask + 1.0)
            return
        except KafkaException as exc:
            error = kafka_error(exc)
            waiting = error is not None and (error.name() in _COORDINATOR_ERRORS or error.retriable())
            if not waiting or time.monotonic() + delay > deadline:
                raise translate(exc, settings, f"finding the coordinator of consumer group {group}") from exc
        time.sleep(delay)
        delay = min(delay * 2, 0.5)
