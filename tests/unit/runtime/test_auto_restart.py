"""`spec.autoRestart`: Strimzi's back-off and reset rules, the history record, and what a tick restarts."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reconciler.core.live import AutoRestartStatus, InstanceState, InstanceStatus, LiveConnector, LiveState
from reconciler.core.models import ConnectorManifest, DesiredConnector
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay import ReconcilerReplay
from reconciler.runtime.batch.auto_restart import (
    AutoRestartDecision,
    AutoRestartPolicy,
    backoff_units,
    decide,
    policies,
    tick_auto_restarts,
    unit_ms,
)
from reconciler.runtime.batch.restarts import RestartPlan

U = 1000  # one back-off unit, in ms
T0 = 1_700_000_000_000
UNLIMITED = AutoRestartPolicy()


def history(count: int, last: int = T0, upcoming: int | None = None) -> AutoRestartStatus:
    return AutoRestartStatus(count=count, last_restart_ms=last, next_restart_ms=upcoming)


def test_backoff_is_strimzis_n_squared_plus_n_minutes_capped_at_60() -> None:
    assert [backoff_units(n) for n in range(11)] == [0, 2, 6, 12, 20, 30, 42, 56, 60, 60, 60]


def test_a_first_failure_is_restarted_at_once() -> None:
    decision = decide(UNLIMITED, None, failing=True, now_ms=T0, unit_ms=U)
    assert decision == AutoRestartDecision(True, history(1, T0, T0 + 2 * U))


@pytest.mark.parametrize(
    ("count", "waited", "due"),
    [
        (1, 2 * U - 1, False),  # whole units only, truncated: 1.999 units is 1
        (1, 2 * U, True),
        (2, 6 * U - 1, False),
        (2, 6 * U, True),
        (8, 60 * U - 1, False),  # 8*8+8 = 72, capped at 60
        (8, 60 * U, True),
    ],
)
def test_later_restarts_wait_for_the_backoff(count: int, waited: int, due: bool) -> None:
    current = history(count, T0, T0 + backoff_units(count) * U)
    decision = decide(UNLIMITED, current, failing=True, now_ms=T0 + waited, unit_ms=U)
    assert decision.restart is due
    if due:
        now = T0 + waited
        assert decision.status == history(count + 1, now, now + backoff_units(count + 1) * U)
    else:
        assert decision.status == current  # unchanged: nothing to write


def test_max_restarts_stops_the_restarts_and_says_so() -> None:
    limited = AutoRestartPolicy(max_restarts=2)
    second = decide(limited, history(1, T0), failing=True, now_ms=T0 + 2 * U, unit_ms=U)
    assert second == AutoRestartDecision(True, history(2, T0 + 2 * U, None))  # the last one: no next
    later = decide(limited, second.status, failing=True, now_ms=T0 + 10_000 * U, unit_ms=U)
    assert later == AutoRestartDecision(False, history(2, T0 + 2 * U, None))  # never reset while failing


def test_the_count_resets_after_a_healthy_period_longer_than_the_backoff() -> None:
    current = history(2, T0, T0 + 6 * U)
    # Strimzi resets when the whole minutes since the last restart exceed the back-off (6 → 7).
    assert decide(UNLIMITED, current, failing=False, now_ms=T0 + 7 * U - 1, unit_ms=U).status == current
    assert decide(UNLIMITED, current, failing=False, now_ms=T0 + 7 * U, unit_ms=U) == AutoRestartDecision(False, None)


def test_a_changed_policy_recomputes_the_next_attempt() -> None:
    exhausted = history(2, T0, None)
    raised = decide(AutoRestartPolicy(max_restarts=5), exhausted, failing=True, now_ms=T0 + U, unit_ms=U)
    assert raised == AutoRestartDecision(False, history(2, T0, T0 + 6 * U))


def test_turned_off_drops_the_history() -> None:
    assert decide(None, history(3), failing=True, now_ms=T0, unit_ms=U) == AutoRestartDecision(False, None)


def test_unit_must_be_positive() -> None:
    assert unit_ms(0.25) == 250
    with pytest.raises(ValueError):
        unit_ms(0)


# --- the manifest --------------------------------------------------------------------------


def manifest(auto_restart: object) -> dict[str, object]:
    return {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": "c"},
        "spec": {"class": "datagen", "autoRestart": auto_restart},
    }


def test_policies_come_from_enabled_blocks_only() -> None:
    def desired(block: object, name: str) -> DesiredConnector:
        doc = manifest(block)
        doc["metadata"] = {"name": name}
        return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))

    found = policies(
        [
            desired({"enabled": True, "maxRestarts": 3}, "a"),
            desired({}, "b"),  # enabled by default, as Strimzi's
            desired({"enabled": False}, "c"),
            desired(None, "d"),
        ]
    )
    assert found == {"a": AutoRestartPolicy(3), "b": AutoRestartPolicy(None)}


@pytest.mark.parametrize("block", [{"maxRestarts": 0}, {"maxRestarts": "3"}, {"enabled": "yes"}, {"other": 1}])
def test_bad_blocks_are_refused(block: object) -> None:
    with pytest.raises(ValidationError):
        ConnectorManifest.model_validate(manifest(block))


# --- the record ----------------------------------------------------------------------------


def test_history_record_round_trips_and_replays() -> None:
    record = own.auto_restart_record("jdbc-src", history(2, 5, 11))
    assert record.key == b"auto-restart/jdbc-src"
    assert record.value == b'{"count":2,"last-restart":5,"next-restart":11}'
    assert own.decode_auto_restart(record.value) == history(2, 5, 11)
    assert own.decode_auto_restart(b'{"count":2,"last-restart":5,"next-restart":null}') == history(2, 5, None)
    assert own.parse_reconciler_key("auto-restart/jdbc-src") == own.ReconcilerKey("auto-restart", "jdbc-src", None)
    for bad in (b"[]", b'{"count":-1,"last-restart":5}', b'{"count":1,"last-restart":"x"}', b'{"count":1,"last-restart":1,"next-restart":"x"}'):
        assert isinstance(own.decode_auto_restart(bad), Invalid)

    replay = ReconcilerReplay()
    replay.apply(record.key, record.value, 0)
    assert replay.auto_restarts == {"jdbc-src": history(2, 5, 11)}
    tombstone = own.auto_restart_tombstone("jdbc-src")
    replay.apply(tombstone.key, tombstone.value, 1)
    assert replay.auto_restarts == {}


# --- a tick --------------------------------------------------------------------------------


def status(state: InstanceState) -> InstanceStatus:
    return InstanceStatus(state=state, worker_id="w:1", generation=3)


def live(*connectors: LiveConnector, auto: dict[str, AutoRestartStatus] | None = None) -> LiveState:
    return LiveState(connectors={c.name: c for c in connectors}, auto_restarts=auto or {})


def connector(name: str, state: InstanceState, tasks: dict[int, InstanceState], *, exists: bool = True) -> LiveConnector:
    return LiveConnector(
        name=name,
        config={"connector.class": "datagen"} if exists else None,
        task_count=len(tasks),
        connector_status=status(state),
        task_statuses={task: status(s) for task, s in tasks.items()},
    )


RUNNING, FAILED = InstanceState.RUNNING, InstanceState.FAILED


def test_a_tick_restarts_only_the_failed_instances_and_records_the_count() -> None:
    state = live(connector("flaky", RUNNING, {0: RUNNING, 1: FAILED}), connector("fine", RUNNING, {0: RUNNING}))
    result = tick_auto_restarts(state, {}, {"flaky": UNLIMITED, "fine": UNLIMITED}, {}, now_ms=T0, unit_ms=U)
    assert result.plans == {"flaky": RestartPlan(connector=False, tasks=(1,), offset=-1)}
    assert result.restarted == {"flaky": history(1, T0, T0 + 2 * U)}
    assert [(r.key, r.value) for r in result.records] == [
        (b"auto-restart/flaky", b'{"count":1,"last-restart":%d,"next-restart":%d}' % (T0, T0 + 2 * U))
    ]


def test_a_requested_restart_merges_with_the_automatic_one() -> None:
    state = live(connector("flaky", FAILED, {0: FAILED, 1: RUNNING}))
    requested = {"flaky": RestartPlan(connector=False, tasks=(0,), offset=42)}  # only task 0, by hand
    result = tick_auto_restarts(state, requested, {"flaky": UNLIMITED}, {}, now_ms=T0, unit_ms=U)
    # The hand-made restart already covers task 0; the connector still fails, so it is restarted too.
    assert result.plans == {"flaky": RestartPlan(connector=True, tasks=(0,), offset=42)}


def test_a_reconfigured_connector_is_not_failing() -> None:
    from reconciler.kafka.formats.own_records import FailureMark, trace_digest

    failed = connector("flaky", FAILED, {})  # failed when the config topic ended at 3; rewritten at offset 7
    marks = {"flaky": FailureMark(3, trace_digest(failed.connector_status.trace if failed.connector_status else None))}
    result = tick_auto_restarts(
        live(failed), {}, {"flaky": UNLIMITED}, {"flaky": 7}, now_ms=T0, unit_ms=U, failures=marks
    )
    assert result.plans == {} and result.records == []


def test_history_of_deleted_or_undeclared_connectors_is_dropped_and_unknown_manifests_touch_nothing() -> None:
    gone = connector("gone", FAILED, {}, exists=False)
    plain = connector("plain", FAILED, {})
    state = live(gone, plain, auto={"gone": history(1), "plain": history(1)})
    result = tick_auto_restarts(state, {}, {"gone": UNLIMITED}, {}, now_ms=T0, unit_ms=U)
    assert result.plans == {}
    assert sorted((r.key, r.value) for r in result.records) == [(b"auto-restart/gone", None), (b"auto-restart/plain", None)]
    untouched = tick_auto_restarts(state, {}, None, {}, now_ms=T0, unit_ms=U)
    assert untouched.plans == {} and untouched.records == []
