"""Renderers: the same plan value as text (terminals, CI logs), Markdown (PR comments) and JSON,
the bodies of Connect's REST answers (`connect_rest`), and the read models `reconciler status`
and `offsets --history` print and the REST API serves (`status_view`, `offsets_history`).
Pure: values in, text out.

May import `core`, `connectors` (a plugin's kind), the replayed values of `kafka.replay` and the
leaves; no Kafka client, Spark or CLI code.
"""

from __future__ import annotations

from typing import Literal

from reconciler.core.plan import Plan
from reconciler.render.json import load_plan_json, plan_document, render_json
from reconciler.render.markdown import render_markdown
from reconciler.render.text import render_text

Format = Literal["text", "markdown", "json"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "json")


def render(plan: Plan, fmt: Format, *, colour: bool = False, summary: bool = True) -> str:
    """The plan in `fmt`; `colour` only affects text. `summary=False`: without the summary line
    (text, Markdown), for a command that ends with a verdict of its own (`drift`)."""
    if fmt == "json":
        return render_json(plan)
    if fmt == "markdown":
        return render_markdown(plan, summary=summary)
    return render_text(plan, colour=colour, summary=summary)


__all__ = [
    "FORMATS",
    "Format",
    "load_plan_json",
    "plan_document",
    "render",
    "render_json",
    "render_markdown",
    "render_text",
]
