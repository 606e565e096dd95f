"""`spec.topicsReset`: a one-shot KIP-558 request to forget a connector's active topics, as
Connect's `PUT /connectors/{name}/topics/reset` does (docs/product-rules.md#one-shot-requests):
planned once per id, shown by every renderer, written as Java's tombstones plus the applied id,
read back from our topic, and refused in a saved plan whose topics moved."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from reconciler.app.apply import refuse_stale
from reconciler.core.live import AppliedRequests, LiveConnector, LiveState, RequestKind
from reconciler.core.models import ConnectorManifest, DesiredConnector
from reconciler.core.normalize import connector_properties
from reconciler.core.plan import Action, ActionKind, PendingRequest, Plan, PlanOptions
from reconciler.core.planner import build_plan, desired_fingerprint
from reconciler.errors import StalePlan
from reconciler.kafka.formats.changes import plan_to_records
from reconciler.kafka.formats.records import Record, TopicRole
from reconciler.kafka.formats.topic_status import topic_status_record
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.render import render_json, render_markdown, render_text
from reconciler.render.json import load_plan_json

NOW = 1_700_000_000_000


def connector(name: str = "archive", **spec: Any) -> DesiredConnector:
    spec.setdefault("class", "parquet-sink")
    spec.setdefault("config", {"topics": "orders", "path": "/data"})
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def live_with(desired: DesiredConnector, topics: list[str], applied: Sequence[str] = ()) -> LiveState:
    name = desired.name
    return LiveState(
        connectors={name: LiveConnector(name=name, config=connector_properties(desired), task_count=1)},
        active_topics={name: topics} if topics else {},
        applied={name: AppliedRequests(topics_reset=list(applied))} if applied else {},
    )


def only_action(plan: Plan) -> Action:
    assert len(plan.actions) == 1, plan.actions
    return plan.actions[0]


# --- the manifest ----------------------------------------------------------------------------------


def test_the_request_is_an_id_and_nothing_else() -> None:
    assert connector(topicsReset={"id": "t1"}).spec.topicsReset is not None
    for wrong in ({}, {"id": ""}, {"id": "a b"}, {"id": "t1", "topics": ["x"]}):
        with pytest.raises(ValidationError):
            connector(topicsReset=wrong)


def test_the_request_changes_the_manifests_fingerprint_only_when_declared() -> None:
    plain, reset, other = connector(), connector(topicsReset={"id": "t1"}), connector(topicsReset={"id": "t2"})
    assert len({desired_fingerprint([c]) for c in (plain, reset, other)}) == 3


# --- the planner -----------------------------------------------------------------------------------


def test_a_pending_reset_lists_the_connectors_active_topics() -> None:
    desired = connector(topicsReset={"id": "t1"})
    action = only_action(build_plan([desired], live_with(desired, ["orders", "payments"])))
    assert action.kind is ActionKind.TOPICS_RESET
    assert (action.request_id, action.topics, action.request_status) == ("t1", ["orders", "payments"], "pending")
    assert action.reason == ""


def test_an_applied_id_plans_no_change_and_is_listed_as_done() -> None:
    desired = connector(topicsReset={"id": "t1"})
    plan = build_plan([desired], live_with(desired, ["orders"], applied=["t1"]))
    assert not plan.has_changes
    assert plan.requests_done == [
        PendingRequest(connector="archive", kind=RequestKind.TOPICS_RESET, request_id="t1", status="applied")
    ]


def test_a_new_id_resets_again() -> None:
    desired = connector(topicsReset={"id": "t2"})
    action = only_action(build_plan([desired], live_with(desired, ["orders"], applied=["t1"])))
    assert (action.kind, action.request_id, action.topics) == (ActionKind.TOPICS_RESET, "t2", ["orders"])


def test_a_connector_without_active_topics_still_records_the_id() -> None:
    desired = connector(topicsReset={"id": "t1"})
    action = only_action(build_plan([desired], live_with(desired, [])))
    assert action.topics == [] and "no active topic" in action.reason


def test_the_reset_runs_in_the_restart_phase_after_a_restart_and_before_deletes() -> None:
    desired = connector(topicsReset={"id": "t1"}, restart={"id": "r1"}, state="paused")
    live = live_with(desired, ["orders"]).model_copy(update={"owned": ["gone"]})
    live.connectors["gone"] = LiveConnector(name="gone", config={"connector.class": "datagen"})
    plan = build_plan([desired], live, PlanOptions(prune=True))
    assert [a.kind for a in plan.actions] == [
        ActionKind.PAUSE, ActionKind.RESTART, ActionKind.TOPICS_RESET, ActionKind.DELETE
    ]


def test_a_connector_created_in_the_plan_resets_what_a_deleted_namesake_left() -> None:
    # Java's herder tombstones a deleted connector's topics; records a Java worker left before
    # that (or written since) are the connector's as far as `GET …/topics` goes.
    desired = connector(topicsReset={"id": "t1"})
    plan = build_plan([desired], LiveState(active_topics={"archive": ["old"]}))
    assert [a.kind for a in plan.actions] == [ActionKind.CREATE, ActionKind.TOPICS_RESET]
    assert plan.actions[1].topics == ["old"]


# --- the renderers ---------------------------------------------------------------------------------


def reset_plan() -> Plan:
    desired = connector(topicsReset={"id": "t1"})
    return build_plan([desired], live_with(desired, ["orders", "payments"]))


def test_text_shows_what_is_forgotten() -> None:
    text = render_text(reset_plan())
    assert '  ~ connector "archive" active topics will be reset' in text
    assert "      ~ resets 2 active topic(s): orders, payments (id t1)" in text
    assert text.rstrip().endswith(
        "Plan: 0 to create, 0 to update, 0 to delete, 0 state changes, 0 restarts, 0 offsets requests, "
        "1 active-topics reset."
    )


def test_markdown_shows_it_in_the_table_and_the_diff() -> None:
    markdown = render_markdown(reset_plan())
    assert "| `archive` | topics-reset | resets 2 active topic(s): orders, payments (id t1) |" in markdown
    assert "~ resets 2 active topic(s): orders, payments (id t1)" in markdown


def test_json_carries_the_topics_and_round_trips() -> None:
    plan = reset_plan()
    doc = json.loads(render_json(plan))
    action = doc["actions"][0]
    assert (action["kind"], action["request_id"], action["topics"]) == ("topics-reset", "t1", ["orders", "payments"])
    assert doc["summary"]["topics_reset"] == 1 and doc["summary"]["total"] == 1
    assert load_plan_json(render_json(plan)) == plan


def test_the_applied_request_is_listed_as_done_by_kind() -> None:
    desired = connector(topicsReset={"id": "t1"})
    plan = build_plan([desired], live_with(desired, ["orders"], applied=["t1"]))
    assert '  - topics-reset t1 on connector "archive"' in render_text(plan)


def test_only_a_topics_reset_carries_topics() -> None:
    with pytest.raises(ValidationError, match="a restart action has no topics"):
        Action(kind=ActionKind.RESTART, connector="a", request_id="r1", topics=["x"])


# --- the records -----------------------------------------------------------------------------------


def test_apply_writes_javas_tombstones_then_the_applied_id() -> None:
    desired = connector(topicsReset={"id": "2026-11-28/t1"})
    live = live_with(desired, ["orders", "payments"])
    plan = build_plan([desired], live)
    assert plan_to_records(plan, {"archive": desired}, live, now_ms=NOW) == [
        Record(TopicRole.STATUS, b"status-topic-orders:connector-archive", None),
        Record(TopicRole.STATUS, b"status-topic-payments:connector-archive", None),
        Record(TopicRole.RECONCILER, b"applied/topics-reset/archive/2026-11-28/t1", b'{"applied-at":1700000000000}'),
    ]


def test_a_reset_without_an_id_is_a_programming_error() -> None:
    plan = Plan(actions=[Action(kind=ActionKind.TOPICS_RESET, connector="archive", topics=["x"])])
    with pytest.raises(ValueError, match="request id"):
        plan_to_records(plan, {}, LiveState(), now_ms=NOW)


def test_the_written_records_read_back_as_an_applied_id_and_no_topics() -> None:
    desired = connector(topicsReset={"id": "t1"})
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    config.apply(b"connector-archive", json.dumps({"properties": connector_properties(desired)}).encode())
    for topic in ("orders", "payments"):
        record = topic_status_record(topic, "archive", 0, NOW)
        status.apply(record.key, record.value)
    before = build_live_state(config, status, ours, "g")
    assert before.active_topics == {"archive": ["orders", "payments"]}

    replays = {TopicRole.CONFIGS: config, TopicRole.STATUS: status, TopicRole.RECONCILER: ours}
    for record in plan_to_records(build_plan([desired], before), {"archive": desired}, before, now_ms=NOW):
        replays[record.topic_role].apply(record.key, record.value)
    after = build_live_state(config, status, ours, "g")
    assert after.active_topics == {}
    assert after.applied == {"archive": AppliedRequests(topics_reset=["t1"])}
    assert after.is_applied("archive", RequestKind.TOPICS_RESET, "t1")
    assert not after.is_applied("archive", RequestKind.RESTART, "t1")
    assert not build_plan([desired], after).has_changes  # a second apply of the same id does nothing


# --- saved plans -----------------------------------------------------------------------------------


def test_a_saved_plan_whose_topics_moved_is_stale() -> None:
    desired = connector(topicsReset={"id": "t1"})
    saved = build_plan([desired], live_with(desired, ["orders"]))
    same = build_plan([desired], live_with(desired, ["orders"]))
    moved = build_plan([desired], live_with(desired, ["orders", "payments"]))
    refuse_stale(saved, current=same, group_id="g")  # active topics are not in the live fingerprint...
    assert saved.live_fingerprint == moved.live_fingerprint
    with pytest.raises(StalePlan, match="active topics moved"):
        refuse_stale(saved, current=moved, group_id="g")  # ...but what a reset forgets must not have moved


def test_fingerprints_without_topics_resets_are_unchanged() -> None:
    # Saved plans made before topics resets existed stay valid: the applied ids of other kinds
    # are digested as they were.
    live = LiveState(applied={"a": AppliedRequests(restart=["r1"])})
    assert AppliedRequests(restart=["r1"]).fingerprint_doc() == {"restart": ["r1"], "offsets": []}
    with_reset = LiveState(applied={"a": AppliedRequests(restart=["r1"], topics_reset=["t1"])})
    assert live.fingerprint() != with_reset.fingerprint()
