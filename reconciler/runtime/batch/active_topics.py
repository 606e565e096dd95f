"""KIP-558 active topics: which topics each connector's tasks used, in the status topic.

Java's `WorkerTask.recordActiveTopic` writes `status-topic-<topic>:connector-<name>` the first
time a task of the connector reads a record of a topic (a sink, before its transformations) or
has a record it produced acknowledged (a source), and never again while the record stands; the
herder tombstones them when the connector is deleted, and on `PUT …/topics/reset`. Our tasks
report the topics of a batch in their outcome (`TaskOutcome.topics`); the worker writes the new
ones with the batch's statuses. `GET /connectors/{name}/topics`, ours and a Java worker's, lists
them. Pure: live state and outcomes in, records out (`kafka.formats.topic_status`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.core.live import LiveState
from reconciler.kafka.formats.records import Record
from reconciler.kafka.formats.topic_status import topic_status_record

if TYPE_CHECKING:
    from reconciler.runtime.batch.tasks import TaskOutcome


def topic_records(live: LiveState, outcomes: Sequence[TaskOutcome], now_ms: int) -> list[Record]:
    """A record for each topic a task of the batch used that its connector does not list yet:
    once per topic per connector, naming the lowest task id that used it in this batch."""
    known = {name: set(topics) for name, topics in live.active_topics.items()}
    records = []
    for outcome in sorted(outcomes, key=lambda o: (o.connector, o.task_id)):
        seen = known.setdefault(outcome.connector, set())
        for topic in outcome.topics:
            if topic not in seen:
                seen.add(topic)
                records.append(topic_status_record(topic, outcome.connector, outcome.task_id, now_ms))
    return records


def forgotten_topics(live: LiveState) -> list[Record]:
    """Tombstones for the active topics of connectors that no longer exist: Java's herder resets
    a connector's active topics when it is deleted, so one created again starts with none."""
    records = []
    for name, topics in sorted(live.active_topics.items()):
        connector = live.connector(name)
        if connector is None or not connector.exists:
            records += [topic_status_record(topic, name, 0, None) for topic in topics]
    return records
