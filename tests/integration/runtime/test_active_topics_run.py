"""KIP-558 active topics our runtime records (issue 27, item 7): after a source's and a sink's
batches, `GET /connectors/{name}/topics` lists the topics each connector's tasks used, once per
topic per connector, and a deleted connector's are forgotten. A Java worker's REST, fed the same
records (copied into its group: it must not try to run our Python connectors), lists the same.
A manifest's `spec.topicsReset` forgets them once per id, with Java's tombstones.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING

import httpx

from reconciler.api.server import serving
from reconciler.app.apply import apply
from reconciler.kafka.formats.records import Record, TopicRole
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.core.plan import PlanOptions
from reconciler.kafka.io.store import LiveStore, prepare, read_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from run_support import Pipeline, pipeline

__all__ = ["pipeline"]  # the fixture

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest


def topic_records(settings: KafkaSettings) -> list[tuple[bytes, bytes | None]]:
    """The status topic's `status-topic-…` records, in order within each partition."""
    return [
        (message.key or b"", message.value)
        for message in read_to_end(settings, settings.topics.status)
        if (message.key or b"").startswith(b"status-topic-")
    ]


def rest_topics(settings: KafkaSettings, names: list[str]) -> dict[str, object]:
    """What our REST API answers for each name's `/topics`, over `settings`' group."""
    with serving(settings, "127.0.0.1:0", "ours:0", interval_s=1.0) as service:
        service.board.replace(live=read_live_state(settings))
        with httpx.Client(base_url=service.url, timeout=30) as http:
            return {name: http.get(f"/connectors/{name}/topics").json() for name in names}


def test_the_topics_our_tasks_used_are_listed_by_our_rest_and_by_javas(
    pipeline: Pipeline, kafka: KafkaUnderTest, java_connect: RunningConnect
) -> None:
    suffix = uuid.uuid4().hex[:8]
    source, sink = f"gen-{suffix}", f"archive-{suffix}"
    topic = pipeline.topic("lines", 2)
    pipeline.connector(source, "datagen", {"topic": topic, "count": 40}, tasks_max=2)
    pipeline.connector(sink, "parquet-sink", {"topics": topic, "path": str(pipeline.root / "out")}, tasks_max=2)
    pipeline.ticks(3)  # the source writes, the sink reads (from the second batch on), then nothing new

    keys = Counter(key for key, _ in topic_records(pipeline.settings))
    assert keys == Counter({f"status-topic-{topic}:connector-{source}".encode(): 1,
                            f"status-topic-{topic}:connector-{sink}".encode(): 1})  # once, not per batch
    assert pipeline.live().active_topics == {source: [topic], sink: [topic]}
    expected = {name: {name: {"topics": [topic]}} for name in (source, sink)}
    assert rest_topics(pipeline.settings, [source, sink]) == expected

    # The same records in the Java worker's group: its REST lists the same, and so does ours there.
    java = kafka.settings(java_connect.group_id)
    prepare(java)
    written = [Record(TopicRole.STATUS, key, value) for key, value in topic_records(pipeline.settings)]
    with TransactionalWriter(java, transactional_id=f"test-active-topics-{suffix}") as writer:
        writer.write(written)
    for name in (source, sink):
        code, body = java_connect.rest("GET", f"/connectors/{name}/topics")
        assert (code, body) == (200, expected[name])
    assert rest_topics(java, [source, sink]) == expected
    with TransactionalWriter(java, transactional_id=f"test-active-topics-{suffix}") as writer:
        writer.write([Record(TopicRole.STATUS, r.key, None) for r in written])  # leave the shared group clean

    # A deleted connector's topics are forgotten (Java's herder resets them on deletion).
    pipeline.remove(sink)
    pipeline.tick()
    assert pipeline.live().active_topics == {source: [topic]}
    assert rest_topics(pipeline.settings, [sink]) == {sink: {sink: {"topics": []}}}


def test_a_manifests_topics_reset_forgets_them_once_per_id(pipeline: Pipeline) -> None:
    source = f"gen-{uuid.uuid4().hex[:8]}"
    topic = pipeline.topic("lines", 1)
    # More records than one batch writes (SOURCE_BATCH): every tick's batch uses the topic.
    pipeline.connector(source, "datagen", {"topic": topic, "count": 10 * pipeline.source_batch})
    pipeline.tick()
    assert pipeline.live().active_topics == {source: [topic]}
    key = f"status-topic-{topic}:connector-{source}".encode()

    def apply_manifests() -> tuple[list[str], int]:
        """`apply` alone (a tick would run a batch after it, which records the topic again)."""
        settings = pipeline.settings
        outcome = apply(settings, load_or_raise([str(pipeline.dir)]), PlanOptions(), store=LiveStore.one_shot(settings))
        return [a.kind.value for a in outcome.plan.actions], outcome.records_written

    pipeline.set(source, topicsReset={"id": "reset-1"})
    assert apply_manifests() == (["topics-reset"], 2)  # the tombstone and the applied id
    assert rest_topics(pipeline.settings, [source]) == {source: {source: {"topics": []}}}
    assert [(k, v is None) for k, v in topic_records(pipeline.settings)] == [(key, False), (key, True)]
    assert apply_manifests() == ([], 0)  # the same id again: nothing

    # A tick's apply leaves the done request alone; its batch uses the topic, which is recorded
    # again, as a Java task records a topic it uses after a reset.
    report = pipeline.tick()
    assert report.applied is not None and not report.applied.plan.has_changes
    assert [r.request_id for r in report.applied.plan.requests_done] == ["reset-1"]
    assert pipeline.live().active_topics == {source: [topic]}

    pipeline.set(source, topicsReset={"id": "reset-2"})  # a new id resets again
    assert apply_manifests() == (["topics-reset"], 2)
    assert pipeline.live().active_topics == {}
    assert [v is None for _, v in topic_records(pipeline.settings)] == [False, True, False, True]
