"""Markdown plan for a pull-request comment: a summary table, then collapsible details."""

from __future__ import annotations

import html
import re

from reconciler.core.diagnostics import Severity
from reconciler.core.plan import Action, ActionKind, Plan
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

TITLE = "## Connector reconciler plan"
_BACKTICKS = re.compile(r"`+")


def render_markdown(plan: Plan, *, summary: bool = True) -> str:
    lines = [TITLE, "", f"**{summary_line(plan)}**" if summary else "", ""]
    if plan.has_changes:
        lines += _table(plan) + [""]
        for name, actions in by_connector(plan):
            lines += _details(name, actions) + [""]
    lines += _sections(plan)
    return "\n".join(_squeeze_blank(lines)).rstrip("\n") + "\n"


def _squeeze_blank(lines: list[str]) -> list[str]:
    """At most one blank line in a row (the pieces each add their own separators)."""
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return out


def _table(plan: Plan) -> list[str]:
    rows = ["| Connector | Action | Details |", "| --- | --- | --- |"]
    for action in plan.actions:
        rows.append(f"| `{action.connector}` | {action.kind.value} | {_cell(_details_cell(action))} |")
    return rows


def _details_cell(action: Action) -> str:
    if action.kind is ActionKind.CREATE:
        state = action.to_state.value if action.to_state else "running"
        return f"state {state}, tasks.max {action.tasks_max}, class {action.connector_class}"
    if action.kind is ActionKind.UPDATE_CONFIG:
        return f"{len(action.changes)} field(s) changed"
    if action.kind in STATE_KINDS:
        return state_line(action).removeprefix("~ state: ").replace(" -> ", " → ")
    if action.kind is ActionKind.RESTART:
        return restart_line(action).removeprefix("~ ")
    if action.kind is ActionKind.TOPICS_RESET:
        return topics_reset_line(action).removeprefix("~ ")
    if action.kind is ActionKind.OFFSETS:
        return offsets_title(action).removeprefix("~ ") + f", {len(action.steps)} steps"
    if action.kind is ActionKind.RESTORE:
        return "committed " + " and ".join(action.restore) + " written back"
    return action.reason


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _details(name: str, actions: list[Action]) -> list[str]:
    symbol, text = headline(actions)
    summary = f"{symbol} <code>{html.escape(name)}</code> {html.escape(text)}"
    body: list[str] = []
    diff = [field_line(change) for action in actions for change in action.changes]
    diff += [_one_liner(action) for action in actions if action.kind in _ONE_LINERS]
    diff += [restore_line(a) for a in actions if a.kind is ActionKind.RESTORE and "target-state" in a.restore]
    if diff:
        body += _fenced("diff", diff)
    for action in actions:
        if action.kind is ActionKind.OFFSETS:
            body += _offsets(action)
    reasons = [f"- {a.kind.value}: {a.reason}" for a in actions if a.reason and a.kind is not ActionKind.OFFSETS]
    if reasons:
        body += [""] + reasons
    return [f"<details><summary>{summary}</summary>", ""] + body + ["", "</details>"]


_ONE_LINERS = STATE_KINDS | {ActionKind.RESTART, ActionKind.TOPICS_RESET}


def _one_liner(action: Action) -> str:
    if action.kind is ActionKind.TOPICS_RESET:
        return topics_reset_line(action)
    return state_line(action) if action.kind in STATE_KINDS else restart_line(action)


def _offsets(action: Action) -> list[str]:
    lines = ["", f"**{html.escape(offsets_title(action).removeprefix('~ '))}**", ""]
    lines += [f"{n}. {step.description}" for n, step in enumerate(action.steps, start=1)]
    moves = offset_moves(action)
    if moves:
        lines += [""] + _fenced("text", moves)
    return lines


def _fenced(language: str, lines: list[str]) -> list[str]:
    # A value containing a fence would close ours early: use a longer fence than any inside.
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + language] + lines + [fence]


def _sections(plan: Plan) -> list[str]:
    lines: list[str] = []
    for heading, severity in (("### Errors (apply refuses this plan)", Severity.ERROR), ("### Warnings", Severity.WARNING)):
        found = [d for d in plan.diagnostics if d.severity is severity]
        if found:
            lines += [heading, ""] + [f"- {_escape_line(d.render())}" for d in found] + [""]
    if plan.orphans:
        lines += ["### Orphaned connectors (deleted only with `--prune`)", ""]
        lines += [f"- `{name}`" for name in plan.orphans] + [""]
    if plan.unmanaged:
        lines += ["### Unmanaged connectors (not created by this reconciler; never touched)", ""]
        lines += [f"- `{name}`" for name in plan.unmanaged] + [""]
    if plan.requests_done:
        lines += ["### Requests already applied", ""]
        lines += [f"- {r.kind} `{r.request_id}` on `{r.connector}`" for r in plan.requests_done] + [""]
    return lines


def _escape_line(text: str) -> str:
    return html.escape(text, quote=False)
