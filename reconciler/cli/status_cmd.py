"""`reconciler status [NAME] [--format table|json]`: connector and task statuses from Kafka.

JSON follows Connect's REST shapes (docs/compatibility.md#rest-shapes), so scripts written against a
Connect cluster keep working: with NAME, `GET /connectors/{name}/status`; without, the
`GET /connectors?expand=status` object `{name: {"status": …}}`. As in Connect, a connector
without any status record (e.g. applied but never run) has no status: `status NAME --format
json` is an error and the JSON listing leaves it out; tables still show it, as "no status yet".

A connector with `spec.autoRestart` history also shows it: how many automatic restarts in a
row, when the last was made and when the next may be (docs/runtime.md#auto-restart). In JSON
that is an `autoRestart` object inside the status document, named after Strimzi's
`AutoRestartStatus` fields; a connector without history keeps exactly Connect's shape.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime, timezone
from typing import Any

from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.core.live import AutoRestartStatus, InstanceState, InstanceStatus, LiveConnector, LiveState
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
    from reconciler.kafka.reader import read_live_state

    live = read_live_state(kafka_settings(args))
    if args.name is not None:
        connector = live.connector(args.name)
        doc = connector_status(connector) if connector is not None else None
        if connector is not None and args.format == "table" and (doc is not None or connector.exists):
            _print_table([connector], details=True, history=live.auto_restarts)  # may be "no status yet"
            return EXIT_OK
        if doc is None:  # Connect's 404
            raise ReconcilerError(f"No status found for connector {args.name}")
        print(json.dumps(with_auto_restart(doc, live), indent=2, ensure_ascii=False))
        return EXIT_OK
    if args.format == "json":
        listing = all_statuses(live)
        for entry in listing.values():
            with_auto_restart(entry["status"], live)
        print(json.dumps(listing, indent=2, ensure_ascii=False))
    else:
        _print_table(listed(live), details=False, history=live.auto_restarts)
    return EXIT_OK


def auto_restart_doc(status: AutoRestartStatus) -> dict[str, Any]:
    """Strimzi's `AutoRestartStatus` fields, plus when the next attempt may be (null: none,
    `maxRestarts` reached)."""
    upcoming = status.next_restart_ms
    return {
        "count": status.count,
        "lastRestartTimestamp": iso_utc(status.last_restart_ms),
        "nextRestartTimestamp": None if upcoming is None else iso_utc(upcoming),
    }


def iso_utc(ms: int) -> str:
    """Strimzi's timestamp format, `yyyy-MM-ddTHH:mm:ssZ` in UTC."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def with_auto_restart(doc: dict[str, Any], live: LiveState) -> dict[str, Any]:
    """`doc` (a status document) with the connector's auto-restart history, if it has one."""
    history = live.auto_restarts.get(doc["name"])
    if history is not None:
        doc["autoRestart"] = auto_restart_doc(history)
    return doc


def listed(live: LiveState) -> list[LiveConnector]:
    """Connectors that exist (have a config) or still have a status, by name."""
    return [c for _, c in sorted(live.connectors.items()) if c.exists or c.connector_status is not None]


def connector_type(connector: LiveConnector) -> str:
    """`sink` iff the config subscribes to topics (what every sink must set), else `source`."""
    if connector.config is None:
        return "unknown"
    return "sink" if "topics" in connector.config or "topics.regex" in connector.config else "source"


def _state_doc(status: InstanceStatus, task_id: int | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {} if task_id is None else {"id": task_id}
    doc["state"] = status.state.value
    doc["worker_id"] = status.worker_id
    if status.trace:  # Connect omits a null or empty trace
        doc["trace"] = status.trace
    return doc


def connector_status(connector: LiveConnector) -> dict[str, Any] | None:
    """`GET /connectors/{name}/status`, or None where Connect answers 404."""
    if connector.connector_status is None:
        return None
    return {
        "name": connector.name,
        "connector": _state_doc(connector.connector_status),
        "tasks": [_state_doc(status, task) for task, status in sorted(connector.task_statuses.items())],
        "type": connector_type(connector),
    }


def all_statuses(live: LiveState) -> dict[str, Any]:
    """`GET /connectors?expand=status`: existing connectors that have a status."""
    result: dict[str, Any] = {}
    for name, connector in sorted(live.connectors.items()):
        doc = connector_status(connector) if connector.exists else None
        if doc is not None:
            result[name] = {"status": doc}
    return result


def _row(connector: LiveConnector) -> list[str]:
    tasks = connector.task_statuses
    total = connector.task_count if connector.task_count is not None else len(tasks)
    running = sum(1 for status in tasks.values() if status.state is InstanceState.RUNNING)
    failed = sorted(task for task, status in tasks.items() if status.state is InstanceState.FAILED)
    state = connector.connector_status.state.value if connector.connector_status else "no status yet"
    target = connector.target_state.value if connector.exists else "(deleted)"
    return [
        connector.name,
        connector_type(connector),
        target,
        state,
        f"{running}/{total}",
        ",".join(map(str, failed)) or NO_STATUS,
    ]


HEADERS = ["CONNECTOR", "TYPE", "TARGET", "STATE", "TASKS RUNNING", "FAILED TASKS"]


def _task_rows(connector: LiveConnector) -> list[list[str]]:
    rows = []
    for task, status in sorted(connector.task_statuses.items()):
        trace = (status.trace or "").strip().splitlines()
        rows.append([str(task), status.state.value, status.worker_id or NO_STATUS, trace[0] if trace else ""])
    return rows


def _print_table(
    connectors: list[LiveConnector], *, details: bool, history: dict[str, AutoRestartStatus]
) -> None:
    if not connectors:
        print("No connectors.")
        return
    headers, rows = list(HEADERS), [_row(c) for c in connectors]
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
