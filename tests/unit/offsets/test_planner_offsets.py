"""Offsets requests (KIP-875): stop → snapshot → alter/reset → return → record, keyed by id."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.core.live import (
    AppliedRequests,
    ConnectTargetState,
    InstanceState,
    InstanceStatus,
    LiveConnector,
    LiveState,
)
from reconciler.core.models import ConnectorManifest, DesiredConnector, OffsetsAction, TargetState
from reconciler.core.normalize import connector_properties
from reconciler.core.plan import Action, ActionKind, OffsetsStepKind, PendingRequest, Plan
from reconciler.core.planner import build_plan

K = ActionKind
S = OffsetsStepKind
LIVE_TO_DECLARED = {
    ConnectTargetState.STARTED: TargetState.RUNNING,
    ConnectTargetState.PAUSED: TargetState.PAUSED,
    ConnectTargetState.STOPPED: TargetState.STOPPED,
}
ALTER = {
    "id": "o1",
    "action": "alter",
    "offsets": [
        {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1200}},
        {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None},
    ],
}


def sink(
    state: str = "running", offsets: dict[str, Any] | None = None, restart: dict[str, Any] | None = None, **config: Any
) -> DesiredConnector:
    spec: dict[str, Any] = {"class": "parquet-sink", "state": state, "config": {"topics": "orders", **config}}
    if offsets is not None:
        spec["offsets"] = offsets
    if restart is not None:
        spec["restart"] = restart
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": "s"}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def source(offsets: dict[str, Any]) -> DesiredConnector:
    doc = {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": "src"},
        "spec": {"class": "file-source", "config": {"path": "/in", "topic": "t"}, "offsets": offsets},
    }
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def live(
    desired: DesiredConnector, target: ConnectTargetState, task_count: int | None = None, **state: Any
) -> LiveState:
    connector = LiveConnector(
        name=desired.name,
        config=connector_properties(desired),
        target_state=target,
        task_count=task_count,
        connector_status=InstanceStatus(state=InstanceState.RUNNING),
    )
    return LiveState(connectors={desired.name: connector}, **state)


def offsets_action(plan: Plan) -> Action:
    (action,) = [a for a in plan.actions if a.kind is K.OFFSETS]
    return action


def step_kinds(action: Action) -> list[OffsetsStepKind]:
    return [s.kind for s in action.steps]


@pytest.mark.parametrize(
    ("live_target", "task_count", "declared", "steps"),
    [
        (ConnectTargetState.STARTED, 2, "running", [S.STOP, S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        (ConnectTargetState.PAUSED, 2, "running", [S.STOP, S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        (ConnectTargetState.PAUSED, 2, "paused", [S.STOP, S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        (ConnectTargetState.STOPPED, 0, "running", [S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        (ConnectTargetState.STOPPED, None, "paused", [S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        # STOPPED with committed tasks (a half-finished stop): stop again before changing offsets.
        (ConnectTargetState.STOPPED, 2, "running", [S.STOP, S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]),
        # declared stopped: no return step.
        (ConnectTargetState.STARTED, 2, "stopped", [S.STOP, S.SNAPSHOT, S.ALTER, S.RECORD]),
        (ConnectTargetState.STOPPED, 0, "stopped", [S.SNAPSHOT, S.ALTER, S.RECORD]),
    ],
)
def test_offsets_sequencing_folds_the_state_change(
    live_target: ConnectTargetState, task_count: int | None, declared: str, steps: list[OffsetsStepKind]
) -> None:
    desired = sink(declared, ALTER)
    plan = build_plan([desired], live(desired, live_target, task_count))
    assert [a.kind for a in plan.actions] == [K.OFFSETS]  # no separate pause/resume/stop
    action = plan.actions[0]
    assert step_kinds(action) == steps
    assert (action.from_state, action.to_state) == (LIVE_TO_DECLARED[live_target], TargetState(declared))
    assert (action.request_id, action.offsets_action, action.is_sink) == ("o1", OffsetsAction.ALTER, True)
    assert action.request_status == "pending"
    assert [e.partition["kafka_partition"] for e in action.offsets] == [0, 1]
    assert plan.summary().offsets == 1 and plan.summary().state == 0


@pytest.mark.parametrize("declared", ["running", "paused", "stopped"])
def test_absent_connector_is_created_stopped_then_returned(declared: str) -> None:
    plan = build_plan([sink(declared, ALTER)], LiveState())
    assert [a.kind for a in plan.actions] == [K.CREATE, K.OFFSETS]
    create, action = plan.actions
    assert create.to_state is TargetState.STOPPED  # KIP-980: offsets can be set before it first runs
    expected = [S.SNAPSHOT, S.ALTER] + ([S.RETURN] if declared != "stopped" else []) + [S.RECORD]
    assert step_kinds(action) == expected
    assert (action.from_state, action.to_state) == (TargetState.STOPPED, TargetState(declared))


def test_config_update_runs_before_the_offsets_sequence() -> None:
    desired = sink("running", ALTER, path="/new")
    current = LiveConnector(name="s", config={**connector_properties(desired), "path": "/old"})
    plan = build_plan([desired], LiveState(connectors={"s": current}))
    assert [a.kind for a in plan.actions] == [K.UPDATE_CONFIG, K.OFFSETS]


def test_applied_offsets_request_is_done_and_state_is_planned_plainly() -> None:
    desired = sink("paused", ALTER)
    state = live(desired, ConnectTargetState.STARTED, 2, applied={"s": AppliedRequests(offsets=["o1"])})
    plan = build_plan([desired], state)
    assert [a.kind for a in plan.actions] == [K.PAUSE]
    assert plan.requests_done == [PendingRequest(connector="s", kind="offsets", request_id="o1", status="applied")]


def test_applied_offsets_on_absent_connector_creates_in_declared_state() -> None:
    plan = build_plan([sink("running", ALTER)], LiveState(applied={"s": AppliedRequests(offsets=["o1"])}))
    assert [(a.kind, a.to_state) for a in plan.actions] == [(K.CREATE, TargetState.RUNNING)]


def test_in_progress_request_is_resumed() -> None:
    desired = sink("running", ALTER)
    # Interrupted after its stop step: STOPPED, zero tasks, id recorded as in progress.
    plan = build_plan([desired], live(desired, ConnectTargetState.STOPPED, 0, offsets_in_progress={"s": "o1"}))
    action = offsets_action(plan)
    assert action.request_status == "in-progress"
    assert "resuming" in action.reason
    assert step_kinds(action) == [S.SNAPSHOT, S.ALTER, S.RETURN, S.RECORD]
    assert "keep the offsets snapshot" in action.steps[0].description
    assert plan.diagnostics == []


@pytest.mark.parametrize(
    ("declared", "expect"), [(ALTER | {"id": "o2"}, "superseded by request o2"), (None, "no longer declared")]
)
def test_interrupted_request_not_declared_any_more_warns(declared: dict[str, Any] | None, expect: str) -> None:
    desired = sink("running", declared)
    plan = build_plan([desired], live(desired, ConnectTargetState.STOPPED, 0, offsets_in_progress={"s": "o1"}))
    (warning,) = plan.diagnostics
    assert expect in warning.summary and "o1" in warning.summary


def test_reset_sink_deletes_the_consumer_group() -> None:
    desired = sink("running", {"id": "r", "action": "reset"})
    action = offsets_action(build_plan([desired], live(desired, ConnectTargetState.STARTED, 1)))
    assert step_kinds(action) == [S.STOP, S.SNAPSHOT, S.RESET, S.RETURN, S.RECORD]
    assert "connect-s" in action.steps[2].description and action.offsets == []


def test_source_offsets_action_is_not_a_sink() -> None:
    request = {"id": "x", "action": "alter", "offsets": [{"partition": {"file": "a"}, "offset": {"line": 3}}]}
    desired = source(request)
    action = offsets_action(build_plan([desired], live(desired, ConnectTargetState.STARTED, 1)))
    assert action.is_sink is False
    assert "source offsets" in action.steps[1].description


@pytest.mark.parametrize(
    ("config", "warned"),
    [
        ({}, [1]),  # topics: orders; partition 1 names "other"
        ({"topics": "orders, other"}, []),
    ],
)
def test_sink_partition_on_unsubscribed_topic_warns(config: dict[str, str], warned: list[int]) -> None:
    request = {
        "id": "o1",
        "action": "alter",
        "offsets": [
            {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1}},
            {"partition": {"kafka_topic": "other", "kafka_partition": 0}, "offset": {"kafka_offset": 1}},
        ],
    }
    plan = build_plan([sink("running", request, **config)], LiveState())
    assert [d.field_path for d in plan.diagnostics] == [
        f"spec.offsets.offsets[{i}].partition.kafka_topic" for i in warned
    ]


def test_topics_regex_sink_is_not_checked() -> None:
    doc = {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": "rx"},
        "spec": {
            "class": "parquet-sink",
            "config": {"topics.regex": "orders.*"},
            "offsets": ALTER
            | {"offsets": [{"partition": {"kafka_topic": "other", "kafka_partition": 0}, "offset": None}]},
        },
    }
    plan = build_plan([DesiredConnector(manifest=ConnectorManifest.model_validate(doc))], LiveState())
    assert plan.diagnostics == []
    assert offsets_action(plan).is_sink is True


def test_offsets_and_restart_order() -> None:
    desired = sink("running", ALTER, restart={"id": "r"})
    plan = build_plan([desired], live(desired, ConnectTargetState.STARTED, 2))
    assert [a.kind for a in plan.actions] == [K.OFFSETS, K.RESTART]


def test_failed_connector_offsets_path_stops_it_without_a_warning() -> None:
    # Stopping a FAILED connector is allowed; resuming from STOPPED starts a fresh instance.
    desired = sink("running", ALTER)
    state = live(desired, ConnectTargetState.STARTED, 2)
    failed = state.connectors["s"].model_copy(update={"connector_status": InstanceStatus(state=InstanceState.FAILED)})
    plan = build_plan([desired], LiveState(connectors={"s": failed}))
    assert step_kinds(offsets_action(plan))[0] is S.STOP
    assert plan.diagnostics == []
