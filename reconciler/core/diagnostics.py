"""Diagnostics: problems reported to users, Terraform-style (severity, summary, address, hint)."""

from __future__ import annotations

import enum
from typing import TypedDict, Unpack

from pydantic import BaseModel, ConfigDict

from reconciler.core.models import SourceRef


class Severity(enum.StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"  # nothing wrong: something the user may want to know (e.g. what was not checked)


class Diagnostic(BaseModel):
    model_config = ConfigDict(frozen=True)

    severity: Severity
    summary: str
    # Where: a manifest position and/or the dotted field path (e.g. `spec.offsets.offsets[0]`).
    source: SourceRef | None = None
    field_path: str = ""
    connector: str | None = None
    hint: str | None = None

    def render(self) -> str:
        """`file:line:col: field.path: message (hint: …)` — one line, grep-able."""
        parts = []
        if self.source is not None:
            parts.append(str(self.source))
        elif self.connector is not None:
            parts.append(f"connector {self.connector}")
        if self.field_path:
            parts.append(self.field_path)
        prefix = ": ".join(parts)
        text = f"{prefix}: {self.summary}" if prefix else self.summary
        if self.severity is not Severity.ERROR:
            text = f"{self.severity.value}: {text}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


class Where(TypedDict, total=False):
    """Where a diagnostic points, and what to do about it (the optional fields of `Diagnostic`)."""

    source: SourceRef | None
    field_path: str
    connector: str | None
    hint: str | None


def diagnostic(severity: Severity, summary: str, **where: Unpack[Where]) -> Diagnostic:
    """The one constructor; `error`, `warning` and `info` name its severity."""
    return Diagnostic(severity=severity, summary=summary, **where)


def error(summary: str, **where: Unpack[Where]) -> Diagnostic:
    return diagnostic(Severity.ERROR, summary, **where)


def warning(summary: str, **where: Unpack[Where]) -> Diagnostic:
    return diagnostic(Severity.WARNING, summary, **where)


def info(summary: str, **where: Unpack[Where]) -> Diagnostic:
    return diagnostic(Severity.INFO, summary, **where)


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in diagnostics)
