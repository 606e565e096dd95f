"""Putting back what a Connect worker took from aborted records (core.restore, kafka.io.uncommitted).

The replays are fed byte records, as read from the config topic: `committed` what a
read_committed reader holds, `everything` what a worker reading uncommitted records holds.
"""

from __future__ import annotations

from typing import Any

from reconciler.core.live import ConnectTargetState, LiveConnector, LiveState, UncommittedView
from reconciler.core.models import ConnectorManifest, DesiredConnector, TargetState
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.core.planner import build_plan
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.changes import plan_to_records
from reconciler.kafka.replay import ConfigReplay
from reconciler.kafka.io.uncommitted import uncommitted_views
from reconciler.render import render_markdown, render_text

STARTED, PAUSED, STOPPED = ConnectTargetState.STARTED, ConnectTargetState.PAUSED, ConnectTargetState.STOPPED
CONFIG = {"connector.class": "FileStreamSource", "file": "/in.txt", "name": "a", "tasks.max": "1", "topic": "t"}
NEW = {**CONFIG, "batch.size": "7"}


def replay(*records: rec.Record) -> ConfigReplay:
    out = ConfigReplay()
    for offset, record in enumerate(records):
        out.apply(record.key, record.value, offset)
    return out


def manifest(name: str = "a", state: str = "running", **config: Any) -> DesiredConnector:
    spec = {"class": "FileStreamSource", "state": state, "config": config or {"file": "/in.txt", "topic": "t"}}
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def live(views: dict[str, UncommittedView], *connectors: LiveConnector) -> LiveState:
    return LiveState(connectors={c.name: c for c in connectors}, uncommitted=views)


RUNNING_A = LiveConnector(name="a", config=CONFIG, task_count=1)


def test_only_connectors_that_differ_get_a_view() -> None:
    created = [rec.connector_config_record("a", CONFIG), rec.commit_record("a", 1)]
    committed = replay(*created, rec.connector_config_record("b", CONFIG))
    # Aborted: a paused and reconfigured, its tasks set to none; d created stopped.
    aborted = [rec.target_state_record("a", PAUSED), rec.commit_record("a", 0), rec.connector_config_record("a", NEW),
               rec.target_state_record("d", STOPPED), rec.connector_config_record("d", CONFIG)]
    everything = replay(*created, *aborted, rec.connector_config_record("b", CONFIG))
    assert uncommitted_views(committed, everything) == {
        "a": UncommittedView(config=NEW, target_state=PAUSED, task_count=0, committed_target_state=STARTED),
        "d": UncommittedView(config=CONFIG, target_state=STOPPED),
    }
    assert uncommitted_views(committed, replay(*created, rec.connector_config_record("b", CONFIG))) == {}


def test_a_worker_holding_a_connector_never_created_gets_its_records_tombstoned() -> None:
    view = UncommittedView(config=CONFIG, target_state=STOPPED)
    plan = build_plan([], live({"d": view}))
    [restore] = plan.actions
    assert (restore.kind, restore.restore, restore.from_state, restore.to_state) == (
        ActionKind.RESTORE, ["target-state", "config"], TargetState.STOPPED, None)
    assert [c.op for c in restore.changes] == ["remove"] * len(CONFIG)
    assert plan_to_records(plan, {}, live({"d": view}), now_ms=0) == [
        rec.connector_tombstone("d"), rec.target_state_tombstone("d")]  # the order of a delete


def test_a_committed_connector_gets_its_state_as_a_record_then_its_config() -> None:
    """Java does not tell its worker when a target state is tombstoned: a record is written."""
    view = UncommittedView(config=NEW, target_state=PAUSED, task_count=1, committed_target_state=None)
    state = live({"a": view}, RUNNING_A)
    plan = build_plan([manifest()], state)
    [restore] = plan.actions
    assert restore.restore == ["target-state", "config"]
    assert [(c.op, c.key, c.old, c.new) for c in restore.changes] == [("remove", "batch.size", "7", None)]
    assert plan_to_records(plan, {"a": manifest()}, state, now_ms=0) == [
        rec.target_state_record("a", STARTED), rec.connector_config_record("a", CONFIG)]


def test_records_the_plan_writes_anyway_are_not_restored() -> None:
    """Declared paused with the new config: the plan's own pause and update cover both."""
    view = UncommittedView(config=NEW, target_state=PAUSED, task_count=1)
    desired = manifest(state="paused", file="/in.txt", topic="t", **{"batch.size": "7"})
    plan = build_plan([desired], live({"a": view}, RUNNING_A))
    assert [a.kind for a in plan.actions] == [ActionKind.PAUSE, ActionKind.UPDATE_CONFIG]


def test_a_running_connector_left_without_tasks_gets_its_config_again() -> None:
    """An aborted zero-task commit (a stop cut short): Java generates tasks only on a restart."""
    view = UncommittedView(config=CONFIG, target_state=STARTED, task_count=0, committed_target_state=STARTED)
    state = live({"a": view}, RUNNING_A)
    [restore] = build_plan([manifest()], state).actions
    assert restore.restore == ["config"] and restore.changes == []
    stopping = build_plan([manifest(state="stopped")], state)  # stopped anyway: no tasks wanted
    assert [a.kind for a in stopping.actions] == [ActionKind.STOP]


def test_a_restore_goes_first_and_is_shown() -> None:
    view = UncommittedView(config=CONFIG, target_state=STOPPED)
    plan = build_plan([manifest("b")], live({"d": view}))
    assert [(a.kind, a.connector) for a in plan.actions] == [(ActionKind.RESTORE, "d"), (ActionKind.CREATE, "b")]
    text = render_text(plan)
    assert 'connector "d" will get its committed target-state and config back' in text
    assert "~ state (held uncommitted): stopped -> none" in text
    assert "read uncommitted, then aborted" in text
    assert "| `d` | restore | committed target-state and config written back |" in render_markdown(plan)
    assert plan.summary().update == 1


def test_the_fingerprint_covers_what_is_held_uncommitted() -> None:
    view = UncommittedView(config=CONFIG, target_state=STOPPED)
    assert live({}).fingerprint() == LiveState().fingerprint()  # unchanged for every saved plan
    assert live({"d": view}).fingerprint() != live({}).fingerprint()


def test_plan_json_round_trips_a_restore() -> None:
    from reconciler.render.json import load_plan_json, render_json

    plan = build_plan([], live({"d": UncommittedView(config=CONFIG, target_state=STOPPED)}))
    assert load_plan_json(render_json(plan)) == plan
    assert Plan.model_validate(plan.model_dump(mode="json")).actions[0] == Action.model_validate(
        plan.actions[0].model_dump(mode="json"))
