"""What one tick reads: the config, status and reconciler topics to their end, through
Connect's state machines, plus the runtime's own marks (pending restarts, failures).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from reconciler.core.live import LiveState
from reconciler.kafka import records as rec
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.own_records import FailureMark
from reconciler.runtime.failures import FailureLog
from reconciler.core.transitions import PendingRestart
from reconciler.runtime.restarts import RestartLog


@dataclass(frozen=True)
class TickView:
    """The topics as one tick read them."""

    live: LiveState
    config_end: int  # the config topic's end offset this tick read
    pending_restarts: dict[str, PendingRestart]
    config_offsets: dict[str, int]  # connector → offset of its latest `connector-` record
    failures: dict[str, FailureMark] = field(default_factory=dict)  # our marks of FAILED connectors
    first_tick: bool = False  # no tick ran on this group before (no `runtime-started` mark)
    # KIP-618: connectors whose latest commit came after their latest `tasks-fencing-` record,
    # and the task count of that record (`runtime.fencing`).
    pending_fencing: frozenset[str] = frozenset()
    task_count_records: dict[str, int] = field(default_factory=dict)


def read_view(settings: KafkaSettings) -> TickView:
    """Config, status and reconciler topics read to the end through Connect's state machines."""
    from reconciler.kafka.consume import raw_to_end
    from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state

    topics = settings.topics
    config, status, ours, restarts = ConfigReplay(), StatusReplay(), ReconcilerReplay(), RestartLog()
    failures = FailureLog()
    config_offsets: dict[str, int] = {}
    connector_prefix = rec.CONNECTOR_PREFIX.encode()
    for msg in raw_to_end(settings, [topics.configs, topics.status, topics.reconciler]):
        topic, key, value, offset = msg.topic(), msg.key(), msg.value(), msg.offset()
        if topic == topics.configs:
            config.apply(key, value, offset)
            restarts.on_config(key, value, offset)
            if key is not None and key.startswith(connector_prefix):
                config_offsets[key[len(connector_prefix) :].decode("utf-8", "replace")] = offset
        elif topic == topics.status:
            status.apply(key, value, offset, msg.timestamp()[1])
        else:
            ours.apply(key, value, offset)
            restarts.on_reconciler(key, value)
            failures.on_reconciler(key, value)
    live = build_live_state(config, status, ours, settings.group_id)
    config_end = config.offset + 1
    applied = [name for name, requests in live.applied.items() if requests.restart]
    pending = restarts.pending(config_end, applied)
    return TickView(
        live, config_end, pending, config_offsets, failures.marks, restarts.started is None,
        frozenset(config.pending_fencing), dict(config.task_count_records),
    )
