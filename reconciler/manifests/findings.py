"""A problem found in one document, before it has a position: path, message, hint.

Findings come from several checks (placeholders, Connect's rules, the JSON Schema, pydantic);
`merge` keeps one finding per problem, preferring the earlier, more specific check.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Sequence
from typing import Literal, NamedTuple

Path = tuple[str | int, ...]

# "key": point at the key (unknown field); "value": at the value, or at the parent when absent.
Anchor = Literal["key", "value"]

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Fields people write where another one is meant (e.g. from Connect's REST JSON or Strimzi).
_KNOWN_MISPLACEMENTS: dict[tuple[Path, str], str] = {
    ((), "name"): "the connector name goes in `metadata.name`",
    ((), "config"): "connector settings go under `spec.config`",
    ((), "class"): "the connector class goes in `spec.class`",
    (("spec",), "name"): "the connector name goes in `metadata.name`",
    (("spec",), "connector.class"): "use `class` instead",
    (("spec",), "tasks.max"): "use `tasksMax` instead",
    (("spec",), "tasks"): "use `tasksMax`",
    (("spec",), "initial_state"): "use `state`",
}


class Finding(NamedTuple):
    path: Path
    message: str
    hint: str | None = None
    anchor: Anchor = "value"
    # A whole-object check (pydantic model/field validator): its path is coarse, so a finer
    # finding with the same concern below it replaces it.
    coarse: bool = False


def format_path(path: Sequence[str | int]) -> str:
    """`spec.offsets.offsets[0].partition`, `spec.config["db.password"]`."""
    text = ""
    for element in path:
        if isinstance(element, int) and not isinstance(element, bool):
            text += f"[{element}]"
        elif _IDENTIFIER.fullmatch(name := str(element)):
            text += f".{name}" if text else name
        else:
            text += f"[{json.dumps(name)}]"
    return text


def unknown_field_hint(parent: Path, key: object, allowed: Iterable[str]) -> str | None:
    """'did you mean …?' for a misspelt field, or where the field belongs."""
    allowed = sorted(allowed)
    if not isinstance(key, str):
        return f"allowed fields: {', '.join(allowed)}" if allowed else None
    known = _KNOWN_MISPLACEMENTS.get((parent, key))
    if known:
        return known
    by_case = [name for name in allowed if name.lower() == key.lower()]
    close = by_case or difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    if close:
        return f"did you mean `{close[0]}`?"
    if parent == ("spec",) and "." in key:
        return "connector settings go under `spec.config`"
    return f"allowed fields: {', '.join(allowed)}" if allowed else None


def choice_hint(value: object, choices: Sequence[str]) -> str:
    listed = "one of " + ", ".join(choices)
    if isinstance(value, str):
        close = [c for c in choices if c.lower() == value.lower()] or difflib.get_close_matches(value, choices, n=1)
        if close:
            return f"did you mean `{close[0]}`? It is {listed}"
    return listed


def merge(stages: Iterable[Iterable[Finding]]) -> list[Finding]:
    """One finding per problem: earlier stages win over later ones on the same part of a document.

    A later finding is dropped when an earlier one is at its path or above it (that subtree is
    already reported); a coarse later finding is also dropped when an earlier one is below it.
    Within a stage, the first finding at a path wins (e.g. jsonschema's `enum` and `type` for
    the same value).
    """
    kept: list[Finding] = []
    for stage in stages:
        earlier = list(kept)
        seen_here: set[Path] = set()
        for finding in stage:
            if finding.path in seen_here or _covered(finding, earlier):
                continue
            seen_here.add(finding.path)
            kept.append(finding)
    return kept


def _covered(finding: Finding, earlier: Sequence[Finding]) -> bool:
    for other in earlier:
        if finding.path[: len(other.path)] == other.path:
            return True
        if finding.coarse and other.path[: len(finding.path)] == finding.path:
            return True
    return False


def describe_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"a {type(value).__name__}"


def show_value(value: object) -> str:
    """A short, quoted rendering of a scalar for messages ('' for containers)."""
    if isinstance(value, dict | list):
        return ""
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "…'"
