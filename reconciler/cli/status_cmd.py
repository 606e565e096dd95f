"""`reconciler status [NAME] [--format table|json]`: connector and task statuses from Kafka,
as `app.status` reads them and `render.status_view` models them; here, the table and the JSON.

JSON follows Connect's REST shapes (docs/compatibility.md#rest-shapes), so scripts written against a
Connect cluster keep working: with NAME, `GET /connectors/{name}/status`; without, the
`GET /connectors?expand=status` object `{name: {"status": …}}`, for the connectors the table
lists. A name that has neither config nor status is an error, "Connector NAME not found".

The table names target states as manifests do (`running`, `paused`, `stopped`) and notes what
the statuses alone would not say (`render.status_view.notes`). `type` is the plugin's kind (Connect's
`unknown` when no plugin of that name is installed). LAST BATCH says when the runtime last ran
each connector's tasks, and how that went; AUTO-RESTARTS appears where `spec.autoRestart` has
history (in JSON, an `autoRestart` object named after Strimzi's `AutoRestartStatus` fields).
"""

from __future__ import annotations

import argparse
import json
import sys

from reconciler.app.status import one, read_status
from reconciler.render.status_view import (
    ConnectorRow,
    StatusView,
    TaskRow,
    auto_restart_line,
    batch_summary,
    listed,
    status_document,
    status_documents,
    status_view,
)
from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.core.live import AutoRestartStatus, InstanceState, LiveConnector, LiveState

EXIT_OK = 0
NO_STATUS = "-"
HEADERS = ["CONNECTOR", "TYPE", "TARGET", "STATE", "TASKS RUNNING", "FAILED TASK IDS", "LAST BATCH"]
TASK_HEADERS = ["TASK", "STATE", "WORKER", "TRACE"]


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
    live = read_status(kafka_settings(args))
    if args.name is not None:
        connector = one(live, args.name)
        if args.format == "table":
            _print_table(live, [connector], details=True)  # "no status yet" when it has none
        else:
            print(json.dumps(status_document(live, connector), indent=2, ensure_ascii=False))
        return EXIT_OK
    connectors = listed(live)
    if args.format == "json":  # the table's connectors (`listed`): each has a document
        print(json.dumps(status_documents(live, connectors), indent=2, ensure_ascii=False))
    else:
        _print_table(live, connectors, details=False)
    return EXIT_OK


def _print_table(live: LiveState, connectors: list[LiveConnector], *, details: bool) -> None:
    if not connectors:
        print("No connectors.")
        return
    view = status_view(live, connectors, details=details)
    headers = HEADERS + (["AUTO-RESTARTS"] if view.auto_restart_column else [])
    rows = [_cells(row, auto_restart_column=view.auto_restart_column) for row in view.rows]
    task_rows = [_task_cells(task) for task in view.tasks]
    if sys.stdout.isatty():
        _rich_tables(headers, rows, task_rows, view)
    else:
        print(_plain(headers, rows))
        if task_rows:
            print()
            print(_plain(TASK_HEADERS, task_rows))
    if view.auto_restart is not None:
        print()
        print(auto_restart_line(view.auto_restart))
    _print_notes(view)


def _cells(row: ConnectorRow, *, auto_restart_column: bool) -> list[str]:
    cells = [
        row.name,
        row.kind,
        row.target,
        row.state.value if row.state is not None else "no status yet",
        f"{row.running}/{row.total}",
        ",".join(map(str, row.failed_tasks)) or NO_STATUS,
        batch_summary(row.last_batch, row.total) or NO_STATUS,
    ]
    return cells + ([_auto_restart_cell(row.auto_restarts)] if auto_restart_column else [])


def _task_cells(task: TaskRow) -> list[str]:
    return [str(task.task), task.state.value, task.worker_id or NO_STATUS, task.trace]


def _print_notes(view: StatusView) -> None:
    if view.notes:
        print()
        for note in view.notes:
            print(f"note: {note}")


def _auto_restart_cell(status: AutoRestartStatus | None) -> str:
    if status is None:
        return NO_STATUS
    return f"{status.count} (max reached)" if status.next_restart_ms is None else str(status.count)


def _plain(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [headers, *rows]) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in [headers, *rows]]
    return "\n".join(lines)


def _rich_tables(headers: list[str], rows: list[list[str]], task_rows: list[list[str]], view: StatusView) -> None:
    from rich.console import Console  # rich: only on a terminal
    from rich.table import Table

    console = Console()
    table = Table(*headers)
    for cells, row in zip(rows, view.rows, strict=True):
        table.add_row(*cells, style="red" if row.failed else None)
    console.print(table)
    if task_rows:
        tasks = Table(*TASK_HEADERS)
        for cells, task in zip(task_rows, view.tasks, strict=True):
            tasks.add_row(*cells, style="red" if task.state is InstanceState.FAILED else None)
        console.print(tasks)
