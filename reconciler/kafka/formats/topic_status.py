"""KIP-558 active-topic records of the status topic, byte for byte (docs/record-formats.md#status-topic).

Java's `KafkaStatusBackingStore`: the key is `status-topic-<topic>:connector-<connector>`, the
value `{"topic":{"name":…,"connector":…,"task":N,"discoverTimestamp":<ms>}}` (its schema's field
order), and a tombstone forgets the topic (what `PUT /connectors/{name}/topics/reset` and a
connector's deletion write). The status replay reads them (`kafka.replay.status`); the runtime
writes them for the topics its tasks read and wrote (`runtime.batch.active_topics`). Pure.
"""

from __future__ import annotations

from reconciler.kafka.formats.records import STATUS_TOPIC_PREFIX, STATUS_TOPIC_SEPARATOR, Record, TopicRole, dumps, text_key


def topic_status_key(topic: str, connector: str) -> bytes:
    return text_key(f"{STATUS_TOPIC_PREFIX}{topic}{STATUS_TOPIC_SEPARATOR}{connector}")


def topic_status_record(topic: str, connector: str, task_id: int, discovered_ms: int | None) -> Record:
    """`connector`'s task `task_id` used `topic`, first seen at `discovered_ms` (epoch ms);
    `discovered_ms=None` writes the tombstone that forgets it."""
    key = topic_status_key(topic, connector)
    if discovered_ms is None:
        return Record(TopicRole.STATUS, key, None)
    inner = {"name": topic, "connector": connector, "task": task_id, "discoverTimestamp": discovered_ms}
    return Record(TopicRole.STATUS, key, dumps({"topic": inner}))
