"""Kafka Connect's lifecycle rules as pure functions (docs/state-machine.md#lifecycle-rules).
The planner uses them to decide; the runtime reuses them to act.

- Target states STARTED/PAUSED/STOPPED can move in every direction.
- A FAILED connector cannot move to PAUSED or STARTED without a restart; Connect still records
  the new target state and the connector starts in it when it is restarted
  (docs/state-machine.md#failed-instances).
  Stopping a FAILED connector is allowed and yields STOPPED.
- KIP-745 restart plan: restart the Connector iff `!onlyFailed || connector FAILED`; restart task
  t iff `includeTasks && (!onlyFailed || task t FAILED)` (docs/state-machine.md#restart-requests).
  Two pending requests of one connector merge into the higher-impact one (`merge_restart`): the
  config replay and the runtime both merge through it.
- Offsets may only change while the target state is STOPPED and no task is committed
  (docs/state-machine.md#alter-and-reset).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.live import ConnectTargetState, InstanceState, LiveConnector
from reconciler.core.models import SourceRef, TargetState
from reconciler.core.normalize import from_connect_state
from reconciler.core.plan import ActionKind

# The plain state action that moves a connector into each declared state.
STATE_ACTION: dict[TargetState, ActionKind] = {
    TargetState.RUNNING: ActionKind.RESUME,
    TargetState.PAUSED: ActionKind.PAUSE,
    TargetState.STOPPED: ActionKind.STOP,
}

# Connect's config-topic names → the manifest's names (module-level: called per connector).
DECLARED_FOR: dict[ConnectTargetState, TargetState] = {
    live: from_connect_state(live) for live in ConnectTargetState
}

RESTART_HINT = (
    "add `spec.restart` with a new id (e.g. `restart: {id: <new-id>, includeTasks: true, onlyFailed: true}`)"
)


@dataclass(frozen=True, kw_only=True)
class StateTransition:
    """What to do about one connector's target state, and what to tell the reviewer."""

    action: ActionKind | None  # STOP / PAUSE / RESUME, or None when already in the declared state
    from_state: TargetState
    to_state: TargetState
    reason: str = ""
    diagnostics: tuple[Diagnostic, ...] = field(default=())


def state_action(desired: TargetState, live: ConnectTargetState) -> ActionKind | None:
    """The target-state write needed, ignoring health (Connect allows every direction)."""
    if DECLARED_FOR[live] is desired:
        return None
    return STATE_ACTION[desired]


def plan_state(
    name: str,
    desired: TargetState,
    live: ConnectTargetState,
    *,
    failed: bool,
    restart_pending: bool = False,
    source: SourceRef | None = None,
) -> StateTransition:
    """The state action for a live connector and, for a FAILED one, the restart path.

    `restart_pending` = a restart request for this connector is planned in the same plan. Any
    restart covers a FAILED connector: KIP-745 restarts the Connector whenever it is FAILED,
    whatever `onlyFailed` says.
    """
    action = state_action(desired, live)
    current = DECLARED_FOR[live]
    if failed and desired is TargetState.STOPPED and action is not None:
        return StateTransition(
            action=action, from_state=current, to_state=desired, reason="stopping a FAILED connector is allowed"
        )
    # A FAILED status under a STOPPED target is stale (Connect stops failed connectors and
    # reports STOPPED); failed and meant to be paused: nothing flows either way.
    if not failed or live is ConnectTargetState.STOPPED or desired is TargetState.STOPPED:
        return StateTransition(action=action, from_state=current, to_state=desired)
    if action is None and desired is TargetState.PAUSED:
        return StateTransition(action=action, from_state=current, to_state=desired)
    if restart_pending:
        return StateTransition(
            action=action,
            from_state=current,
            to_state=desired,
            reason=f"connector is FAILED; the restart in this plan brings it up {desired.value}",
        )
    warning = _failed_warning(name, action, desired, source)
    return StateTransition(
        action=action, from_state=current, to_state=desired, reason="connector is FAILED", diagnostics=(warning,)
    )


def _failed_warning(name: str, action: ActionKind | None, desired: TargetState, source: SourceRef | None) -> Diagnostic:
    if action is None:
        summary = "connector is FAILED but declared running; Connect leaves it failed until it is restarted"
    else:
        verb = "paused" if action is ActionKind.PAUSE else "resumed"
        summary = (
            f"connector is FAILED and cannot be {verb} without a restart; the target state "
            f"{desired.value} is recorded and takes effect when the connector restarts"
        )
    return Diagnostic(
        severity=Severity.WARNING,
        summary=summary,
        source=source,
        field_path="spec.state",
        connector=name,
        hint=RESTART_HINT,
    )


def restart_targets(
    include_tasks: bool,
    only_failed: bool,
    connector_state: InstanceState | None,
    task_states: Mapping[int, InstanceState],
) -> tuple[bool, list[int]]:
    """KIP-745 restart plan (RestartRequest.java): (restart the Connector?, task ids to restart).

    With no status record for the connector Connect skips the request: (False, []).
    """
    if connector_state is None:
        return False, []
    restart_connector = not only_failed or connector_state is InstanceState.FAILED
    if not include_tasks:
        return restart_connector, []
    tasks = [t for t, s in sorted(task_states.items()) if not only_failed or s is InstanceState.FAILED]
    return restart_connector, tasks


def restart_impact(include_tasks: bool, only_failed: bool) -> int:
    """Rank of a restart request; Connect keeps the higher-impact one of two pending
    (docs/state-machine.md#restart-requests):
    onlyFailed∧¬tasks < onlyFailed∧tasks < ¬onlyFailed∧¬tasks < ¬onlyFailed∧tasks."""
    return (0 if only_failed else 2) + (1 if include_tasks else 0)


class PendingRestart(NamedTuple):
    """A connector's pending KIP-745 restart request: its flags, and the config-topic offset of
    the newest `restart-connector-` record merged into it."""

    include_tasks: bool
    only_failed: bool
    offset: int


def merge_restart(pending: PendingRestart | None, new: PendingRestart) -> PendingRestart:
    """A newer request merged into the pending one, as Connect merges them: the higher-impact
    request is kept (the pending one on a tie), covering records up to the newest offset."""
    if pending is None or restart_impact(new.include_tasks, new.only_failed) > restart_impact(
        pending.include_tasks, pending.only_failed
    ):
        return new
    return pending._replace(offset=max(pending.offset, new.offset))


def offsets_modifiable(live: LiveConnector | None) -> bool:
    """KIP-875 precondition: target state STOPPED and no committed task (docs/state-machine.md#alter-and-reset).

    A connector that does not exist yet is created STOPPED with no tasks (KIP-980), so it
    counts as modifiable once created; the planner creates it STOPPED for that reason.
    """
    if live is None or not live.exists:
        return True
    return live.target_state is ConnectTargetState.STOPPED and not live.task_count
