"""What a batch reports: per connector, its target, its state and its tasks' batches (a tick's
report adds its apply, `app.tick.TickReport`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler.core.live import AutoRestartStatus, ConnectTargetState, InstanceState, LiveState
from reconciler.runtime.batch.lifecycle import left_to_connect
from reconciler.runtime.batch.restarts import RestartPlan
from reconciler.runtime.batch.statuses import StatusBook

if TYPE_CHECKING:
    from reconciler.runtime.batch.tasks import TaskOutcome


@dataclass(frozen=True, kw_only=True)
class TaskReport:
    task: int
    state: InstanceState | None
    records: int = 0
    ran: bool = False
    trace: str | None = None


@dataclass(frozen=True, kw_only=True)
class ConnectorReport:
    name: str
    target: ConnectTargetState
    state: InstanceState | None
    trace: str | None
    tasks: list[TaskReport]
    restarted: RestartPlan | None = None
    auto_restarted: AutoRestartStatus | None = None  # set when this tick restarted it automatically


@dataclass(kw_only=True)
class BatchReport:
    config_end: int  # the config topic's end offset the tick read
    connectors: list[ConnectorReport] = field(default_factory=list)
    records_written: int = 0  # config and status records this tick wrote
    works: int = 0  # tasks that ran a batch
    outcomes: list[TaskOutcome] = field(default_factory=list)  # of the batch, one per task that ran
    # Connectors of classes our runtime does not run, left to the group's Connect workers.
    left_to_connect: list[str] = field(default_factory=list)

    def connector(self, name: str) -> ConnectorReport | None:
        return next((c for c in self.connectors if c.name == name), None)


def connector_reports(
    live: LiveState,
    book: StatusBook,
    outcomes: Sequence[TaskOutcome],
    restarts: dict[str, RestartPlan],
    auto_restarted: Mapping[str, AutoRestartStatus],
) -> list[ConnectorReport]:
    """Every existing connector as the book left it, with the records its tasks moved."""
    moved = {(o.connector, o.task_id): o.records for o in outcomes if o.waited is None}
    reports = []
    for name, connector in sorted(live.connectors.items()):
        if not connector.exists or left_to_connect(connector):
            continue
        status = book.connectors.get(name)
        tasks = [
            TaskReport(
                task=task, state=s.state, records=moved.get((name, task), 0), ran=(name, task) in moved, trace=s.trace
            )
            for task, s in sorted(book.tasks.get(name, {}).items())
        ]
        reports.append(
            ConnectorReport(
                name=name,
                target=connector.target_state,
                state=None if status is None else status.state,
                trace=None if status is None else status.trace,
                tasks=tasks,
                restarted=restarts.get(name),
                auto_restarted=auto_restarted.get(name),
            )
        )
    return reports
