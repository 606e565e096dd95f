"""Plan → records: exactly the bytes Connect writes for each action (docs/state-machine.md#config-topic-state-machine)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.core.live import ConnectTargetState, LiveConnector, LiveState
from reconciler.core.models import ConnectorManifest, DesiredConnector, OffsetsAction, TargetState
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.kafka.formats.changes import pending_offsets, plan_to_records
from reconciler.kafka.formats.records import Record
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state

NOW = 1_700_000_000_000
FINGERPRINT = "3f2a9c0d1e2f3a4b5c6d7e8f90112233"
SRC_CONFIG = (
    b'{"properties":{"batch.size":"500","connector.class":"io.x.JdbcSource",'
    b'"name":"jdbc-src","table":"orders","tasks.max":"2"}}'
)


def desired(name: str = "jdbc-src", state: str = "running", **config: Any) -> DesiredConnector:
    manifest = ConnectorManifest.model_validate(
        {
            "apiVersion": "reconciler.io/v1",
            "kind": "Connector",
            "metadata": {"name": name},
            "spec": {
                "class": "io.x.JdbcSource",
                "tasksMax": 2,
                "state": state,
                # Declared out of order on purpose: the record is written sorted by key.
                "config": config or {"table": "orders", "batch.size": 500},
            },
        }
    )
    return DesiredConnector(manifest=manifest)


def records_for(*actions: Action, live: LiveState | None = None, **wanted: DesiredConnector) -> list[Record]:
    plan = Plan(actions=list(actions), desired_fingerprint=FINGERPRINT)
    wanted = wanted or {"jdbc-src": desired()}
    return plan_to_records(plan, wanted, live or LiveState(), now_ms=NOW)


def cfg(key: bytes, value: bytes | None) -> Record:
    return Record("configs", key, value)


OWNER = Record(
    "reconciler", b"owner/jdbc-src", b'{"owner":"connect-reconciler","created-by-plan":"3f2a9c0d1e2f3a4b"}'
)


def test_create_running_writes_the_config_and_ownership() -> None:
    action = Action(kind=ActionKind.CREATE, connector="jdbc-src", to_state=TargetState.RUNNING)
    assert records_for(action) == [cfg(b"connector-jdbc-src", SRC_CONFIG), OWNER]


def test_create_paused_writes_the_target_state_first() -> None:
    action = Action(kind=ActionKind.CREATE, connector="jdbc-src", to_state=TargetState.PAUSED)
    assert records_for(action, **{"jdbc-src": desired(state="paused")}) == [
        cfg(b"target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        cfg(b"connector-jdbc-src", SRC_CONFIG),
        OWNER,
    ]


def test_create_stopped_writes_the_target_state_first_and_no_commit() -> None:
    action = Action(kind=ActionKind.CREATE, connector="jdbc-src", to_state=TargetState.STOPPED)
    assert records_for(action, **{"jdbc-src": desired(state="stopped")}) == [
        cfg(b"target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
        cfg(b"connector-jdbc-src", SRC_CONFIG),
        OWNER,
    ]


def test_create_without_to_state_uses_the_manifest_state() -> None:
    action = Action(kind=ActionKind.CREATE, connector="jdbc-src")
    first = records_for(action, **{"jdbc-src": desired(state="stopped")})[0]
    assert first == cfg(b"target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"STOPPED"}')


def test_create_running_over_a_leftover_target_state_resets_it() -> None:
    leftover = LiveState(
        connectors={"jdbc-src": LiveConnector(name="jdbc-src", target_state=ConnectTargetState.PAUSED)}
    )
    action = Action(kind=ActionKind.CREATE, connector="jdbc-src", to_state=TargetState.RUNNING)
    assert records_for(action, live=leftover)[:2] == [
        cfg(b"target-state-jdbc-src", b'{"state":"STARTED","state.v2":"STARTED"}'),
        cfg(b"connector-jdbc-src", SRC_CONFIG),
    ]


def test_update_writes_the_whole_config() -> None:
    action = Action(kind=ActionKind.UPDATE_CONFIG, connector="jdbc-src")
    assert records_for(action) == [cfg(b"connector-jdbc-src", SRC_CONFIG)]


def test_config_bytes_do_not_depend_on_manifest_key_order() -> None:
    action = Action(kind=ActionKind.UPDATE_CONFIG, connector="jdbc-src")
    one = records_for(action, **{"jdbc-src": desired(a="1", b="2")})
    other = records_for(action, **{"jdbc-src": desired(b="2", a="1")})
    assert one == other


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (ActionKind.PAUSE, b'{"state":"PAUSED","state.v2":"PAUSED"}'),
        (ActionKind.RESUME, b'{"state":"STARTED","state.v2":"STARTED"}'),
    ],
)
def test_pause_and_resume_write_one_target_state(kind: ActionKind, value: bytes) -> None:
    assert records_for(Action(kind=kind, connector="jdbc-src")) == [cfg(b"target-state-jdbc-src", value)]


def test_stop_writes_a_zero_task_commit_then_stopped() -> None:
    assert records_for(Action(kind=ActionKind.STOP, connector="jdbc-src")) == [
        cfg(b"commit-jdbc-src", b'{"tasks":0}'),
        cfg(b"target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"STOPPED"}'),
    ]


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "value"),
    [
        (True, True, b'{"include-tasks":true,"only-failed":true}'),
        (True, False, b'{"include-tasks":true,"only-failed":false}'),
        (False, True, b'{"include-tasks":false,"only-failed":true}'),
        (False, False, b'{"include-tasks":false,"only-failed":false}'),
    ],
)
def test_restart_writes_the_request_and_marks_its_id_applied(
    include_tasks: bool, only_failed: bool, value: bytes
) -> None:
    action = Action(
        kind=ActionKind.RESTART,
        connector="jdbc-src",
        request_id="2026-11-22/r1",
        include_tasks=include_tasks,
        only_failed=only_failed,
    )
    assert records_for(action) == [
        cfg(b"restart-connector-jdbc-src", value),
        Record("reconciler", b"applied/restart/jdbc-src/2026-11-22/r1", b'{"applied-at":1700000000000}'),
    ]


def test_restart_without_an_id_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="request id"):
        records_for(Action(kind=ActionKind.RESTART, connector="jdbc-src"))


def test_delete_writes_tombstones_connector_then_target_state_and_drops_ownership() -> None:
    # Deletes need no manifest (the connector is an orphan).
    plan = Plan(actions=[Action(kind=ActionKind.DELETE, connector="old-src")])
    assert plan_to_records(plan, {}, LiveState(), now_ms=NOW) == [
        cfg(b"connector-old-src", None),
        cfg(b"target-state-old-src", None),
        Record("reconciler", b"owner/old-src", None),
    ]


def test_offsets_actions_write_nothing_and_stay_pending() -> None:
    offsets = Action(
        kind=ActionKind.OFFSETS, connector="jdbc-src", request_id="o1", offsets_action=OffsetsAction.RESET
    )
    pause = Action(kind=ActionKind.PAUSE, connector="jdbc-src")
    plan = Plan(actions=[offsets, pause])
    records = plan_to_records(plan, {"jdbc-src": desired()}, LiveState(), now_ms=NOW)
    assert records == [cfg(b"target-state-jdbc-src", b'{"state":"PAUSED","state.v2":"PAUSED"}')]
    assert not any(r.key.startswith(b"applied/offsets/") for r in records)
    assert pending_offsets(plan) == [offsets]


def test_records_follow_plan_order_with_removals_first() -> None:
    # Removals first: a record of another connector before a removal can make Java's herder skip
    # the rebalance that cleans the removed connector's statuses (docs/compatibility.md#removals-first).
    plan = Plan(
        actions=[
            Action(kind=ActionKind.CREATE, connector="b-new", to_state=TargetState.RUNNING),
            Action(kind=ActionKind.STOP, connector="jdbc-src"),
            Action(kind=ActionKind.DELETE, connector="z-old"),
            Action(kind=ActionKind.DELETE, connector="y-old"),
        ]
    )
    records = plan_to_records(
        plan, {"b-new": desired("b-new"), "jdbc-src": desired()}, LiveState(), now_ms=NOW
    )
    assert [r.key for r in records] == [
        b"connector-z-old",
        b"target-state-z-old",
        b"owner/z-old",
        b"connector-y-old",
        b"target-state-y-old",
        b"owner/y-old",
        b"connector-b-new",
        b"owner/b-new",
        b"commit-jdbc-src",
        b"target-state-jdbc-src",
    ]


def test_a_changed_connector_missing_from_the_manifests_is_refused() -> None:
    with pytest.raises(ValueError, match="no manifest"):
        records_for(Action(kind=ActionKind.UPDATE_CONFIG, connector="unknown"))


def test_reading_back_what_we_wrote_gives_the_declared_state() -> None:
    """Our records through Connect's own state machine: create stopped, then delete another."""
    plan = Plan(
        actions=[
            Action(kind=ActionKind.CREATE, connector="jdbc-src", to_state=TargetState.STOPPED),
            Action(kind=ActionKind.CREATE, connector="tmp", to_state=TargetState.PAUSED),
            Action(kind=ActionKind.DELETE, connector="tmp"),
        ],
        desired_fingerprint=FINGERPRINT,
    )
    wanted = {"jdbc-src": desired(state="stopped"), "tmp": desired("tmp", state="paused")}
    config, ours = ConfigReplay(), ReconcilerReplay()
    for record in plan_to_records(plan, wanted, LiveState(), now_ms=NOW):
        (config if record.topic_role == "configs" else ours).apply(record.key, record.value)
    live = build_live_state(config, StatusReplay(), ours, "g")
    assert list(live.connectors) == ["jdbc-src"]
    assert live.connectors["jdbc-src"].target_state is ConnectTargetState.STOPPED
    assert live.connectors["jdbc-src"].config == {
        "batch.size": "500",
        "connector.class": "io.x.JdbcSource",
        "name": "jdbc-src",
        "table": "orders",
        "tasks.max": "2",
    }
    assert live.owned == ["jdbc-src"]


def sensitive(name: str, keys: bytes | None) -> Record:
    return Record("reconciler", b"sensitive/" + name.encode(), keys)


def test_sensitive_keys_are_recorded_when_they_differ_and_tombstoned_with_a_delete() -> None:
    """`status` and `snapshot` have no manifests: what the manifests made sensitive (spec.sensitive,
    keys from placeholders) is written to our topic, in the apply's transaction, only on change."""
    base = desired(table="orders")
    secretive = base.model_copy(update={"interpolated": frozenset({"table"})})
    assert records_for(**{"jdbc-src": secretive}) == [sensitive("jdbc-src", b'{"keys":["table"]}')]
    recorded = LiveState(sensitive={"jdbc-src": ["table"]})
    assert records_for(live=recorded, **{"jdbc-src": secretive}) == []  # unchanged: nothing written
    assert records_for(live=recorded, **{"jdbc-src": base}) == [sensitive("jdbc-src", None)]
    delete = Action(kind=ActionKind.DELETE, connector="gone")
    gone = LiveState(sensitive={"gone": ["x"]})
    records = records_for(delete, live=gone, **{"jdbc-src": base})
    assert records[0] == sensitive("gone", None)
