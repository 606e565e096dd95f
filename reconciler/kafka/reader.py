"""Live state from Kafka: the internal topics read to the end through Connect's state machines.

`read_live_state` is what `plan`, `status` and `snapshot` call: it creates nothing (a missing
group is an error); `prepare` + `read_state` is what the writers (`apply`, `run`, `watch`)
call, creating the internal topics of a new group. The decoding and the state machines are
pure (`reconciler.kafka.replay`); this module only moves bytes into them.

The reader is read_committed: records of an aborted or still open apply are not seen. A Java
worker without exactly-once support reads the config topic read_uncommitted and may act on
them; apply orders its records so that every prefix is safe, and, reading what such a worker
holds too (`uncommitted=True`, `reconciler.kafka.uncommitted`), the next apply converges
whatever it is asked (docs/compatibility.md).
"""

from __future__ import annotations

import logging
from itertools import groupby
from operator import methodcaller
from typing import Any

from reconciler import heap, masking
from reconciler.core.live import LiveState
from reconciler.kafka.admin import check_for_reading, ensure_topics
from reconciler.kafka.client import check_reachable
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)
_TOPIC_OF = methodcaller("topic")  # a C-level key function for groupby: no Python frame per record


def prepare(settings: KafkaSettings) -> None:
    """For writers: fail fast when the broker is unreachable; create or validate the internal topics."""
    check_reachable(settings)
    ensure_topics(settings)


def prepare_read(settings: KafkaSettings) -> bool:
    """For readers: fail fast when the broker is unreachable or the group has no internal topics
    (nothing is created). Returns whether our own topic exists (see `check_for_reading`)."""
    check_reachable(settings)
    return check_for_reading(settings)


def read_live_state(settings: KafkaSettings, *, task_configs: bool = True, uncommitted: bool = False) -> LiveState:
    """Check the broker and topics, then read the config, status and reconciler topics.

    Read-only: a group without its internal topics is an error, not created.
    `task_configs=False`: every connector's `task_configs` is left empty (see build_live_state).
    `uncommitted=True`: also what a Connect worker reading uncommitted records holds, where it
    differs (`reconciler.kafka.uncommitted`; planning needs it, showing statuses does not).
    """
    ours = prepare_read(settings)
    return read_state(settings, task_configs=task_configs, uncommitted=uncommitted, with_reconciler=ours)


def read_state(
    settings: KafkaSettings, *, task_configs: bool = True, uncommitted: bool = False, with_reconciler: bool = True
) -> LiveState:
    """The topics read to the end, assuming `prepare` ran (apply claims its id in between).

    `with_reconciler=False`: our own topic does not exist (a group only Connect has used): read as empty.
    """
    topics = settings.topics
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    replays: dict[str, Any] = {topics.configs: config, topics.status: status}
    if with_reconciler:
        replays[topics.reconciler] = ours
    ends: dict[tuple[str, int], int] = {}
    config_records = 0
    with heap.building():
        # One consumer reads the three topics together; per-partition order is all replays need.
        # A batch holds runs of one partition's records: the replay is looked up once per run.
        for batch in batches_to_end(settings, list(replays), ends=ends):
            for topic, run in groupby(batch, _TOPIC_OF):
                records = list(run)  # (the replays make a list of it anyway)
                if topic == topics.configs:
                    config_records += len(records)
                replays[topic].feed(records)
        live = build_live_state(config, status, ours, settings.group_id, task_configs=task_configs)
        if uncommitted:
            from reconciler.kafka.uncommitted import read_uncommitted_views

            end = max(ends.get((topics.configs, 0), 0), config.offset + 1)
            views = read_uncommitted_views(settings, config, config_records, end)
            if views:
                live = live.model_copy(update={"uncommitted": views})
                masking.remember_live(live)  # their configs are shown as restores
    for name, replay in replays.items():
        if replay.skipped:
            LOG.info("%s: %d record(s) ignored, as a Connect worker would ignore them", name, replay.skipped)
    return live
