"""Checks the schema cannot express, run on the raw document so each points at its exact key.

`document_findings` are errors; `literal_secrets` are warnings (errors with `validate --strict`).

They tolerate any shape (the schema reports shapes), and reuse the pure rules of the core
(`core.offsets_rules`) and the models' constants, so the loader and the models never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.connectors.registry import connector_kind
from reconciler.core.kinds import Kind
from reconciler.core.models import BOOKKEEPING_KEYS
from reconciler.core.normalize import config_value
from reconciler.core.offsets_rules import check_request
from reconciler.core.redact import literal_secrets as redact_literal_secrets
from reconciler.manifests.findings import Finding


def document_findings(document: Mapping[str, Any]) -> list[Finding]:
    spec = document.get("spec")
    if not isinstance(spec, Mapping):
        return []
    config = spec.get("config")
    config = config if isinstance(config, Mapping) else {}
    class_name = spec.get("class")
    sink = connector_kind(class_name if isinstance(class_name, str) else "", config) == Kind.SINK
    return [*_bookkeeping_keys(config), *_offsets(spec.get("offsets"), sink=sink)]


def _bookkeeping_keys(config: Mapping[str, Any]) -> list[Finding]:
    # Same message as the model's validator, so the two never both show.
    return [
        Finding(
            ("spec", "config", key),
            f"`{key}` is derived from `{owner}`; remove it from spec.config",
            f"set `{owner}` instead",
            "key",
        )
        for key, owner in BOOKKEEPING_KEYS.items()
        if key in config
    ]


def _offsets(request: object, *, sink: bool) -> list[Finding]:
    if not isinstance(request, Mapping):
        return []
    return [
        Finding(("spec", "offsets", *problem.path), problem.message, problem.hint)
        for problem in check_request(request, sink=sink)
    ]


SECRET_HINT = "write a placeholder such as `${env:NAME}` or `${file:/path/to.properties:key}`; see docs/secrets.md"


def literal_secrets(document: Mapping[str, Any]) -> list[Finding]:
    """Config values that are secrets written in clear (`core.redact.literal_secret`): a
    manifest lives in git, so a secret belongs in a placeholder. Read before placeholders are
    resolved (what the file says), and never quoting the value."""
    spec = document.get("spec")
    config = spec.get("config") if isinstance(spec, Mapping) else None
    if not isinstance(config, Mapping):
        return []
    shown = {key: config_value(value) for key, value in config.items() if isinstance(key, str) and _scalar(value)}
    return [_literal(key, why) for key, why in redact_literal_secrets(shown)]


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _literal(key: str, why: str) -> Finding:
    if why == "key":
        return Finding(("spec", "config", key), f"literal secret: `{key}` holds a credential in clear text", SECRET_HINT)
    return Finding(
        ("spec", "config", key),
        f"literal secret: the value of `{key}` has a credential written inside it",
        "put the credential in a placeholder, e.g. `postgresql://app:${env:DB_PASSWORD}@db/app`; see docs/secrets.md",
    )
