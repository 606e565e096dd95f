"""What `run` and `watch` say while they run: as lines for a person (`--log-format text`), or as
one JSON object per event for a log pipeline (`--log-format json`, see `reconciler.cli.logs`).

Both views get the same calls: a tick's report, a resync pass, an error, a notice. Orphans
(connectors this reconciler created that no manifest declares any more) are reported when the
set of them changes, since `--prune` is off by default and they would otherwise go unseen.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from reconciler.core.live import AutoRestartStatus, InstanceState
from reconciler.errors import ReconcilerError
from reconciler.render import render_text
from reconciler.render.common import trace_summary
from reconciler.render.connect_rest import auto_restart_doc, iso_utc
from reconciler.render.json import plan_document
from reconciler.render.text import orphans_heading

if TYPE_CHECKING:
    from reconciler.app.apply import ApplyOutcome
    from reconciler.app.tick import TickReport
    from reconciler.core.diagnostics import Diagnostic
    from reconciler.core.plan import Plan
    from reconciler.offsets.model import OffsetsOutcome
    from reconciler.runtime.batch.reports import ConnectorReport

EVENTS = logging.getLogger("reconciler.events")
LOG = logging.getLogger("reconciler.run")


class TextOutput:
    """Lines on stdout (reports) and stderr (problems), as `run` always printed them."""

    def __init__(self) -> None:
        self._orphans: list[str] | None = None

    def report(self, report: TickReport) -> None:
        print_report(report)
        if report.applied is not None:
            self._orphans_of(report.applied.plan)

    def resynced(self, applied: ApplyOutcome, offsets: Sequence[OffsetsOutcome]) -> None:
        _print_plan(applied.plan)
        for outcome in offsets:
            print(outcome.render())
        changes = len(applied.plan.actions)
        print(f"resync: {changes} change(s) applied" if changes else "resync: no drift", flush=True)
        self._orphans_of(applied.plan)

    def applied_before_failure(self, applied: ApplyOutcome) -> None:
        """What a tick's apply committed before its batch failed (the error follows)."""
        if applied.plan.has_changes:
            print("applied before the batch failed:", flush=True)
        _print_plan(applied.plan)
        sys.stdout.flush()

    def error(self, exc: ReconcilerError) -> None:
        print_error(exc)

    def notice(self, message: str, **fields: Any) -> None:
        print(f"{stamp()} {message}", flush=True)  # a log line (the REST URL, a reload, the stop): stamped

    def warning(self, message: str, **fields: Any) -> None:
        print(f"{stamp()} {message}", file=sys.stderr, flush=True)  # a log line: stamped like errors

    def invalid_manifests(self, diagnostics: Sequence[Diagnostic]) -> None:
        lines = [f"  {diagnostic.render()}" for diagnostic in diagnostics]  # under it, as a hint under an error
        self.warning("\n".join(["manifests changed but are invalid; still running the previous valid ones", *lines]))

    def manifests_still_invalid(self, problems: int) -> None:
        """Under each tick while the files stay invalid: the edit above may be long scrolled away."""
        print(still_invalid_line(problems), flush=True)

    def _orphans_of(self, plan: Plan) -> None:
        """Each orphan once per process, when it becomes one (not at every tick of a loop); a
        plan with changes has listed them already."""
        if plan.orphans != self._orphans and not plan.has_changes:
            for name in sorted(set(plan.orphans) - set(self._orphans or ())):
                LOG.warning(
                    "orphan: connector %s is in no manifest and is left as it is (this reconciler created it): "
                    "declare it again, or %s", name,
                    "add --allow-empty to delete it with the others" if plan.prune else "delete it with --prune",
                )
            if self._orphans and not plan.orphans:
                print(f"{orphans_heading(plan)}: none", flush=True)
        self._orphans = list(plan.orphans)


class JsonOutput:
    """One JSON object per event on the `reconciler.events` logger (`reconciler.cli.logs`)."""

    def __init__(self) -> None:
        self._orphans: list[str] | None = None

    def report(self, report: TickReport) -> None:
        if report.applied is not None:
            self._plan(report.applied.plan)
        for outcome in report.offsets:
            _event(logging.INFO, "offsets-request", outcome.render())
        moved = sum(t.records for c in report.connectors for t in c.tasks)
        _event(
            logging.INFO, "tick", report_lines(report)[0],
            config_offset=report.config_end, task_batches=report.works, records_moved=moved,
            records_written=report.records_written, connectors=[_connector_doc(c) for c in report.connectors],
        )

    def resynced(self, applied: ApplyOutcome, offsets: Sequence[OffsetsOutcome]) -> None:
        self._plan(applied.plan)
        for outcome in offsets:
            _event(logging.INFO, "offsets-request", outcome.render())
        _event(logging.INFO, "resync", "resync done", changes=len(applied.plan.actions))

    def applied_before_failure(self, applied: ApplyOutcome) -> None:
        """What a tick's apply committed before its batch failed (the error follows)."""
        self._plan(applied.plan)

    def error(self, exc: ReconcilerError) -> None:
        _event(logging.ERROR, "error", exc.render().removeprefix("error: "))

    def notice(self, message: str, **fields: Any) -> None:
        _event(logging.INFO, str(fields.pop("event", "notice")), message, **fields)

    def warning(self, message: str, **fields: Any) -> None:
        _event(logging.WARNING, str(fields.pop("event", "warning")), message, **fields)

    def invalid_manifests(self, diagnostics: Sequence[Diagnostic]) -> None:
        _event(
            logging.WARNING, "manifests-invalid",
            "manifests changed but are invalid; still running the previous valid ones",
            diagnostics=[d.render() for d in diagnostics],
        )

    def manifests_still_invalid(self, problems: int) -> None:
        _event(logging.WARNING, "manifests-still-invalid", still_invalid_line(problems).strip(), problems=problems)

    def _plan(self, plan: Plan) -> None:
        if plan.has_changes:
            _event(logging.INFO, "plan-applied", f"{len(plan.actions)} change(s) applied", plan=plan_document(plan))
        if plan.orphans != self._orphans and (plan.orphans or self._orphans):
            _event(logging.WARNING, "orphans", orphans_heading(plan), connectors=list(plan.orphans))
        self._orphans = list(plan.orphans)


Output = TextOutput | JsonOutput


def make_output(log_format: str) -> Output:
    return JsonOutput() if log_format == "json" else TextOutput()


def _event(level: int, event: str, message: str, **fields: Any) -> None:
    EVENTS.log(level, message, extra={"fields": {"event": event, **fields}})


def _connector_doc(connector: ConnectorReport) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": connector.name,
        "target": connector.target.value,
        "state": None if connector.state is None else connector.state.value,
        "tasks": [
            {"id": t.task, "state": None if t.state is None else t.state.value, "records": t.records, "ran": t.ran}
            for t in connector.tasks
        ],
    }
    if connector.restarted is not None and connector.restarted.restarts_anything:
        doc["restarted"] = {"connector": connector.restarted.connector, "tasks": list(connector.restarted.tasks)}
    if connector.auto_restarted is not None:
        doc["autoRestart"] = auto_restart_doc(connector.auto_restarted)
    failed = [_trace_line(t.trace) for t in connector.tasks if t.state is InstanceState.FAILED and t.trace]
    if connector.state is InstanceState.FAILED and connector.trace:
        failed.insert(0, _trace_line(connector.trace))
    if failed:
        doc["errors"] = failed
    return doc


# --- text -----------------------------------------------------------------------------------


def print_report(report: TickReport) -> None:
    applied = report.applied
    if applied is not None:
        _print_plan(applied.plan)
    for outcome in report.offsets:
        print(outcome.render())
    header, *rest = report_lines(report)
    print(f"{stamp()} {header}")  # one timestamp a tick: the lines below belong to it
    for line in rest:
        print(line)
    sys.stdout.flush()


def stamp() -> str:
    """UTC time to the millisecond, as log lines show it."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def _print_plan(plan: Plan) -> None:
    if plan.has_changes:
        sys.stdout.write(render_text(plan, colour=sys.stdout.isatty() and "NO_COLOR" not in os.environ))


def still_invalid_line(problems: int) -> str:
    return (f"  manifests on disk: invalid ({problems} problem(s)), still running the previous valid ones "
            "(/readyz: degraded)")


def report_lines(report: TickReport) -> list[str]:
    moved = sum(t.records for c in report.connectors for t in c.tasks)
    lines = [
        f"tick (config offset {report.config_end}): {len(report.connectors)} connector(s), "
        f"{report.works} task batch(es), {moved} record(s) moved, {report.records_written} "
        "config/status record(s) written"
    ]
    lines += [_connector_line(c) for c in report.connectors]
    if report.left_to_connect:
        lines.append(f"  left to the group's Kafka Connect workers (not Python connectors): {', '.join(report.left_to_connect)}")
    return lines


def _connector_line(connector: ConnectorReport) -> str:
    state = connector.state.value if connector.state is not None else "no status"
    line = f"  {connector.name}: {state}"
    if connector.restarted is not None and connector.restarted.restarts_anything:
        what = (["connector"] if connector.restarted.connector else []) + [f"task {t}" for t in connector.restarted.tasks]
        line += f" (restarted {', '.join(what)})"
    if connector.auto_restarted is not None:
        line += f" (automatic restart {connector.auto_restarted.count}{_next_attempt(connector.auto_restarted)})"
    tasks = []
    for task in connector.tasks:
        state_name = task.state.value if task.state is not None else "-"
        tasks.append(f"task {task.task} {state_name}" + (f" ({task.records} records)" if task.ran else ""))
    if tasks:
        line += "; " + ", ".join(tasks)
    if connector.state is InstanceState.FAILED and connector.trace:
        line += f"\n    connector: {_trace_line(connector.trace)}"
    for task in connector.tasks:
        if task.state is InstanceState.FAILED and task.trace:
            line += f"\n    task {task.task}: {_trace_line(task.trace)}"
    return line


def _next_attempt(status: AutoRestartStatus) -> str:
    if status.next_restart_ms is None:
        return ", the last: maxRestarts reached"
    return f", next one not before {iso_utc(status.next_restart_ms)} if it fails again"


def _trace_line(trace: str) -> str:
    return trace_summary(trace)


def failure_summary(report: TickReport) -> list[str]:
    """What failed in this tick and what to do about it; empty when nothing did."""
    offsets = [
        f"  offsets request {o.request_id} of {o.connector}: {o.status}: {o.message}" for o in report.offsets if not o.ok
    ]
    instances = []
    for connector in report.connectors:
        if connector.state is InstanceState.FAILED:
            instances.append(f"  connector {connector.name} FAILED: {_trace_line(connector.trace or '')}")
        instances += [
            f"  task {connector.name}/{task.task} FAILED: {_trace_line(task.trace or '')}"
            for task in connector.tasks
            if task.state is InstanceState.FAILED
        ]
    if not offsets and not instances:
        return []
    lines = [f"run --once: {len(offsets) + len(instances)} failure(s):", *offsets, *instances, "what to do:"]
    if offsets:
        lines.append(
            "  - offsets: the connector stays STOPPED until its request completes; fix the cause and run "
            "again (the request resumes at the step that failed; `reconciler plan` shows it pending)"
        )
    if instances:
        lines.append(
            "  - FAILED connectors and tasks: read the trace with `reconciler status NAME`; fix the cause "
            "(config or data), then commit a new `spec.restart` id (a FAILED instance stays FAILED until "
            "restarted; a config change restarts a connector)"
        )
    return lines


def print_error(exc: ReconcilerError) -> None:
    print(f"{stamp()} {exc.render()}", file=sys.stderr, flush=True)
