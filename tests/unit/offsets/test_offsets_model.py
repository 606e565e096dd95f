"""The offsets state machine's pure parts: Connect's messages, resume points, sink group changes,
request bodies, current offsets for the plan, and the import's YAML (reconciler.offsets.model/migrate)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from reconciler.connectors.offsets_check import hook_offsets
from reconciler.core.diagnostics import Severity
from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector, LiveState, AppliedRequests
from reconciler.core.models import ConnectorManifest, DesiredConnector, OffsetEntry, OffsetsAction, OffsetsRequest
from reconciler.core.planner import build_plan
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.io import offset_stores
from reconciler.kafka.formats import records as rec
from reconciler.kafka.replay import OffsetsReplay
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.offsets import migrate, model
from reconciler.offsets.model import NOTHING, SNAPSHOT, STOPPED, CHANGED, Progress, SinkChange

ALTER, RESET = OffsetsAction.ALTER, OffsetsAction.RESET


def connector(name: str, config: dict[str, Any], offsets: dict[str, Any] | None = None) -> DesiredConnector:
    # The type comes from the class (as in Connect): a sink's config names its topics.
    kind = "parquet-sink" if "topics" in config or "topics.regex" in config else "datagen"
    spec: dict[str, Any] = {"class": kind, "config": config}
    if offsets is not None:
        spec["offsets"] = offsets
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


@pytest.mark.parametrize(
    ("action", "confirmed", "message"),
    [
        (ALTER, True, "The offsets for this connector have been altered successfully"),
        (RESET, True, "The offsets for this connector have been reset successfully"),
        (
            ALTER,
            False,
            "The Connect framework-managed offsets for this connector have been altered successfully. However, if "
            "this connector manages offsets externally, they will need to be manually altered in the system that "
            "the connector uses.",
        ),
        (
            RESET,
            False,
            "The Connect framework-managed offsets for this connector have been reset successfully. However, if "
            "this connector manages offsets externally, they will need to be manually reset in the system that "
            "the connector uses.",
        ),
    ],
)
def test_success_messages_are_connects(action: OffsetsAction, confirmed: bool, message: str) -> None:
    assert model.success_message(action, confirmed) == message


def test_zombie_message_says_retry_is_safe() -> None:
    text = model.zombie_sink_message("s", RESET, ["m-1 (rdkafka@/10.0.0.1)"])
    assert text.startswith("Failed to reset consumer group offsets for connector s either because its tasks haven't")
    assert "(active members: m-1 (rdkafka@/10.0.0.1))" in text
    assert "this operation can be safely retried" in text and "zombie sink tasks" in text


@pytest.mark.parametrize(
    ("progress", "request_id", "done"),
    [
        (None, "r1", NOTHING),
        (Progress("r1", "stop"), "r1", STOPPED),
        (Progress("r1", "snapshot"), "r1", SNAPSHOT),
        (Progress("r1", "alter", True), "r1", CHANGED),
        (Progress("r1", "reset"), "r1", CHANGED),
        (Progress("r0", "alter"), "r1", NOTHING),  # another (superseded) request: start from scratch
    ],
)
def test_resume_point(progress: Progress | None, request_id: str, done: int) -> None:
    assert model.resume_point(progress, request_id) == done


def test_progress_record_keeps_the_hooks_answer_and_connects_shape() -> None:
    plain = model.progress_record("s", "r1", "snapshot")
    assert plain == own.offsets_progress_record("s", "r1", "snapshot")
    assert plain.value == b'{"id":"r1","step":"snapshot"}'
    answered = model.progress_record("s", "r1", "alter", True)
    assert (answered.key, answered.value) == (b"offsets-progress/s", b'{"id":"r1","step":"alter","connector-confirmed":true}')
    assert answered.value is not None and plain.value is not None
    assert model.decode_progress(answered.value) == Progress("r1", "alter", True)
    assert model.decode_progress(plain.value) == Progress("r1", "snapshot", None)
    # The planner's reader sees the same progress in both.
    assert own.decode_offsets_progress(answered.value) == own.OffsetsProgress("r1", "alter")


T0, T1, T2 = ("t", 0), ("t", 1), ("t", 2)


@pytest.mark.parametrize(
    ("before", "targets", "change"),
    [
        # Augment only: just the named partitions are committed.
        ({T0: 50, T1: 70}, {T0: 10}, SinkChange({T0: 10}, False)),
        ({}, {T2: 3}, SinkChange({T2: 3}, False)),
        # A null removes: the group is deleted and everything else committed again.
        ({T0: 50, T1: 70}, {T0: None}, SinkChange({T1: 70}, True)),
        ({T0: 50, T1: 70}, {T0: None, T1: 5, T2: 9}, SinkChange({T1: 5, T2: 9}, True)),
        # Removing what is not committed changes nothing.
        ({T1: 70}, {T0: None}, SinkChange({}, False)),
    ],
)
def test_sink_change(before: dict[Any, int], targets: dict[Any, int | None], change: SinkChange) -> None:
    assert model.sink_change(before, targets) == change


def test_request_bodies_parse_as_connect_does() -> None:
    sink = [
        OffsetEntry(partition={"kafka_topic": "t", "kafka_partition": "1"}, offset={"kafka_offset": "12"}),
        OffsetEntry(partition={"kafka_topic": "t", "kafka_partition": 0}, offset=None),
        OffsetEntry(partition={"kafka_topic": "t", "kafka_partition": 1}, offset={"kafka_offset": 13}),
    ]
    assert hook_offsets(sink, sink=True) == {("t", 1): 13, ("t", 0): None}  # the last entry wins
    source = [
        OffsetEntry(partition={"a": 1, "b": "x"}, offset={"pos": 1}),
        OffsetEntry(partition={"b": "x", "a": 1}, offset={"pos": 2}),  # same partition, other order
        OffsetEntry(partition={"a": 1.0, "b": "x"}, offset=None),  # 1.0 is not 1 to Java
    ]
    pairs = model.source_targets(source)
    assert pairs == [({"b": "x", "a": 1}, {"pos": 2}), ({"a": 1.0, "b": "x"}, None)]
    # What the connector's hooks are given: the same pairs, keyed by canonical JSON.
    assert hook_offsets(source, sink=False) == {'{"a":1,"b":"x"}': {"pos": 2}, '{"a":1.0,"b":"x"}': None}


def test_sink_body_round_trip() -> None:
    offsets = {("b", 0): 5, ("a", 1): 7, ("a", 0): 3}
    body = model.sink_body(offsets)
    assert [e["partition"] for e in body] == [
        {"kafka_topic": "a", "kafka_partition": 0},
        {"kafka_topic": "a", "kafka_partition": 1},
        {"kafka_topic": "b", "kafka_partition": 0},
    ]
    assert model.sink_offsets_from_body(body) == offsets


def test_current_entries_follow_the_requests_key_order() -> None:
    body = model.sink_body({("t", 0): 5000, ("t", 1): 4000})
    alter = OffsetsRequest.model_validate(
        {"id": "a", "action": "alter", "offsets": [
            {"partition": {"kafka_partition": "0", "kafka_topic": "t"}, "offset": {"kafka_offset": 1}},
            {"partition": {"kafka_topic": "t", "kafka_partition": 7}, "offset": None},
        ]}
    )
    assert model.current_entries(body, alter) == [
        OffsetEntry(partition={"kafka_partition": "0", "kafka_topic": "t"}, offset={"kafka_offset": 5000})
    ]
    reset = OffsetsRequest.model_validate({"id": "r", "action": "reset"})
    assert [e.offset for e in model.current_entries(body, reset)] == [{"kafka_offset": 5000}, {"kafka_offset": 4000}]


def test_groups_and_offsets_topics() -> None:
    assert offset_stores.sink_group("s", {}) == "connect-s"
    assert offset_stores.sink_group("s", {"consumer.override.group.id": "mine"}) == "mine"


def _stores(config: dict[str, str | None]) -> list[tuple[str, str]]:
    worker = KafkaSettings(bootstrap_servers="a:9092", group_id="w", topics=Topics.for_group("w"))
    return [(store.settings.bootstrap_servers, store.topic) for store in offset_stores.source_stores(worker, config)]


def test_source_offsets_stores_primary_first() -> None:
    """KIP-618: a connector-specific store when `offsets.storage.topic` is set or the producer
    targets another cluster; the worker topic on the worker cluster stays the secondary."""
    assert _stores({}) == [("a:9092", "w-offsets")]
    assert _stores({"offsets.storage.topic": "own"}) == [("a:9092", "own"), ("a:9092", "w-offsets")]
    assert _stores({"offsets.storage.topic": "w-offsets"}) == [("a:9092", "w-offsets")]
    other = {"producer.override.bootstrap.servers": "b:9092"}
    assert _stores(other) == [("b:9092", "w-offsets"), ("a:9092", "w-offsets")]
    assert _stores({**other, "offsets.storage.topic": "own"}) == [("b:9092", "own"), ("a:9092", "w-offsets")]
    # The same cluster under another spelling of its addresses is the same cluster.
    assert _stores({"producer.override.bootstrap.servers": " A:9092 "}) == [("a:9092", "w-offsets")]


def test_only_a_connector_created_by_this_apply_is_known_to_have_no_task() -> None:
    running = InstanceStatus(state=InstanceState.RUNNING)
    assert model.created_fresh(None)
    assert model.created_fresh(LiveConnector(name="s"))  # e.g. a leftover target state only
    assert not model.created_fresh(LiveConnector(name="s", config={"a": "b"}))
    assert not model.created_fresh(LiveConnector(name="s", task_statuses={0: running}))
    assert not model.created_fresh(LiveConnector(name="s", connector_status=running))


def test_pending_requests_skip_applied_ids() -> None:
    request = {"id": "r1", "action": "reset"}
    desired = [connector("b", {"topics": "t"}, request), connector("a", {"topics": "t"}, request), connector("c", {"topics": "t"})]
    live = LiveState(applied={"b": AppliedRequests(offsets=["r1"])})
    assert [c.name for c in model.pending_requests(desired, live)] == ["a"]


def test_plan_warns_about_partitions_of_topics_the_sink_does_not_read() -> None:
    request = {
        "id": "r1",
        "action": "alter",
        "offsets": [
            {"partition": {"kafka_topic": "ordrs", "kafka_partition": 0}, "offset": {"kafka_offset": 1}},
            {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1}},
        ],
    }
    plan = build_plan([connector("s", {"topics": "orders,refunds"}, request)], LiveState())
    (warning,) = plan.diagnostics
    assert warning.severity is Severity.WARNING
    assert warning.field_path == "spec.offsets.offsets[0].partition.kafka_topic"
    assert warning.summary == "partition names topic 'ordrs', which this sink does not read (topics: orders,refunds)"


# --- import (migrate) ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mapping",
    [
        {"table": "orders", "schema": "public"},
        {"ratio": 1e10, "small": 1.5e-7, "big": 1e20, "neg": -2.0, "whole": 3.0},
        {"flag": True, "none": None, "n": -12, "yes": "yes", "tilde": "~", "num": "12", "empty": ""},
        {"text": "Bestellungen-ü", "quote": 'a "b" \\ c', "nl": "a\nb", "colon": "a: b", "hash": "#x"},
    ],
)
def test_flow_maps_load_back_with_the_same_keys_order_and_types(mapping: dict[str, Any]) -> None:
    loaded = yaml.safe_load(migrate.flow_map(mapping))
    assert loaded == mapping and list(loaded) == list(mapping)
    assert [type(v) for v in loaded.values()] == [type(v) for v in mapping.values()]
    assert rec.encode_offset_key("c", loaded) == rec.encode_offset_key("c", mapping)


def test_import_reports_undeclared_connectors_and_keeps_java_order() -> None:
    replay = OffsetsReplay()
    for key, value in [
        (b'["jdbc-src",{"table":"orders","schema":"public"}]', b'{"incrementing":1300}'),
        (b'["jdbc-src",{"ratio":1.0E10}]', b'{"ts":1.5E-7}'),
        (b'["jdbc-src",{"gone":1}]', b'{"n":1}'),
        (b'["jdbc-src",{"gone":1}]', None),
        (b'["other",{"a":1}]', b'{"n":1}'),
    ]:
        replay.apply(key, value)
    source = connector("jdbc-src", {})
    result = migrate.ImportResult()
    migrate.source_imports({"connect-offsets": replay}, [source], result)
    assert result.notes == ["other: has source offsets in the old cluster but is not declared in the manifests; skipped"]
    (request,) = result.requests
    # The task wrote table before schema; Java's REST API (a HashMap) reads schema first.
    assert request.notes == [
        'Java wrote the key ["jdbc-src",{"table":"orders","schema":"public"}]; the reconciler writes '
        '["jdbc-src",{"schema":"public","table":"orders"}], the bytes Java\'s REST API reads this '
        "partition by (a Java task that reads its own field order would not find them)"
    ]
    text = migrate.render_snippets(result, "migrate-1")
    block = yaml.safe_load("\n".join(line for line in text.splitlines() if not line.startswith("#")))
    assert block == {
        "offsets": {
            "id": "migrate-1",
            "action": "alter",
            "offsets": [
                {"partition": {"table": "orders", "schema": "public"}, "offset": {"incrementing": 1300}},
                {"partition": {"ratio": 1e10}, "offset": {"ts": 1.5e-7}},
            ],
        }
    }
    assert list(block["offsets"]["offsets"][0]["partition"]) == ["table", "schema"]
    OffsetsRequest.model_validate(block["offsets"])  # a valid request as it stands


def test_import_notes_a_java_key_the_reconciler_would_not_reproduce() -> None:
    replay = OffsetsReplay()
    replay.apply(b'["src", {"a":1}]', b'{"n":1}')  # a space: not how Jackson writes it
    result = migrate.ImportResult()
    migrate.source_imports({"t": replay}, [connector("src", {})], result)
    (request,) = result.requests
    assert request.notes == [
        'Java wrote the key ["src", {"a":1}]; the reconciler writes ["src",{"a":1}], the bytes '
        "Java's REST API reads this partition by (a Java task that reads its own field order "
        "would not find them)"
    ]
