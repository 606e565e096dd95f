"""Connect's lifecycle rules (docs/state-machine.md#lifecycle-rules), table-driven."""

from __future__ import annotations

import pytest

from reconciler.core.diagnostics import Severity
from reconciler.core.live import ConnectTargetState as Live
from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector
from reconciler.core.models import TargetState as Want
from reconciler.core.plan import ActionKind as K
from reconciler.core.transitions import (
    offsets_modifiable,
    plan_state,
    restart_impact,
    restart_targets,
    state_action,
)

# desired × live target × FAILED → (action, warning?)
# A FAILED connector cannot be paused/resumed without a restart (warning + restart hint); a stop is
# always allowed; a FAILED status under a STOPPED target is stale (Connect reports STOPPED).
STATE_TABLE = [
    (Want.RUNNING, Live.STARTED, False, None, False),
    (Want.RUNNING, Live.STARTED, True, None, True),  # declared running but failed: say so
    (Want.RUNNING, Live.PAUSED, False, K.RESUME, False),
    (Want.RUNNING, Live.PAUSED, True, K.RESUME, True),
    (Want.RUNNING, Live.STOPPED, False, K.RESUME, False),
    (Want.RUNNING, Live.STOPPED, True, K.RESUME, False),
    (Want.PAUSED, Live.STARTED, False, K.PAUSE, False),
    (Want.PAUSED, Live.STARTED, True, K.PAUSE, True),
    (Want.PAUSED, Live.PAUSED, False, None, False),
    (Want.PAUSED, Live.PAUSED, True, None, False),  # failed and meant to be paused: nothing flows
    (Want.PAUSED, Live.STOPPED, False, K.PAUSE, False),
    (Want.PAUSED, Live.STOPPED, True, K.PAUSE, False),
    (Want.STOPPED, Live.STARTED, False, K.STOP, False),
    (Want.STOPPED, Live.STARTED, True, K.STOP, False),  # stopping a FAILED connector is allowed
    (Want.STOPPED, Live.PAUSED, False, K.STOP, False),
    (Want.STOPPED, Live.PAUSED, True, K.STOP, False),
    (Want.STOPPED, Live.STOPPED, False, None, False),
    (Want.STOPPED, Live.STOPPED, True, None, False),
]


STATE_IDS = [f"{d.value}-from-{lv.value}{'-FAILED' if f else ''}" for d, lv, f, _, _ in STATE_TABLE]


@pytest.mark.parametrize(("desired", "live", "failed", "action", "warns"), STATE_TABLE, ids=STATE_IDS)
def test_state_table(desired: Want, live: Live, failed: bool, action: K | None, warns: bool) -> None:
    transition = plan_state("c", desired, live, failed=failed)
    assert transition.action is action
    assert transition.from_state.value == {"STARTED": "running", "PAUSED": "paused", "STOPPED": "stopped"}[live.value]
    assert transition.to_state is desired
    if warns:
        (warning,) = transition.diagnostics
        assert warning.severity is Severity.WARNING
        assert warning.connector == "c" and warning.field_path == "spec.state"
        assert "FAILED" in warning.summary
        assert warning.hint is not None and "spec.restart" in warning.hint
    else:
        assert transition.diagnostics == ()


@pytest.mark.parametrize(
    ("desired", "live", "action"),
    [(row[0], row[1], row[3]) for row in STATE_TABLE if row[4]],
)
def test_pending_restart_covers_a_failed_connector(desired: Want, live: Live, action: K | None) -> None:
    transition = plan_state("c", desired, live, failed=True, restart_pending=True)
    assert transition.action is action
    assert transition.diagnostics == ()
    assert "restart in this plan" in transition.reason


def test_failed_pause_warning_says_the_state_is_recorded() -> None:
    (warning,) = plan_state("c", Want.PAUSED, Live.STARTED, failed=True).diagnostics
    assert "cannot be paused" in warning.summary and "recorded" in warning.summary


def test_stopping_failed_connector_reason() -> None:
    assert "allowed" in plan_state("c", Want.STOPPED, Live.STARTED, failed=True).reason


def test_state_action_ignores_health() -> None:
    assert state_action(Want.RUNNING, Live.STARTED) is None
    assert state_action(Want.STOPPED, Live.PAUSED) is K.STOP


F, R = InstanceState.FAILED, InstanceState.RUNNING
TASKS = {0: R, 1: F, 2: R, 3: F}


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "connector", "expected"),
    [
        (False, False, R, (True, [])),
        (False, False, F, (True, [])),
        (True, False, R, (True, [0, 1, 2, 3])),
        (True, False, F, (True, [0, 1, 2, 3])),
        (False, True, R, (False, [])),
        (False, True, F, (True, [])),
        (True, True, R, (False, [1, 3])),
        (True, True, F, (True, [1, 3])),
        (True, False, None, (False, [])),  # no status record: Connect skips the request
    ],
)
def test_restart_targets_kip745(
    include_tasks: bool, only_failed: bool, connector: InstanceState | None, expected: tuple[bool, list[int]]
) -> None:
    assert restart_targets(include_tasks, only_failed, connector, TASKS) == expected


def test_restart_impact_rank() -> None:
    ranks = [restart_impact(i, o) for i, o in [(False, True), (True, True), (False, False), (True, False)]]
    assert ranks == sorted(ranks) and len(set(ranks)) == 4


def _live(target: Live, task_count: int | None, config: bool = True) -> LiveConnector:
    return LiveConnector(
        name="c",
        config={"connector.class": "x"} if config else None,
        target_state=target,
        task_count=task_count,
        connector_status=InstanceStatus(state=InstanceState.STOPPED),
    )


@pytest.mark.parametrize(
    ("live", "modifiable"),
    [
        (None, True),
        (_live(Live.STARTED, None, config=False), True),
        (_live(Live.STOPPED, 0), True),
        (_live(Live.STOPPED, None), True),
        (_live(Live.STOPPED, 2), False),
        (_live(Live.PAUSED, 0), False),  # KIP-875: merely PAUSED is rejected
        (_live(Live.STARTED, 2), False),
    ],
)
def test_offsets_modifiable(live: LiveConnector | None, modifiable: bool) -> None:
    assert offsets_modifiable(live) is modifiable
