"""`reconciler status [NAME] [--format table|json]`: connector and task statuses from Kafka.

JSON follows Connect's REST shapes (docs/compatibility.md#rest-shapes), so scripts written against a
Connect cluster keep working: with NAME, `GET /connectors/{name}/status`; without, the
`GET /connectors?expand=status` object `{name: {"status": …}}`, for the connectors the table
lists. A connector applied but not yet run has no status record: where Java answers 404 (a
wait of moments there, of a whole `run` interval here), the table says "no status yet" and
JSON says UNASSIGNED with a null `worker_id` (`render.connect_rest.shown_status`). A name that
has neither config nor status is an error, "Connector NAME not found".

The table names target states as manifests do (`running`, `paused`, `stopped`), and notes
each connector whose statuses have not caught up with its target yet: `apply` only writes
the target; the worker (`reconciler run`) moves the connector and its tasks at its next tick.
`type` is the plugin's kind (Connect's `unknown` when no plugin of that name is installed);
for a Java class, run by a Java Connect worker, it is read from the config (`topics`).

Tables also show when the runtime last ran each connector's tasks, and how that went (LAST
BATCH): between batches and after a runner exits, statuses say who runs a connector, not when
its data last moved (docs/runtime.md#liveness-between-batches).

A connector with `spec.autoRestart` history also shows it: how many automatic restarts in a
row, when the last was made and when the next may be (docs/runtime.md#auto-restart). In JSON
that is an `autoRestart` object inside the status document, named after Strimzi's
`AutoRestartStatus` fields; a connector without history keeps exactly Connect's shape.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys

from reconciler.cli.options import add_kafka_options, kafka_settings
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
    connector_not_found_message,
    connector_type,
    shown_status,
    with_our_fields,
)
from reconciler.errors import ReconcilerError

EXIT_OK = 0
NO_STATUS = "-"


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "status",
        help="show connector and task statuses",
        description="Read the status topic and show connector/task states (Connect's REST shape with --format json).",
    )
    parser.add_argument("name", nargs="?", default=None, metavar="NAME", help="one connector (default: all)")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from reconciler.kafka.io.store import read_live_state

    live = read_live_state(kafka_settings(args))
    if args.name is not None:
        return _show_one(live, args.name, args.format)
    connectors = listed(live)
    if args.format == "json":  # the table's connectors (`listed`): each has a document
        docs = {c.name: {"status": with_our_fields(doc, live)} for c in connectors if (doc := shown_status(c))}
        print(json.dumps(docs, indent=2, ensure_ascii=False))
    else:
        _print_table(live, connectors, details=False)
    return EXIT_OK


def _show_one(live: LiveState, name: str, output: str) -> int:
    connector = live.connector(name)
    doc = shown_status(connector) if connector is not None else None
    if connector is None or doc is None:  # neither config nor status
        raise ReconcilerError(connector_not_found_message(name))
    if output == "table":
        _print_table(live, [connector], details=True)  # "no status yet" when it has none
    else:
        print(json.dumps(with_our_fields(doc, live), indent=2, ensure_ascii=False))
    return EXIT_OK


def listed(live: LiveState) -> list[LiveConnector]:
    """Connectors that exist (have a config) or still have a status, by name."""
    return [c for _, c in sorted(live.connectors.items()) if c.exists or c.connector_status is not None]


def batch_summary(batch: LastBatch | None, task_count: int = 0) -> str:
    """`2026-11-22 10:04:05Z succeeded, 120 records`, or `-` when the tasks never ran. When fewer
    of the connector's `task_count` tasks ran (a FAILED one waits for a restart), it says so:
    "succeeded" is about the tasks that ran."""
    if batch is None:
        return NO_STATUS
    at = datetime.datetime.fromtimestamp(batch.finished_at_ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    ran = len(batch.tasks)
    part = f" ({ran} of {task_count} tasks ran)" if 0 < ran < task_count else ""
    return f"{at} {batch.outcome}, {batch.records} records{part}"


def _row(connector: LiveConnector, batch: LastBatch | None) -> list[str]:
    tasks = connector.task_statuses
    total = connector.task_count if connector.task_count is not None else len(tasks)
    running = sum(1 for status in tasks.values() if status.state is InstanceState.RUNNING)
    failed = sorted(task for task, status in tasks.items() if status.state is InstanceState.FAILED)
    state = connector.connector_status.state.value if connector.connector_status else "no status yet"
    target = from_connect_state(connector.target_state).value if connector.exists else "(deleted)"
    return [
        connector.name,
        connector_type(connector),
        target,
        state,
        f"{running}/{total}",
        ",".join(map(str, failed)) or NO_STATUS,
        batch_summary(batch, total),
    ]


HEADERS = ["CONNECTOR", "TYPE", "TARGET", "STATE", "TASKS RUNNING", "FAILED TASK IDS", "LAST BATCH"]
_SETTLED = {
    ConnectTargetState.STARTED: InstanceState.RUNNING,
    ConnectTargetState.PAUSED: InstanceState.PAUSED,
    ConnectTargetState.STOPPED: InstanceState.STOPPED,
}


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


def _task_rows(connector: LiveConnector) -> list[list[str]]:
    return [
        [str(task), status.state.value, status.worker_id or NO_STATUS, trace_summary(status.trace or "")]
        for task, status in sorted(connector.task_statuses.items())
    ]


def _print_table(live: LiveState, connectors: list[LiveConnector], *, details: bool) -> None:
    if not connectors:
        print("No connectors.")
        return
    history = live.auto_restarts
    headers, rows = list(HEADERS), [_row(c, live.last_batches.get(c.name)) for c in connectors]
    if any(c.name in history for c in connectors):  # the column only where auto-restart is in use
        headers.append("AUTO-RESTARTS")
        for row, connector in zip(rows, connectors, strict=True):
            row.append(_auto_restart_cell(history.get(connector.name)))
    task_rows = _task_rows(connectors[0]) if details else []
    if sys.stdout.isatty():
        _rich_tables(headers, rows, task_rows)
    else:
        print(_plain(headers, rows))
        if task_rows:
            print()
            print(_plain(["TASK", "STATE", "WORKER", "TRACE"], task_rows))
    if details and connectors[0].name in history:
        print()
        print(auto_restart_line(history[connectors[0].name]))
    _print_notes(live, connectors, details=details)


def waiting_note(name: str, waiting: Waiting) -> str:
    """Why a connector's data does not move though its tasks report RUNNING (as a Java task's
    would while its clients retry): they waited at the last batch."""
    since = datetime.datetime.fromtimestamp(waiting.since_ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")
    return f"{name}: its tasks wait for the next batch (since {since}): {waiting.reason}"


def _print_notes(live: LiveState, connectors: list[LiveConnector], *, details: bool) -> None:
    notes = [note for c in connectors if (note := pending_note(c)) is not None]
    notes += [waiting_note(c.name, waiting) for c in connectors if (waiting := live.waiting.get(c.name)) is not None]
    status = connectors[0].connector_status if details else None
    if status is not None and status.state is InstanceState.FAILED and status.trace:
        notes.insert(0, f"{connectors[0].name}: FAILED: {trace_summary(status.trace)}")
    unassigned = unassigned_note(connectors)
    if unassigned is not None:
        notes.append(unassigned)
    if notes:
        print()
        for note in notes:
            print(f"note: {note}")


def _auto_restart_cell(status: AutoRestartStatus | None) -> str:
    if status is None:
        return NO_STATUS
    return f"{status.count} (max reached)" if status.next_restart_ms is None else str(status.count)


def auto_restart_line(status: AutoRestartStatus) -> str:
    doc = auto_restart_doc(status)
    line = f"Auto-restart: {status.count} automatic restart(s) in a row, the last at {doc['lastRestartTimestamp']}; "
    if doc["nextRestartTimestamp"] is None:
        return line + "maxRestarts reached: no more automatic restarts (restart it with spec.restart)"
    return line + f"next attempt, if it is still failing, not before {doc['nextRestartTimestamp']}"


def _plain(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines)


def _rich_tables(headers: list[str], rows: list[list[str]], task_rows: list[list[str]]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(*headers)
    for row in rows:
        style = "red" if row[3] == "FAILED" or row[5] != NO_STATUS else None
        table.add_row(*row, style=style)
    console.print(table)
    if task_rows:
        tasks = Table("TASK", "STATE", "WORKER", "TRACE")
        for row in task_rows:
            tasks.add_row(*row, style="red" if row[1] == "FAILED" else None)
        console.print(tasks)
