"""The plan engine: pairing, create/update/state/restart/prune, ordering, fingerprints."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.core.diagnostics import Severity
from reconciler.core.live import (
    AppliedRequests,
    ConnectTargetState,
    InstanceState,
    InstanceStatus,
    LiveConnector,
    LiveState,
)
from reconciler.core.models import ConnectorManifest, DesiredConnector, TargetState
from reconciler.core.normalize import connector_properties, to_connect_state
from reconciler.core.plan import Action, ActionKind, PendingRequest, Plan
from reconciler.core.planner import build_plan, desired_fingerprint

K = ActionKind


def connector(name: str, **spec: Any) -> DesiredConnector:
    spec.setdefault("class", "datagen")
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def live_of(
    desired: DesiredConnector,
    *,
    target: ConnectTargetState | None = None,
    status: InstanceState = InstanceState.RUNNING,
    tasks: dict[int, InstanceState] | None = None,
    task_count: int | None = None,
) -> LiveConnector:
    """The live connector a Connect worker would hold for `desired` (same config, same state)."""
    return LiveConnector(
        name=desired.name,
        config=connector_properties(desired),
        target_state=target or to_connect_state(desired.spec.state),
        task_count=task_count,
        connector_status=InstanceStatus(state=status),
        task_statuses={t: InstanceStatus(state=s) for t, s in (tasks or {}).items()},
    )


def state_of(*connectors: LiveConnector, **kwargs: Any) -> LiveState:
    return LiveState(connectors={c.name: c for c in connectors}, **kwargs)


def kinds(plan: Plan, name: str | None = None) -> list[ActionKind]:
    return [a.kind for a in plan.actions if name is None or a.connector == name]


def only(plan: Plan, kind: ActionKind) -> Action:
    (action,) = [a for a in plan.actions if a.kind is kind]
    return action


# --- create ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", list(TargetState))
def test_create_directly_in_declared_state(state: TargetState) -> None:
    plan = build_plan([connector("a", state=state.value, tasksMax=3, config={"topic": "t"})], LiveState())
    assert kinds(plan) == [K.CREATE]  # never a separate pause/resume/stop for a new connector
    create = plan.actions[0]
    assert (create.to_state, create.tasks_max, create.connector_class) == (state, 3, "datagen")
    assert [(c.op, c.key, c.new) for c in create.changes] == [
        ("add", "connector.class", "datagen"),
        ("add", "name", "a"),
        ("add", "tasks.max", "3"),
        ("add", "topic", "t"),
    ]


def test_live_without_config_is_created() -> None:
    # A target-state record can precede the config (KIP-980) or outlive a crashed create.
    live = state_of(LiveConnector(name="a", target_state=ConnectTargetState.PAUSED))
    plan = build_plan([connector("a")], live)
    assert kinds(plan) == [K.CREATE]
    assert plan.actions[0].to_state is TargetState.RUNNING
    assert plan.unmanaged == [] and plan.orphans == []


# --- update and normalisation ---------------------------------------------------------------------


def test_snapshot_equal_to_manifests_has_no_changes() -> None:
    desired = [connector("a", config={"n": 5, "flag": True}), connector("b", state="paused", tasksMax=2)]
    plan = build_plan(desired, state_of(*(live_of(d) for d in desired)))
    assert not plan.has_changes and plan.diagnostics == []
    assert plan.summary().total == 0


def test_connect_written_config_with_string_values_and_omitted_keys_is_equal() -> None:
    desired = connector("a", config={"batch.size": 500, "enabled": True, "ratio": 0.5, "topic": "orders"})
    written = {"connector.class": "datagen", "batch.size": "500", "enabled": "true", "ratio": "0.5", "topic": "orders "}
    plan = build_plan([desired], state_of(LiveConnector(name="a", config=written)))
    assert not plan.has_changes


def test_update_config_is_field_level() -> None:
    desired = connector("a", tasksMax=2, config={"batch.size": "500", "new.field": "v"})
    live = live_of(connector("a", config={"batch.size": "100", "old.field": "x"}))
    update = only(build_plan([desired], state_of(live)), K.UPDATE_CONFIG)
    assert [(c.op, c.key, c.old, c.new) for c in update.changes] == [
        ("change", "batch.size", "100", "500"),
        ("add", "new.field", None, "v"),
        ("remove", "old.field", "x", None),
        ("change", "tasks.max", "1", "2"),
    ]


# --- state: every transition among running/paused/stopped/failed, through the engine -------------

STATES = list(TargetState)
LIVE_STATES = list(ConnectTargetState)
EXPECTED_ACTION = {
    TargetState.RUNNING: K.RESUME,
    TargetState.PAUSED: K.PAUSE,
    TargetState.STOPPED: K.STOP,
}
LIVE_AS_DECLARED = {
    ConnectTargetState.STARTED: TargetState.RUNNING,
    ConnectTargetState.PAUSED: TargetState.PAUSED,
    ConnectTargetState.STOPPED: TargetState.STOPPED,
}


def _expects_failed_warning(desired: TargetState, live: ConnectTargetState) -> bool:
    """The rule under test, stated independently of the implementation."""
    return live is not ConnectTargetState.STOPPED and desired is not TargetState.STOPPED and not (
        desired is TargetState.PAUSED and live is ConnectTargetState.PAUSED
    )


@pytest.mark.parametrize("failed", [False, True], ids=["healthy", "FAILED"])
@pytest.mark.parametrize("live_state", LIVE_STATES, ids=[s.value for s in LIVE_STATES])
@pytest.mark.parametrize("desired_state", STATES, ids=[f"want-{s.value}" for s in STATES])
def test_every_state_transition(desired_state: TargetState, live_state: ConnectTargetState, failed: bool) -> None:
    desired = connector("a", state=desired_state.value)
    status = InstanceState.FAILED if failed else InstanceState.RUNNING
    plan = build_plan([desired], state_of(live_of(desired, target=live_state, status=status)))
    if LIVE_AS_DECLARED[live_state] is desired_state:
        assert kinds(plan) == []
    else:
        (action,) = plan.actions
        assert action.kind is EXPECTED_ACTION[desired_state]
        assert (action.from_state, action.to_state) == (LIVE_AS_DECLARED[live_state], desired_state)
    warnings = [d for d in plan.diagnostics if d.severity is Severity.WARNING]
    if failed and _expects_failed_warning(desired_state, live_state):
        (warning,) = warnings
        assert "FAILED" in warning.summary and warning.hint and "spec.restart" in warning.hint
    else:
        assert warnings == []


def test_failed_connector_with_pending_restart_gets_a_reason_not_a_warning() -> None:
    desired = connector("a", state="paused", restart={"id": "r1", "onlyFailed": True})
    plan = build_plan([desired], state_of(live_of(desired, target=ConnectTargetState.STARTED, status=InstanceState.FAILED)))
    assert kinds(plan) == [K.PAUSE, K.RESTART]
    assert plan.diagnostics == []
    assert "restart in this plan" in only(plan, K.PAUSE).reason


def test_failed_connector_with_applied_restart_still_warns() -> None:
    desired = connector("a", state="paused", restart={"id": "r1"})
    live = state_of(
        live_of(desired, target=ConnectTargetState.STARTED, status=InstanceState.FAILED),
        applied={"a": AppliedRequests(restart=["r1"])},
    )
    plan = build_plan([desired], live)
    assert kinds(plan) == [K.PAUSE]
    assert len(plan.diagnostics) == 1


# --- restart requests -----------------------------------------------------------------------------


def test_restart_pending_is_planned_with_its_flags() -> None:
    desired = connector("a", restart={"id": "r1", "includeTasks": True, "onlyFailed": True})
    live = live_of(desired, tasks={0: InstanceState.RUNNING, 1: InstanceState.FAILED})
    restart = only(build_plan([desired], state_of(live)), K.RESTART)
    assert (restart.request_id, restart.include_tasks, restart.only_failed) == ("r1", True, True)
    assert restart.request_status == "pending"
    assert "task(s) 1" in restart.reason and "the connector" not in restart.reason


def test_restart_applied_is_done_not_replanned() -> None:
    desired = connector("a", restart={"id": "r1"})
    live = state_of(live_of(desired), applied={"a": AppliedRequests(restart=["r1"])})
    plan = build_plan([desired], live)
    assert not plan.has_changes
    assert plan.requests_done == [PendingRequest(connector="a", kind="restart", request_id="r1", status="applied")]


def test_new_restart_id_is_a_new_request() -> None:
    desired = connector("a", restart={"id": "r2"})
    live = state_of(live_of(desired), applied={"a": AppliedRequests(restart=["r1"])})
    assert kinds(build_plan([desired], live)) == [K.RESTART]


def test_restart_of_a_connector_created_in_the_same_plan_comes_after_the_create() -> None:
    plan = build_plan([connector("a", restart={"id": "r1"})], LiveState())
    assert kinds(plan) == [K.CREATE, K.RESTART]
    assert "nothing to restart" in plan.actions[1].reason


def test_restart_without_status_record_says_connect_skips_it() -> None:
    desired = connector("a", restart={"id": "r1"})
    live = LiveConnector(name="a", config=connector_properties(desired))
    assert "skips" in only(build_plan([desired], state_of(live)), K.RESTART).reason


# --- orphans and prune ----------------------------------------------------------------------------


def _orphan_state(owned: list[str]) -> LiveState:
    keep = connector("keep")
    return state_of(
        live_of(keep),
        live_of(connector("ours", config={"db.password": "pw"})),
        live_of(connector("theirs")),
        LiveConnector(name="ghost", target_state=ConnectTargetState.PAUSED),  # no config: not a connector
        owned=owned,
    )


@pytest.mark.parametrize(
    ("prune", "owned", "deleted", "orphans", "unmanaged"),
    [
        (False, ["ours"], [], ["ours"], ["theirs"]),
        (True, ["ours"], ["ours"], [], ["theirs"]),
        (True, [], [], [], ["ours", "theirs"]),  # never delete what we did not create
        (False, [], [], [], ["ours", "theirs"]),
        (True, ["ours", "theirs", "keep"], ["ours", "theirs"], [], []),
    ],
)
def test_prune_only_owned_and_only_when_asked(
    prune: bool, owned: list[str], deleted: list[str], orphans: list[str], unmanaged: list[str]
) -> None:
    plan = build_plan([connector("keep")], _orphan_state(owned), PlanOptions(prune=prune))
    assert [a.connector for a in plan.actions if a.kind is K.DELETE] == deleted
    assert kinds(plan) == [K.DELETE] * len(deleted)
    assert (plan.orphans, plan.unmanaged, plan.prune) == (orphans, unmanaged, prune)


def test_delete_lists_removed_fields_masked() -> None:
    plan = build_plan([], _orphan_state(["ours"]), PlanOptions(prune=True, allow_empty=True))
    delete = only(plan, K.DELETE)
    assert delete.from_state is TargetState.RUNNING
    assert ("db.password", "(sensitive)") in [(c.key, c.old) for c in delete.changes]
    assert "pw" not in plan.model_dump_json()


def test_prune_with_no_manifests_is_refused_unless_allowed() -> None:
    """Argo CD's allowEmpty: an empty manifest set must not silently delete everything we own."""
    live = _orphan_state(["ours", "keep"])
    refused = build_plan([], live, PlanOptions(prune=True))
    assert kinds(refused) == []
    assert refused.orphans == ["keep", "ours"]  # still listed, not deleted
    (error,) = refused.diagnostics
    assert error.severity is Severity.ERROR
    assert "--prune with no manifests would delete all 2 connector(s)" in error.summary
    assert "keep, ours" in error.summary and "--allow-empty" in (error.hint or "")
    allowed = build_plan([], live, PlanOptions(prune=True, allow_empty=True))
    assert kinds(allowed) == [K.DELETE, K.DELETE] and not allowed.diagnostics and allowed.allow_empty
    # One manifest left is not "empty": the others are pruned as before; no prune, no error.
    assert kinds(build_plan([connector("keep")], live, PlanOptions(prune=True))) == [K.DELETE]
    assert build_plan([], live).diagnostics == []


def test_a_key_that_was_sensitive_when_written_stays_masked_in_the_diff() -> None:
    """The live value was written while `spec.sensitive` (or a placeholder) covered the key;
    the manifest no longer says so: the old value must still not be shown."""
    live = state_of(live_of(connector("a", config={"conn": "old-hidden-value"})), sensitive={"a": ["conn"]})
    plan = build_plan([connector("a", config={"conn": "new-plain-value"})], live)
    (change,) = only(plan, K.UPDATE_CONFIG).changes
    assert (change.old, change.new, change.sensitive) == ("(sensitive)", "(sensitive)", True)


def test_credentials_inside_values_are_masked_and_a_changed_one_shows_as_changed() -> None:
    live = state_of(live_of(connector("a", config={"uri": "mongodb://u:old-pw@h/db", "jdbc": "jdbc:x://h/d?password=a1"})))
    plan = build_plan(
        [connector("a", config={"uri": "mongodb://u:new-pw@h/db", "jdbc": "jdbc:x://h2/d?password=a1"})], live
    )
    changes = {c.key: c for c in only(plan, K.UPDATE_CONFIG).changes}
    assert (changes["uri"].old, changes["uri"].new, changes["uri"].sensitive) == ("(sensitive)", "(sensitive)", True)
    assert (changes["jdbc"].old, changes["jdbc"].new) == ("jdbc:x://h/d?password=****", "jdbc:x://h2/d?password=****")
    assert "old-pw" not in plan.model_dump_json() and "new-pw" not in plan.model_dump_json()


# --- ordering and determinism ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("paused", [K.PAUSE, K.UPDATE_CONFIG]),  # paused before it restarts with the new config
        ("stopped", [K.STOP, K.UPDATE_CONFIG]),
    ],
)
def test_a_connector_is_suspended_before_its_new_config(declared: str, expected: list[ActionKind]) -> None:
    """A Connect worker reading uncommitted records acts on every prefix of the records."""
    plan = build_plan([connector("c", state=declared, config={"k": "2"})], state_of(live_of(connector("c", config={"k": "1"}))))
    assert kinds(plan) == expected


def test_a_connector_is_resumed_after_its_new_config() -> None:
    live = state_of(live_of(connector("c", config={"k": "1"}), target=ConnectTargetState.PAUSED))
    assert kinds(build_plan([connector("c", config={"k": "2"})], live)) == [K.UPDATE_CONFIG, K.RESUME]


def test_actions_are_ordered_by_phase_then_name() -> None:
    """Suspending before a config update, resuming after it: every prefix of the records is safe."""
    desired = [
        connector("z-new"),
        connector("a-new"),
        connector("m-update", config={"k": "2"}),
        connector("b-stop", state="stopped"),
        connector("c-offsets", offsets={"id": "o1", "action": "reset"}),
        connector("d-pause", state="paused"),
        connector("e-resume"),
        connector("f-restart", restart={"id": "r1"}),
    ]
    live = state_of(
        live_of(connector("m-update", config={"k": "1"})),
        live_of(connector("b-stop")),
        live_of(connector("c-offsets")),
        live_of(connector("d-pause")),
        live_of(connector("e-resume"), target=ConnectTargetState.PAUSED),
        live_of(connector("f-restart")),
        live_of(connector("y-orphan")),
        owned=["y-orphan"],
    )
    plan = build_plan(desired, live, PlanOptions(prune=True))
    assert [(a.kind, a.connector) for a in plan.actions] == [
        (K.CREATE, "a-new"),
        (K.CREATE, "z-new"),
        (K.STOP, "b-stop"),
        (K.PAUSE, "d-pause"),
        (K.UPDATE_CONFIG, "m-update"),
        (K.OFFSETS, "c-offsets"),
        (K.RESUME, "e-resume"),
        (K.RESTART, "f-restart"),
        (K.DELETE, "y-orphan"),
    ]


def test_plan_does_not_depend_on_manifest_order() -> None:
    desired = [connector(f"c{i}", config={"i": i}, restart={"id": f"r{i}"}) for i in range(20)]
    first = build_plan(desired, LiveState())
    shuffled = list(desired)
    random.Random(7).shuffle(shuffled)
    assert build_plan(shuffled, LiveState()) == first


def test_duplicate_names_are_a_programming_error() -> None:
    with pytest.raises(ValueError, match="declared twice"):
        build_plan([connector("a"), connector("a")], LiveState())


# --- fingerprints and metadata --------------------------------------------------------------------


def test_plan_metadata_and_fingerprints() -> None:
    desired = [connector("a", config={"db.password": "one"})]
    live = LiveState(group_id="prod")
    plan = build_plan(desired, live, PlanOptions(manifest_paths=("manifests/",)))
    assert (plan.group_id, plan.manifest_paths, plan.format_version) == ("prod", ["manifests/"], "2")
    assert plan.live_fingerprint == live.fingerprint()
    assert plan.desired_fingerprint == desired_fingerprint(desired)
    # A changed secret changes the digest (it must make a saved plan stale) without being shown.
    other = desired_fingerprint([connector("a", config={"db.password": "two"})])
    assert other != plan.desired_fingerprint
    assert desired_fingerprint([connector("a", config={"db.password": "one"}, state="paused")]) != other


def test_a_plan_only_shown_skips_the_fingerprints_and_nothing_else() -> None:
    desired = [connector("a", config={"x": 1}), connector("b", state="paused")]
    live = LiveState(group_id="prod", connectors={"a": LiveConnector(name="a", config={"x": "2"})})
    full = build_plan(desired, live)
    shown = build_plan(desired, live, fingerprints=False)
    assert (shown.desired_fingerprint, shown.live_fingerprint) == ("", "")
    assert full.desired_fingerprint and full.live_fingerprint
    assert shown.model_copy(update={"desired_fingerprint": full.desired_fingerprint,
                                    "live_fingerprint": full.live_fingerprint}) == full


# --- scale ----------------------------------------------------------------------------------------


def test_ten_thousand_connectors_with_one_percent_drift_plan_quickly() -> None:
    desired = [connector(f"conn-{i:05d}", tasksMax=2, config={"topic": f"t{i}", "batch.size": 100}) for i in range(10_000)]
    live_connectors = []
    for i, d in enumerate(desired):
        config = connector_properties(d)
        if i % 100 == 0:
            config["batch.size"] = "200"
        live_connectors.append(LiveConnector(name=d.name, config=config))
    live = state_of(*live_connectors)
    started = time.perf_counter()
    plan = build_plan(desired, live)
    elapsed = time.perf_counter() - started
    assert plan.summary().update == 100
    # The product budget is well under 1 s; the bound here only catches a quadratic regression.
    assert elapsed < 3.0, f"plan of 10k connectors took {elapsed:.2f}s"


def test_a_literal_secret_in_the_topic_where_the_manifest_has_a_placeholder_is_named() -> None:
    """Migration from a version that wrote resolved `${env:…}` values (docs/secrets.md#migration):
    one warning naming the connector and the keys, never the value; the update is masked."""
    desired = connector("a", config={"topic": "t", "db.password": "${env:DB_PW}", "path": "${file:/s:p}", "n": "${env:N}"})
    desired = desired.model_copy(update={"interpolated": frozenset({"db.password", "path", "n"})})
    live = live_of(desired)
    assert live.config is not None
    stored = {**live.config, "db.password": "literal-s3cret", "path": "/resolved/path"}
    task = {"task.index": "0", "n": "7", "path": "${file:/s:p}"}
    plan = build_plan([desired], state_of(live.model_copy(update={"config": stored, "task_configs": [task]})))
    (warning,) = [d for d in plan.diagnostics if "literal" in d.summary]
    assert warning.severity is Severity.WARNING and warning.connector == "a"
    assert warning.summary == "the config topic holds a literal value where the manifest has a placeholder: `db.password`, `n`, `path`"
    (update,) = [a for a in plan.actions if a.kind is ActionKind.UPDATE_CONFIG]
    rendered = plan.model_dump_json()
    assert "literal-s3cret" not in rendered and "/resolved/path" not in rendered
    assert {c.key for c in update.changes} == {"db.password", "path"}
    assert not [d for d in build_plan([desired], state_of(live)).diagnostics if "literal" in d.summary]
