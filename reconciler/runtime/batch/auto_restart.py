"""`spec.autoRestart`: restart FAILED connectors and tasks by themselves, as Strimzi does.

Strimzi's rules (its `AbstractConnectOperator`, checked against the operator's sources), applied
at every tick to each connector whose manifest enables it:

- A connector is *failing* when it or one of its tasks is FAILED (a failure that still holds at
  this tick: a restart requested by hand or a new config already starts it over).
- A failing connector with no restart history is restarted at once. After n automatic restarts
  the next one waits `min(n*n + n, 60)` back-off units (Strimzi's minutes: 2, 6, 12, 20, 30,
  42, 56, then 60), and none is made once n reaches `maxRestarts`.
- A restart is Connect's `includeTasks=true&onlyFailed=true`: the connector if FAILED, and its
  FAILED tasks.
- A connector that is not failing and has been quiet for longer than its current back-off has
  its count reset (its history is deleted). While it keeps failing, the count never resets.
- Elapsed time counts whole units, truncated, as Strimzi's `ChronoUnit.MINUTES.between` does.
- With auto-restart turned off (or the manifest gone), the history is deleted, as Strimzi drops
  the status field.

The history is `auto-restart/<name>` in our own topic (docs/record-formats.md#reconciler-topic),
so a restarted container continues the count. Pure: statuses and times in, decisions out.
(docs/runtime.md#auto-restart.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reconciler.core.live import AutoRestartStatus, LiveConnector, LiveState
from reconciler.core.models import DesiredConnector
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.records import Record
from reconciler.kafka.formats.own_records import FailureMark
from reconciler.core.transitions import PendingRestart
from reconciler.runtime.batch.restarts import RestartPlan, plan_restart
from reconciler.runtime.batch.statuses import health

MAX_BACKOFF_UNITS = 60
DEFAULT_UNIT_S = 60.0  # Strimzi counts minutes; tests shorten the unit


@dataclass(frozen=True, slots=True)
class AutoRestartPolicy:
    """An enabled `spec.autoRestart`; `max_restarts` None = no limit."""

    max_restarts: int | None = None


@dataclass(frozen=True, slots=True)
class AutoRestartDecision:
    """Whether to restart now, and the history to keep afterwards (None: none)."""

    restart: bool
    status: AutoRestartStatus | None


def policies(desired: Iterable[DesiredConnector]) -> dict[str, AutoRestartPolicy]:
    """The connectors whose manifests enable auto-restart."""
    found: dict[str, AutoRestartPolicy] = {}
    for connector in desired:
        block = connector.spec.autoRestart
        if block is not None and block.enabled:
            found[connector.name] = AutoRestartPolicy(block.maxRestarts)
    return found


def backoff_units(count: int) -> int:
    """Units to wait after `count` automatic restarts: `min(n*n + n, 60)`."""
    return min(count * count + count, MAX_BACKOFF_UNITS)


def decide(
    policy: AutoRestartPolicy | None,
    current: AutoRestartStatus | None,
    *,
    failing: bool,
    now_ms: int,
    unit_ms: int,
) -> AutoRestartDecision:
    """Strimzi's `autoRestartFailedConnectorAndTasks` for one connector at one tick."""
    if policy is None:
        return AutoRestartDecision(False, None)
    if failing:
        if _due(policy, current, now_ms, unit_ms):
            count = 1 if current is None else current.count + 1
            return AutoRestartDecision(True, _status(policy, count, now_ms, unit_ms))
        return AutoRestartDecision(False, _refreshed(policy, current, unit_ms))
    if current is not None and _stable(current, now_ms, unit_ms):
        return AutoRestartDecision(False, None)
    return AutoRestartDecision(False, _refreshed(policy, current, unit_ms))


def _due(policy: AutoRestartPolicy, current: AutoRestartStatus | None, now_ms: int, unit_ms: int) -> bool:
    if current is None:  # (maxRestarts is at least 1: the manifest model says so)
        return True
    if policy.max_restarts is not None and current.count >= policy.max_restarts:
        return False
    return _elapsed_units(current, now_ms, unit_ms) >= backoff_units(current.count)


def _stable(current: AutoRestartStatus, now_ms: int, unit_ms: int) -> bool:
    """Healthy for longer than the current back-off (Strimzi's `shouldResetAutoRestartStatus`)."""
    return current.count > 0 and _elapsed_units(current, now_ms, unit_ms) > backoff_units(current.count)


def _elapsed_units(current: AutoRestartStatus, now_ms: int, unit_ms: int) -> int:
    return max(0, now_ms - current.last_restart_ms) // unit_ms


def _status(policy: AutoRestartPolicy, count: int, last_ms: int, unit_ms: int) -> AutoRestartStatus:
    exhausted = policy.max_restarts is not None and count >= policy.max_restarts
    upcoming = None if exhausted else last_ms + backoff_units(count) * unit_ms
    return AutoRestartStatus(count=count, last_restart_ms=last_ms, next_restart_ms=upcoming)


def _refreshed(
    policy: AutoRestartPolicy, current: AutoRestartStatus | None, unit_ms: int
) -> AutoRestartStatus | None:
    """The same history, its next attempt recomputed (the policy or the unit may have changed)."""
    return None if current is None else _status(policy, current.count, current.last_restart_ms, unit_ms)


def unit_ms(unit_s: float) -> int:
    if unit_s <= 0:
        raise ValueError(f"the auto-restart back-off unit must be positive, got {unit_s}")
    return max(1, round(unit_s * 1000))


# --- in a tick -------------------------------------------------------------------------------

# Connect's `POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true`, as Strimzi calls it.
AUTO_REQUEST = PendingRestart(include_tasks=True, only_failed=True, offset=-1)


@dataclass
class AutoRestarts:
    """One tick's automatic restarts: the restart plans (merged with requested ones), the
    history records to write with the RESTARTING statuses, and who was restarted."""

    plans: dict[str, RestartPlan]
    records: list[Record] = field(default_factory=list)
    restarted: dict[str, AutoRestartStatus] = field(default_factory=dict)


def tick_auto_restarts(
    live: LiveState,
    requested: Mapping[str, RestartPlan],
    policies_: Mapping[str, AutoRestartPolicy] | None,
    config_offsets: Mapping[str, int],
    *,
    now_ms: int,
    unit_ms: int,
    failures: Mapping[str, FailureMark] | None = None,
) -> AutoRestarts:
    """Decide every connector's auto-restart. `policies_` None: the manifests are unknown to this
    tick, so nothing is restarted and no history is touched. `config_offsets` and `failures`
    (our marks of when connectors failed) tell a failure a new config has since started over."""
    failures = failures or {}
    result = AutoRestarts(dict(requested))
    if policies_ is None:
        return result
    for name in sorted(set(policies_) | set(live.auto_restarts)):
        connector = live.connector(name)
        current = live.auto_restarts.get(name)
        policy = policies_.get(name) if connector is not None and connector.exists else None
        failing = connector is not None and _failing(
            connector, requested.get(name), config_offsets.get(name), failures.get(name)
        )
        decision = decide(policy, current, failing=failing, now_ms=now_ms, unit_ms=unit_ms)
        if decision.restart and connector is not None and decision.status is not None:
            automatic = plan_restart(AUTO_REQUEST, connector.connector_status, connector.task_statuses)
            result.plans[name] = _merged(requested.get(name), automatic)
            result.restarted[name] = decision.status
        if decision.status != current:
            status = decision.status
            result.records.append(
                own.auto_restart_tombstone(name) if status is None else own.auto_restart_record(name, status)
            )
    return result


def _failing(
    connector: LiveConnector, requested: RestartPlan | None, config_offset: int | None, failure: FailureMark | None
) -> bool:
    """FAILED instances that still hold at this tick (not restarted by hand, not reconfigured)."""
    state = health(
        connector,
        restarted_connector=requested is not None and requested.connector,
        restarted_tasks=requested.tasks if requested is not None else (),
        config_offset=config_offset,
        failure=failure,
    )
    return state.connector_failed or bool(state.failed_tasks)


def _merged(requested: RestartPlan | None, automatic: RestartPlan) -> RestartPlan:
    """Both restarts, on the statuses at the start of the tick: the union of what they restart.
    The requested plan's offset is kept (it is what the processed mark records)."""
    if requested is None:
        return automatic
    tasks = tuple(sorted(set(requested.tasks) | set(automatic.tasks)))
    return RestartPlan(requested.connector or automatic.connector, tasks, requested.offset)
