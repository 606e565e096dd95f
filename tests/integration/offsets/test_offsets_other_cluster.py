"""Connectors pointed at another Kafka cluster by client overrides (KIP-458), and their offsets
(KIP-875, acceptance cases B14, B15, B18, B21, B23 and B24, "different Kafka cluster", in
docs/state-machine.md#acceptance-cases).

The worker's internal topics live on the session broker; the data topic and the connectors'
clients on a second broker (`other_kafka`, another Kafka process): the source produces there
(`producer.override.bootstrap.servers`), so its offsets go to a connector-specific store there
with the worker's topic as secondary (KIP-618); the sink consumes and commits its group there
(`consumer.override.*`), and offsets management finds that group through `admin.override.*`,
as Connect's admin client does. Each case is a manifest edit + a run tick, the data checked.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from reconciler.core.normalize import config_value
from reconciler.core.live import InstanceState
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets import model
from reconciler.kafka.io.store import read_offsets_topics
from reconciler.kafka.io.store import read_view
from reconciler.offsets.state import current_body
from test_offsets_run import COUNT, drain, files, sink_alter, stripes
from offsets_support import create_topic
from run_support import SOURCE_BATCH, Pipeline, ids, parquet_keys, pipeline, topic_keys

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest

__all__ = ["pipeline"]  # the fixture


@pytest.fixture
def elsewhere(other_kafka: KafkaUnderTest, pipeline: Pipeline) -> KafkaSettings:
    """The second cluster, under the pipeline's group name (so its topics are this test's)."""
    return other_kafka.settings(pipeline.settings.group_id)


def source_config(topic: str, there: KafkaSettings, **extra: Any) -> dict[str, Any]:
    return {"topic": topic, "count": COUNT, "record.bytes": 40, "shards": 2,
            "producer.override.bootstrap.servers": there.bootstrap_servers, **extra}


def sink_config(topic: str, out: Path, there: KafkaSettings) -> dict[str, Any]:
    return {"topics": topic, "path": str(out), "flush.records": 50,
            "consumer.override.bootstrap.servers": there.bootstrap_servers,
            "admin.override.bootstrap.servers": there.bootstrap_servers}


def declare(pipeline: Pipeline, out: Path, there: KafkaSettings, **source_extra: Any) -> tuple[str, str]:
    """datagen → a topic on the other cluster → parquet-sink reading it there; (topic, sink name)."""
    topic = f"{pipeline.settings.group_id}.orders"
    create_topic(there, topic, 2)
    sink = "sink-" + pipeline.settings.group_id[-8:]  # its group `connect-<name>` is broker-wide
    pipeline.connector("src", "datagen", source_config(topic, there, **source_extra))
    pipeline.connector(sink, "parquet-sink", sink_config(topic, out, there))
    return topic, sink


def properties(config: dict[str, Any]) -> dict[str, str | None]:
    """A manifest's config as Connect's properties (what the config topic holds): strings."""
    return {key: config_value(value) for key, value in config.items()}


def test_sink_on_another_cluster_alters_and_resets_its_group_there(
    pipeline: Pipeline, elsewhere: KafkaSettings, tmp_path: Path
) -> None:
    """Cases 14, 18 and 23 with the sink's clients on another cluster."""
    out = tmp_path / "parquet"
    topic, sink = declare(pipeline, out, elsewhere)
    drain(pipeline, out)
    group = f"connect-{sink}"
    ends = sink_group_offsets(elsewhere, group)
    assert set(ends) == {(topic, 0), (topic, 1)}
    assert sink_group_offsets(pipeline.settings, group) == {}  # nothing on the worker's cluster
    config = properties(pipeline.manifests[sink]["spec"]["config"])
    assert current_body(pipeline.settings, sink, config) == model.sink_body(ends)  # case 14

    # Case 18: a rewind of partition 0 re-delivers exactly that range, from the other cluster.
    before_p1 = files(out, topic, 1)
    pipeline.set(sink, offsets=sink_alter("rewind-1", topic, p0=100))
    (outcome,) = pipeline.tick().offsets
    assert (outcome.status, outcome.steps) == ("applied", ("stop", "snapshot", "alter", "return")), outcome.render()
    assert parquet_keys(out) == ids(COUNT)
    assert any(start == 100 for start, _ in files(out, topic, 0)) and files(out, topic, 1) == before_p1
    assert sink_group_offsets(elsewhere, group) == ends
    assert read_view(pipeline.settings).snapshot(sink, "rewind-1") == model.sink_body(ends)

    # Case 23: reset there, twice (repeating it succeeds): each snapshot is the
    # group as the other cluster held it; the sink ends with every id once, its group at the end.
    for request_id in ("reset-1", "reset-2"):
        pipeline.set(sink, offsets={"id": request_id, "action": "reset"})
        (outcome,) = pipeline.tick().offsets
        assert outcome.status == "applied", outcome.render()
        assert read_view(pipeline.settings).snapshot(sink, request_id) == model.sink_body(ends)
        assert parquet_keys(out) == ids(COUNT)
        assert sink_group_offsets(elsewhere, group) == ends
    assert sink_group_offsets(pipeline.settings, group) == {}


def stored_positions(settings: KafkaSettings, topic: str) -> dict[int, int]:
    """datagen's offsets as one offsets topic holds them, read as the runtime reads them."""
    replay = read_offsets_topics(settings, [topic])[topic]
    return {partition["shard"]: offset["position"] for partition, offset, _raw in replay.offsets_for("src")}


@pytest.mark.parametrize("own_topic", [False, True], ids=["worker-topic-name", "offsets.storage.topic"])
def test_source_on_another_cluster_keeps_its_offsets_there(
    own_topic: bool, pipeline: Pipeline, elsewhere: KafkaSettings, tmp_path: Path
) -> None:
    """Cases 15, 21 and 24 with the source producing to another cluster: its primary offsets
    store is there (the worker topic's name, or its `offsets.storage.topic`), the worker's own
    topic the secondary; alter and reset act on both, and the resumed task reads them back."""
    out = tmp_path / "parquet"
    primary = f"{pipeline.settings.group_id}-own-offsets" if own_topic else pipeline.settings.topics.offsets
    extra = {"offsets.storage.topic": primary} if own_topic else {}
    topic, sink = declare(pipeline, out, elsewhere, **extra)
    pipeline.set(sink, state="stopped")
    pipeline.tick()
    config = properties(pipeline.manifests["src"]["spec"]["config"])

    def positions() -> dict[int, int]:  # what `reconciler offsets src` shows (case 15)
        return {e["partition"]["shard"]: e["offset"]["position"] for e in current_body(pipeline.settings, "src", config)}

    first = positions()
    assert all(first.values()) and topic_keys(elsewhere, topic) == stripes(first)
    assert stored_positions(elsewhere, primary) == first  # primary: on the producer's cluster
    assert stored_positions(pipeline.settings, pipeline.settings.topics.offsets) == first  # secondary

    # Case 21: skip ahead; the resumed task continues from there, on the other cluster.
    skip = {"id": "skip-1", "action": "alter",
            "offsets": [{"partition": {"shard": s}, "offset": {"position": 250}} for s in (0, 1)]}
    pipeline.set("src", offsets=skip)
    for _ in range(3):
        pipeline.tick()
    assert positions() == {0: 300, 1: 300}
    assert topic_keys(elsewhere, topic) == stripes(first) + (ids(600) - ids(500))
    assert stored_positions(elsewhere, primary) == stored_positions(pipeline.settings, pipeline.settings.topics.offsets)

    # Case 24: reset, twice; the resumed source starts from scratch each time.
    expected = topic_keys(elsewhere, topic)
    for request_id in ("reset-1", "reset-2"):
        pipeline.set("src", offsets={"id": request_id, "action": "reset"})
        (outcome,) = pipeline.tick().offsets
        assert outcome.status == "applied", outcome.render()
        assert positions() == first  # the same first batch as the very first run
        expected += stripes(first)
        assert topic_keys(elsewhere, topic) == expected
    assert read_view(pipeline.settings).live.is_applied("src", "offsets", "reset-2")


def test_connectors_whose_cluster_cannot_be_reached_wait_and_fail_no_task(
    pipeline: Pipeline, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Java task whose clients cannot reach their cluster keeps retrying and stays RUNNING
    (Connect sets `max.block.ms` and `delivery.timeout.ms` to the maximum; a consumer's poll
    just returns nothing): here the batch waits, no task turns FAILED, the warnings name the
    address, and a source whose cluster answers runs beside the waiting one; pointed at a
    cluster that answers, the next ticks move everything."""
    out = tmp_path / "parquet"
    topic = f"{pipeline.settings.group_id}.orders"
    create_topic(pipeline.settings, topic, 2)
    source = {"topic": topic, "count": COUNT, "record.bytes": 40, "shards": 2}
    sink = {"topics": topic, "path": str(out), "flush.records": 50}
    nowhere = "127.0.0.1:1"
    pipeline.connector("src", "datagen", {**source, "producer.override.bootstrap.servers": nowhere})
    pipeline.connector("sink", "parquet-sink", {**sink, "consumer.override.bootstrap.servers": nowhere})
    near = f"{pipeline.settings.group_id}.near"
    create_topic(pipeline.settings, near, 2)
    pipeline.connector("near", "datagen", {**source, "topic": near})  # its stores answer: it runs
    with caplog.at_level(logging.WARNING, logger="reconciler.runtime.executor"):
        for _ in range(2):
            report = pipeline.tick()
            for name in ("src", "sink", "near"):
                connector = report.connector(name)
                assert connector is not None and connector.tasks[0].state is InstanceState.RUNNING, connector
                assert pipeline.states(name) == ("RUNNING", {0: "RUNNING"})
    assert f"connector src: its tasks wait for the next batch: cannot reach Kafka at {nowhere}" in caplog.text
    assert f"connector sink: its tasks wait for the next batch: cannot reach Kafka at {nowhere}" in caplog.text
    assert "connector near:" not in caplog.text
    assert topic_keys(pipeline.settings, topic) == Counter() and parquet_keys(out) == Counter()
    moved = topic_keys(pipeline.settings, near)
    assert len(moved) == sum(moved.values()) == 2 * SOURCE_BATCH, moved  # both batches, each id once
    live = pipeline.live()
    assert set(live.last_batches) == {"near"}  # the others did not run: LAST BATCH says nothing moved
    assert sorted(live.waiting) == ["sink", "src"]  # and `status` says why (wait/<name>)
    assert all(w.reason.startswith(f"cannot reach Kafka at {nowhere}") for w in live.waiting.values())
    assert pipeline.worker.release() == 6  # the runner stops: 3 connectors and their tasks UNASSIGNED,
    assert pipeline.live().waiting == {}  # and no wait for a next batch it will not run
    pipeline.set("src", config=source)
    pipeline.set("sink", config=sink)
    drain(pipeline, out)
    assert set(pipeline.live().last_batches) == {"src", "sink", "near"}
    assert pipeline.live().waiting == {}  # they ran: the waits are over
