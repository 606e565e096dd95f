"""`${env:NAME}` placeholders in `spec.config`, resolved when manifests are loaded.

The syntax is Connect's (`ConfigTransformer`'s pattern `${provider:[path:]key}`): `${env:NAME}`
is the EnvVarConfigProvider form, resolved here from the reconciler's environment so a manifest
in git never holds the secret itself. Placeholders of other providers (`${file:/etc/s.properties:pw}`,
`${vault:…}`) belong to the Connect worker's config providers and are kept verbatim. There is no
default-value syntax (`${env:NAME:-x}`): Connect has none, and a silent default would hide a
missing secret. Every key that held a placeholder is sensitive from then on (`core.redact`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from reconciler.core.redact import PLACEHOLDER

ENV_PROVIDER = "env"


class Unresolved(NamedTuple):
    """An `${env:…}` placeholder that could not be resolved."""

    config_key: str
    message: str
    hint: str | None = None


def resolve_config(config: Mapping[str, object], env: Mapping[str, str]) -> tuple[dict[str, object], list[Unresolved]]:
    """A copy of `config` with `${env:NAME}` resolved in string values, plus what failed."""
    resolved: dict[str, object] = {}
    problems: list[Unresolved] = []
    for key, value in config.items():
        if isinstance(value, str) and "${" in value:
            value, missing = resolve_value(value, env)
            problems.extend(Unresolved(key, message, hint) for message, hint in missing)
        resolved[key] = value
    return resolved, problems


def resolve_value(value: str, env: Mapping[str, str]) -> tuple[str, list[tuple[str, str | None]]]:
    """(`value` with env placeholders replaced, [(message, hint)] for those that failed)."""
    problems: list[tuple[str, str | None]] = []

    def replace(match: re.Match[str]) -> str:
        provider, path, name = match.group(1), match.group(2), match.group(3)
        if provider != ENV_PROVIDER:
            return match.group(0)  # a Connect config provider: the worker resolves it
        if path:
            problems.append(
                (f"`{match.group(0)}`: the env provider takes no path", f"write `${{env:{name}}}`")
            )
            return match.group(0)
        if name not in env:
            problems.append(
                (f"environment variable `{name}` is not set", f"export {name}=… before running the reconciler")
            )
            return match.group(0)
        return env[name]

    return PLACEHOLDER.sub(replace, value), problems
