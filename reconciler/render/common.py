"""Pieces shared by the text and Markdown renderers: wording, value formatting, grouping.

Renderers only read the plan; every value in it is already masked by the planner, and
sensitive fields are printed as the mask, never quoted as if they were a value.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Mapping

from reconciler.core.diagnostics import Severity
from reconciler.core.models import OffsetEntry
from reconciler.core.plan import Action, ActionKind, FieldChange, FieldOp, Plan, Summary
from reconciler.core.redact import MASK

NO_CHANGES = "No changes. Live state matches the manifests."
NO_CHANGES_TO_APPLY = "No changes to apply."
STATE_KINDS = frozenset({ActionKind.PAUSE, ActionKind.RESUME, ActionKind.STOP})


def summary_line(plan: Plan) -> str:
    """`Plan: 1 to create, 2 to update, …`, the no-changes sentence, or that apply refuses it;
    orphans kept are counted (live state does not match the manifests while one exists)."""
    errors = sum(1 for d in plan.diagnostics if d.severity is Severity.ERROR)
    if errors:
        return f"Plan refused: {_count(errors, 'error')} (see Diagnostics); `apply` would write nothing."
    kept = f" {_count(len(plan.orphans), 'orphaned connector')} kept (--prune deletes)." if plan.orphans else ""
    if not plan.has_changes:
        return NO_CHANGES_TO_APPLY + kept if kept else NO_CHANGES
    s: Summary = plan.summary()
    # Named only when there is one: the line stays as it was for every other plan.
    resets = f", {_count(s.topics_reset, 'active-topics reset')}" if s.topics_reset else ""
    return (
        f"Plan: {s.create} to create, {s.update} to update, {s.delete} to delete, "
        f"{_count(s.state, 'state change')}, {_count(s.restart, 'restart')}, "
        f"{_count(s.offsets, 'offsets request')}{resets}." + kept
    )


def trace_summary(trace: str) -> str:
    """A status trace on one line, naming the error (what `status` and `run` show of a FAILED
    instance's trace; the full trace is in `status --format json`):

    - a Python traceback: its exception, the text after the last frame (usually the last line;
      the first, `Traceback (most recent call last):`, says nothing);
    - a Java stack trace (a Java worker's): the exception, the lines before the first `at` frame;
    - anything else, e.g. a message of ours with a hint on a continuation line: all of it.

    Lines are joined with "; ", so the actual error is never cut off."""
    lines = trace.strip().splitlines()
    if lines and lines[0].startswith(_PYTHON_TRACEBACK):
        lines = _python_exception(lines)
    else:
        lines = list(itertools.takewhile(lambda line: not _JAVA_FRAME.match(line), lines))
    return "; ".join(line.strip() for line in lines if line.strip())


_PYTHON_TRACEBACK = "Traceback"  # "Traceback (most recent call last):"
_JAVA_FRAME = re.compile(r"\s+at \S+\(.*\)\s*$")  # Throwable.printStackTrace's "\tat pkg.Class.method(File.java:12)"


def _python_exception(lines: list[str]) -> list[str]:
    """The exception text of a traceback: after the last `  File "…"` line and its source lines
    (indented by 4, carets too), up to the end (a message on several lines, notes)."""
    last_frame = max((i for i, line in enumerate(lines) if line.startswith('  File "')), default=0)
    after = itertools.dropwhile(lambda line: line.startswith("    ") or not line.strip(), lines[last_frame + 1 :])
    return list(after) or lines[-1:]


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def by_connector(plan: Plan) -> list[tuple[str, list[Action]]]:
    """Actions grouped per connector, connectors in the order of their first action.

    Plans are sorted by phase, so creates come first and deletes last, as they will run.
    """
    groups: dict[str, list[Action]] = {}
    for action in plan.actions:
        groups.setdefault(action.connector, []).append(action)
    return list(groups.items())


def headline(actions: list[Action]) -> tuple[str, str]:
    """(symbol, text) for a connector's header line, from the most significant action."""
    kinds = {a.kind: a for a in actions}
    if ActionKind.CREATE in kinds:
        create = kinds[ActionKind.CREATE]
        state = create.to_state.value if create.to_state else "running"
        return "+", f"will be created (state: {state}, tasks.max: {create.tasks_max}, class: {create.connector_class})"
    if ActionKind.DELETE in kinds:
        return "-", "will be deleted"
    if ActionKind.UPDATE_CONFIG in kinds:
        return "~", "config will be updated"
    if STATE_KINDS & kinds.keys():
        return "~", "state will change"
    if ActionKind.RESTORE in kinds:
        return "~", "will get its committed " + " and ".join(kinds[ActionKind.RESTORE].restore) + " back"
    if ActionKind.OFFSETS in kinds:
        offsets = kinds[ActionKind.OFFSETS]
        verb = "reset" if offsets.offsets_action and offsets.offsets_action.value == "reset" else "altered"
        return "~", f"offsets will be {verb}"
    if ActionKind.RESTART not in kinds and ActionKind.TOPICS_RESET in kinds:
        return "~", "active topics will be reset"
    return "~", "will be restarted"


def value(text: str | None, sensitive: bool = False) -> str:
    """A config value for display: JSON-quoted, `null`, or the mask for secrets."""
    if text is None:
        return "null"
    if sensitive or text == MASK:
        return MASK
    return json.dumps(text, ensure_ascii=False)


def field_line(change: FieldChange) -> str:
    """`+ key: "v"`, `~ key: "a" -> "b"`, `- key: "old"` (without indentation)."""
    if change.op == FieldOp.ADD:
        return f"+ {change.key}: {value(change.new, change.sensitive)}"
    if change.op == FieldOp.REMOVE:
        return f"- {change.key}: {value(change.old, change.sensitive)}"
    if change.sensitive and change.old is not None and change.new is not None:
        return f"~ {change.key}: (sensitive value changed)"  # docs/product-rules.md#secrets: changed, never its value
    return f"~ {change.key}: {value(change.old, change.sensitive)} -> {value(change.new, change.sensitive)}"


def state_line(action: Action) -> str:
    old = action.from_state.value if action.from_state else "?"
    new = action.to_state.value if action.to_state else "?"
    return f"~ state: {old} -> {new}"


def restore_line(action: Action) -> str:
    """`~ state (held by a worker reading uncommitted records): paused -> running`."""
    old = action.from_state.value if action.from_state else "none"
    new = action.to_state.value if action.to_state else "none"
    return f"~ state (held uncommitted): {old} -> {new}"


def restart_line(action: Action) -> str:
    flags = [f"id {action.request_id}"]
    if action.include_tasks:
        flags.append("includeTasks")
    if action.only_failed:
        flags.append("onlyFailed")
    return f"~ restart requested ({', '.join(flags)})"


def topics_reset_line(action: Action) -> str:
    """`~ resets 2 active topic(s): a, b (id r1)`: what a topics reset forgets (KIP-558)."""
    topics = f": {', '.join(action.topics)}" if action.topics else ""
    return f"~ resets {len(action.topics)} active topic(s){topics} (id {action.request_id})"


def offsets_title(action: Action) -> str:
    kind = action.offsets_action.value if action.offsets_action else "alter"
    role = "sink" if action.is_sink else "source"
    status = ", resuming an interrupted request" if action.request_status == "in-progress" else ""
    return f"~ offsets request {action.request_id} ({kind}, {role} connector{status})"


def compact(mapping: Mapping[str, object] | None) -> str:
    """A partition/offset map on one line, keys in the order written."""
    if mapping is None:
        return "null"
    return json.dumps(dict(mapping), ensure_ascii=False, separators=(", ", ": "))


def offset_moves(action: Action) -> list[str]:
    """One line per partition: `{partition}: {current} -> {target}` (current when known).

    A reset names no partitions itself: every partition with a current offset is listed.
    """
    current = {compact(e.partition): e.offset for e in action.current_offsets}
    if not action.offsets and action.offsets_action is not None and action.offsets_action.value == "reset":
        return [f"{key}: {compact(offset)} -> null (reset)" for key, offset in current.items()]
    return [_move(entry, current) for entry in action.offsets]


def _move(entry: OffsetEntry, current: Mapping[str, Mapping[str, object] | None]) -> str:
    key = compact(entry.partition)
    target = compact(entry.offset) if entry.offset is not None else "null (offset removed)"
    if key in current:
        return f"{key}: {compact(current[key])} -> {target}"
    return f"{key}: -> {target}"
