"""The status read model: what `reconciler status` prints and the REST API's `GET /status`
serves, computed once from a group's live state (pure: a `LiveState` in, typed rows and notes out).

A connector applied but not yet run has no status record: where Java answers 404, the table
says "no status yet" and JSON says UNASSIGNED (`connect_rest.shown_status`). The notes say why
statuses differ from the target (`apply` wrote it; the worker follows at its next tick), why
tasks that read RUNNING move no data (they waited at the last batch), and what UNASSIGNED means
here, where no worker runs between batches (docs/runtime.md#liveness-between-batches). The last
batch and `spec.autoRestart` history come from the reconciler's own records
(docs/runtime.md#auto-restart). Reading the state is `app.status`'s part.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from reconciler.core.live import (
    AutoRestartStatus,
    ConnectTargetState,
    InstanceState,
    LastBatch,
    LiveConnector,
    LiveState,
    Waiting,
)
from reconciler.core.normalize import from_connect_state
from reconciler.render.common import trace_summary
from reconciler.render.connect_rest import (
    auto_restart_doc,
    connector_type,
    shown_status,
    with_our_fields,
)

_SETTLED = {
    ConnectTargetState.STARTED: InstanceState.RUNNING,
    ConnectTargetState.PAUSED: InstanceState.PAUSED,
    ConnectTargetState.STOPPED: InstanceState.STOPPED,
}


@dataclass(frozen=True, kw_only=True)
class ConnectorRow:
    """One connector's line: its plugin's kind, target (as manifests name it, or "(deleted)"),
    state (None: no status yet), tasks running of all, failed task ids, last batch, and its
    automatic restarts (None: no `spec.autoRestart` history)."""

    name: str
    kind: str
    target: str
    state: InstanceState | None
    running: int
    total: int
    failed_tasks: tuple[int, ...]
    last_batch: LastBatch | None
    auto_restarts: AutoRestartStatus | None

    @property
    def failed(self) -> bool:
        return self.state is InstanceState.FAILED or bool(self.failed_tasks)


@dataclass(frozen=True, kw_only=True)
class TaskRow:
    task: int
    state: InstanceState
    worker_id: str | None
    trace: str  # the trace's summary line ("" without one)


@dataclass(frozen=True, kw_only=True)
class StatusView:
    """The connectors' rows; with `details` (one connector), its tasks and automatic restarts."""

    rows: list[ConnectorRow]
    auto_restart_column: bool  # only where auto-restart is in use
    tasks: list[TaskRow]
    auto_restart: AutoRestartStatus | None
    notes: list[str]


def listed(live: LiveState) -> list[LiveConnector]:
    """Connectors that exist (have a config) or still have a status, by name."""
    return [c for _, c in sorted(live.connectors.items()) if c.exists or c.connector_status is not None]


def status_documents(live: LiveState, connectors: list[LiveConnector]) -> dict[str, dict[str, Any]]:
    """Connect's `GET /connectors?expand=status` object for these connectors (each has one)."""
    return {c.name: {"status": with_our_fields(doc, live)} for c in connectors if (doc := shown_status(c))}


def status_document(live: LiveState, connector: LiveConnector) -> dict[str, Any]:
    """Connect's `GET /connectors/{name}/status` of a connector `one` found."""
    doc = shown_status(connector)
    assert doc is not None  # `one` refused a connector without one
    return with_our_fields(doc, live)


def status_view(live: LiveState, connectors: list[LiveConnector], *, details: bool) -> StatusView:
    history = live.auto_restarts
    rows = [connector_row(c, live.last_batches.get(c.name), history.get(c.name)) for c in connectors]
    first = connectors[0] if connectors else None
    return StatusView(
        rows=rows,
        auto_restart_column=any(c.name in history for c in connectors),
        tasks=task_rows(first) if details and first is not None else [],
        auto_restart=history.get(first.name) if details and first is not None else None,
        notes=notes(live, connectors, details=details) if connectors else [],
    )


def connector_row(
    connector: LiveConnector, batch: LastBatch | None, auto_restarts: AutoRestartStatus | None = None
) -> ConnectorRow:
    tasks = connector.task_statuses
    return ConnectorRow(
        name=connector.name,
        kind=connector_type(connector),
        target=from_connect_state(connector.target_state).value if connector.exists else "(deleted)",
        state=connector.connector_status.state if connector.connector_status else None,
        running=sum(1 for status in tasks.values() if status.state is InstanceState.RUNNING),
        total=connector.task_count if connector.task_count is not None else len(tasks),
        failed_tasks=tuple(sorted(task for task, status in tasks.items() if status.state is InstanceState.FAILED)),
        last_batch=batch,
        auto_restarts=auto_restarts,
    )


def task_rows(connector: LiveConnector) -> list[TaskRow]:
    return [
        TaskRow(task=task, state=status.state, worker_id=status.worker_id, trace=trace_summary(status.trace or ""))
        for task, status in sorted(connector.task_statuses.items())
    ]


def notes(live: LiveState, connectors: list[LiveConnector], *, details: bool) -> list[str]:
    """What the table alone would not say: a FAILED connector's trace (`details`), targets not
    reached yet, tasks that wait, and UNASSIGNED."""
    found = [note for c in connectors if (note := pending_note(c)) is not None]
    found += [waiting_note(c.name, waiting) for c in connectors if (waiting := live.waiting.get(c.name)) is not None]
    status = connectors[0].connector_status if details else None
    if status is not None and status.state is InstanceState.FAILED and status.trace:
        found.insert(0, f"{connectors[0].name}: FAILED: {trace_summary(status.trace)}")
    unassigned = unassigned_note(connectors)
    if unassigned is not None:
        found.append(unassigned)
    return found


def pending_note(connector: LiveConnector) -> str | None:
    """Why the statuses differ from the target, when the worker has not acted on it yet."""
    status = connector.connector_status
    # FAILED waits for a restart, not a tick; UNASSIGNED is between batches (no worker holds it,
    # LAST BATCH says when its tasks last ran; docs/runtime.md#liveness-between-batches).
    if not connector.exists or status is None or status.state in (InstanceState.FAILED, InstanceState.UNASSIGNED):
        return None
    target = from_connect_state(connector.target_state).value
    stopped_with_tasks = connector.target_state is ConnectTargetState.STOPPED and bool(connector.task_statuses)
    if status.state is _SETTLED[connector.target_state] and not stopped_with_tasks:
        return None
    return (
        f"{connector.name}: target {target}, still {status.state.value}"
        + (f" with {len(connector.task_statuses)} task(s)" if stopped_with_tasks else "")
        + ": `apply` wrote the target; the connector and its tasks follow at the next `reconciler run` tick"
    )


def unassigned_note(connectors: list[LiveConnector]) -> str | None:
    """Once, when any connector reads UNASSIGNED: what it means here, where no worker runs between
    batches (after `run --once`, or once a loop stopped), so a healthy pipeline is not taken for
    a broken one."""
    count = sum(1 for c in connectors if c.connector_status and c.connector_status.state is InstanceState.UNASSIGNED)
    if not count:
        return None
    return (
        f"{count} connector(s) UNASSIGNED: no `reconciler run`/`watch` holds them now (a stopping Connect "
        "worker leaves its connectors the same); LAST BATCH says when their tasks last ran"
    )


def waiting_note(name: str, waiting: Waiting) -> str:
    """Why a connector's data does not move though its tasks report RUNNING (as a Java task's
    would while its clients retry): they waited at the last batch."""
    return f"{name}: its tasks wait for the next batch (since {_utc(waiting.since_ms)}): {waiting.reason}"


def batch_summary(batch: LastBatch | None, task_count: int = 0) -> str | None:
    """`2026-11-22 10:04:05Z succeeded, 120 records`, or None when the tasks never ran. When
    fewer of the connector's `task_count` tasks ran (a FAILED one waits for a restart), it says
    so: "succeeded" is about the tasks that ran."""
    if batch is None:
        return None
    ran = len(batch.tasks)
    part = f" ({ran} of {task_count} tasks ran)" if 0 < ran < task_count else ""
    return f"{_utc(batch.finished_at_ms)} {batch.outcome}, {batch.records} records{part}"


def auto_restart_line(status: AutoRestartStatus) -> str:
    doc = auto_restart_doc(status)
    line = f"Auto-restart: {status.count} automatic restart(s) in a row, the last at {doc['lastRestartTimestamp']}; "
    if doc["nextRestartTimestamp"] is None:
        return line + "maxRestarts reached: no more automatic restarts (restart it with spec.restart)"
    return line + f"next attempt, if it is still failing, not before {doc['nextRestartTimestamp']}"


def _utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def status_json(view: StatusView) -> dict[str, Any]:
    """The REST API's `GET /status` (ours): the table `reconciler status` prints, as JSON — one
    object per row, then the notes."""
    return {
        "connectors": [
            {
                "name": row.name,
                "type": row.kind,
                "target": row.target,
                "state": row.state.value if row.state is not None else None,
                "tasks_running": row.running,
                "tasks_total": row.total,
                "failed_tasks": list(row.failed_tasks),
                "last_batch": batch_summary(row.last_batch, row.total),
                "auto_restarts": None if row.auto_restarts is None else auto_restart_doc(row.auto_restarts),
            }
            for row in view.rows
        ],
        "notes": view.notes,
    }
