"""KIP-745 restarts in a batch worker: what a pending request restarts.

Which restart records are pending, and the marks that say so, are read with the topics
(`reconciler.kafka.replay.marks`, merged by `core.transitions.merge_restart`: the config topic's restart records, our topic's `runtime-started` and
`restart-processed/` marks). The plan is Connect's rule, `core.transitions.restart_targets`,
applied to the statuses read at the start of the tick. The processed mark is written in the same
transaction as the statuses the restart produced, so a crash before that commit re-executes the
restart on the next tick, and one after it never does: each request takes effect exactly once.
Pure: a request and statuses in, a plan out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.core.live import InstanceState, InstanceStatus
from reconciler.core.transitions import PendingRestart, restart_targets


@dataclass(frozen=True, slots=True)
class RestartPlan:
    """What one pending request restarts, per the statuses at the start of the tick."""

    connector: bool
    tasks: tuple[int, ...]
    offset: int

    @property
    def restarts_anything(self) -> bool:
        return self.connector or bool(self.tasks)


def plan_restart(
    request: PendingRestart,
    connector_status: InstanceStatus | None,
    task_statuses: Mapping[int, InstanceStatus],
) -> RestartPlan:
    """Connect's plan: the connector iff `!onlyFailed || FAILED`, task t iff `includeTasks &&
    (!onlyFailed || t FAILED)`; nothing when the connector has no status (Connect skips it)."""
    state = None if connector_status is None else connector_status.state
    states: dict[int, InstanceState] = {task: status.state for task, status in task_statuses.items()}
    connector, tasks = restart_targets(request.include_tasks, request.only_failed, state, states)
    return RestartPlan(connector, tuple(tasks), request.offset)
