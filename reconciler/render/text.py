"""Terraform-like text plan: `+ ~ -` per connector and per field, then a one-line summary."""

from __future__ import annotations

from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.plan import Action, ActionKind, OffsetsStepKind, Plan
from reconciler.render.common import (
    STATE_KINDS,
    by_connector,
    field_line,
    headline,
    offset_moves,
    offsets_title,
    restart_line,
    restore_line,
    state_line,
    summary_line,
    topics_reset_line,
)

_COLOURS = {"+": "32", "~": "33", "-": "31", "!": "33;1", "#": "2"}
FIELD_INDENT = " " * 6


def render_text(plan: Plan, *, colour: bool = False, summary: bool = True) -> str:
    """The plan for a terminal or a CI log. `colour` adds ANSI colours (for a TTY only);
    `summary=False` leaves out the last line (`render.render`)."""
    lines: list[str] = []
    if plan.has_changes:
        lines += ["Reconciler will perform the following actions:", ""]
    for name, actions in by_connector(plan):
        lines += _connector_block(name, actions)
        lines.append("")
    lines += _sections(plan)
    if summary:
        lines.append(summary_line(plan))
    while lines and not lines[-1]:
        lines.pop()
    text = "".join(line + "\n" for line in lines)
    return _colourise(text) if colour else text


def _connector_block(name: str, actions: list[Action]) -> list[str]:
    symbol, text = headline(actions)
    lines = [f"  {symbol} connector \"{name}\" {text}"]
    for action in actions:
        lines += [FIELD_INDENT + line for line in _action_lines(action)]
    return lines


def _action_lines(action: Action) -> list[str]:
    lines = [field_line(change) for change in action.changes]
    if action.kind in STATE_KINDS:
        lines.append(state_line(action))
    elif action.kind is ActionKind.RESTART:
        lines.append(restart_line(action))
    elif action.kind is ActionKind.TOPICS_RESET:
        lines.append(topics_reset_line(action))
    elif action.kind is ActionKind.RESTORE and "target-state" in action.restore:
        lines.append(restore_line(action))
    elif action.kind is ActionKind.OFFSETS:
        lines += _offsets_lines(action)
    if action.reason and action.kind is not ActionKind.OFFSETS:
        lines.append(f"# {action.reason}")
    return lines


def _offsets_lines(action: Action) -> list[str]:
    lines = [offsets_title(action) + ":"]
    moves = [" " * 7 + move for move in offset_moves(action)]
    for number, step in enumerate(action.steps, start=1):
        lines.append(f"    {number}. {step.description}")
        if step.kind in (OffsetsStepKind.ALTER, OffsetsStepKind.RESET):
            lines += moves
            moves = []
    return lines + moves  # a plan without an alter step still shows its partitions


def orphans_heading(plan: Plan) -> str:
    """What a plan's orphans are and what becomes of them. With --prune they are listed only when
    the planner refused to delete them all (no manifests and no --allow-empty): "deleted only with
    --prune" would tell the user to pass the flag they passed."""
    fate = "not deleted: --prune with no manifests needs --allow-empty" if plan.prune else "deleted only with --prune"
    return f"orphaned connectors (created by this reconciler, in no manifest; {fate})"


def _sections(plan: Plan) -> list[str]:
    lines: list[str] = []
    if plan.diagnostics:
        lines += ["Diagnostics:"] + [f"  ! {_severity(d)}{d.render()}" for d in plan.diagnostics] + [""]
    if plan.orphans:
        heading = orphans_heading(plan)
        lines.append(f"{heading[0].upper()}{heading[1:]}:")
        lines += [f"  - {name}" for name in plan.orphans] + [""]
    if plan.unmanaged:
        lines.append("Unmanaged connectors (in no manifest, not created by this reconciler; never touched):")
        lines += [f"  - {name}" for name in plan.unmanaged] + [""]
    if plan.requests_done:
        lines.append("Requests already applied (not run again):")
        lines += [f"  - {r.kind} {r.request_id} on connector \"{r.connector}\"" for r in plan.requests_done]
        lines.append("")
    return lines


def _severity(diagnostic: Diagnostic) -> str:
    return "error: " if diagnostic.severity is Severity.ERROR else ""  # a warning says so itself


def _colourise(text: str) -> str:
    out = []
    for line in text.split("\n"):
        marker = line.lstrip()[:1]
        code = _COLOURS.get(marker)
        out.append(f"\x1b[{code}m{line}\x1b[0m" if code else line)
    return "\n".join(out)
