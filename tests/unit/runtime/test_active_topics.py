"""KIP-558 active topics: the status-topic record codec (Java's bytes, read back by the status
replay) and which records a batch writes (`runtime.batch.active_topics`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from reconciler.core.live import LiveConnector, LiveState
from reconciler.kafka.formats.records import Record, TopicRole
from reconciler.kafka.formats.topic_status import topic_status_key, topic_status_record
from reconciler.kafka.replay.status import StatusReplay
from reconciler.runtime.batch.active_topics import forgotten_topics, topic_records
from reconciler.runtime.batch.tasks import TaskOutcome

CONFIG = {"connector.class": "datagen"}


def test_a_topic_record_is_javas_key_and_value_and_a_tombstone_forgets_it() -> None:
    record = topic_status_record("orders.v1", "archive-sink", 2, 1_700_000_000_123)
    assert record.topic_role is TopicRole.STATUS
    assert record.key == b"status-topic-orders.v1:connector-archive-sink"
    assert record.value == (
        b'{"topic":{"name":"orders.v1","connector":"archive-sink","task":2,"discoverTimestamp":1700000000123}}'
    )
    tombstone = topic_status_record("orders.v1", "archive-sink", 2, None)
    assert tombstone.key == topic_status_key("orders.v1", "archive-sink") and tombstone.value is None


def test_the_status_replay_reads_what_the_codec_writes() -> None:
    replay = StatusReplay()
    for record in (topic_status_record("a", "c-1", 0, 5), topic_status_record("b", "c-1", 1, 6)):
        replay.apply(record.key, record.value)
    assert replay.topics == {"c-1": {"a": (0, 5), "b": (1, 6)}}
    forget = topic_status_record("a", "c-1", 0, None)
    replay.apply(forget.key, forget.value)
    assert replay.topics == {"c-1": {"b": (1, 6)}}


def written(records: Sequence[Record]) -> list[tuple[str, object]]:
    return [(r.key.decode(), None if r.value is None else json.loads(r.value)["topic"]["task"]) for r in records]


def test_a_topic_is_recorded_once_per_connector_by_the_lowest_task_that_used_it() -> None:
    live = LiveState(
        connectors={n: LiveConnector(name=n, config=CONFIG) for n in ("sink", "source")},
        active_topics={"sink": ["old"]},
    )
    outcomes = [
        TaskOutcome(connector="sink", task_id=1, records=5, topics=("new", "old")),
        TaskOutcome(connector="sink", task_id=0, records=5, topics=("new",)),
        TaskOutcome(connector="source", task_id=0, records=0, error="Traceback: boom"),  # failed, nothing committed: no topic
        TaskOutcome(connector="source", task_id=1, records=3, topics=("old",)),  # another connector's "old": its own record
    ]
    records = topic_records(live, outcomes, now_ms=42)
    assert written(records) == [("status-topic-new:connector-sink", 0), ("status-topic-old:connector-source", 1)]
    assert all(json.loads(r.value or b"")["topic"]["discoverTimestamp"] == 42 for r in records)
    assert topic_records(LiveState(connectors=live.connectors, active_topics={"sink": ["new", "old"], "source": ["old"]}),
                         outcomes, now_ms=43) == []  # already listed: never written again


def test_a_deleted_connectors_topics_are_forgotten() -> None:
    live = LiveState(
        connectors={"kept": LiveConnector(name="kept", config=CONFIG), "deleted": LiveConnector(name="deleted")},
        active_topics={"kept": ["a"], "deleted": ["a", "b"], "unknown": ["c"]},
    )
    assert written(forgotten_topics(live)) == [
        ("status-topic-a:connector-deleted", None), ("status-topic-b:connector-deleted", None),
        ("status-topic-c:connector-unknown", None),
    ]
