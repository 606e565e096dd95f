"""The plan as a versioned JSON document, for tools and for `apply plan.json`.

The document is `Plan.model_dump(mode="json")` (keys in the model's field order, which is
stable) plus a `summary` object. Values are masked already (the planner masks), so the
document is safe to attach to a CI run.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from reconciler.core.plan import PLAN_FORMAT_VERSION, Plan
from reconciler.errors import ReconcilerError


def plan_document(plan: Plan) -> dict[str, Any]:
    doc = plan.model_dump(mode="json")
    doc["summary"] = plan.summary().model_dump(mode="json") | {"total": plan.summary().total}
    doc["has_changes"] = plan.has_changes
    return doc


def render_json(plan: Plan) -> str:
    return json.dumps(plan_document(plan), indent=2, ensure_ascii=False) + "\n"


def load_plan_json(text: str, *, origin: str = "plan") -> Plan:
    """Read a document written by `render_json` (derived keys are recomputed, not trusted).

    Raises ReconcilerError naming `origin` for anything that is not a plan of this version.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReconcilerError(f"{origin}: not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(doc, dict):
        raise ReconcilerError(f"{origin}: not a reconciler plan (expected a JSON object)")
    version = doc.get("format_version")
    if version != PLAN_FORMAT_VERSION:
        raise ReconcilerError(
            f"{origin}: plan format version {version!r} is not supported (expected {PLAN_FORMAT_VERSION!r})",
            hint="re-create the plan with this version of `reconciler plan --out`",
        )
    for derived in ("summary", "has_changes"):
        doc.pop(derived, None)
    try:
        return Plan.model_validate(doc)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ReconcilerError(f"{origin}: not a valid plan: {where}: {first['msg']}") from exc
