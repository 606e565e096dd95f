"""Placeholders in `spec.config`, resolved for the checks only: the connector keeps them.

The syntax is Connect's (`ConfigTransformer`'s `${provider:[path:]key}`), and so is the rule
(KIP-297): the config topic holds the placeholder, and whoever runs the connector resolves it
with its config providers (`kafka.io.config_providers`: `env`, `file`, `directory`; a Java
worker with its own). Here they are resolved only so that `validate` judges the values the
connector will get: an `${env:NAME}` must be set (a missing secret is found before deploy), a
`${file:…}` or `${directory:…}` is read where it can be, and a placeholder that cannot be
resolved on this machine (a file that exists only where the connector runs, `${vault:…}`)
leaves its key unchecked rather than judged on the placeholder's text (`ForChecks.skipped`).
There is no default-value syntax (`${env:NAME:-x}`): Connect has none, and a silent default
would hide a missing secret. Every key that holds a placeholder is sensitive (`core.redact`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import NamedTuple

from reconciler.core.placeholders import Unresolved as Missing
from reconciler.core.placeholders import Variable, transform
from reconciler.core.redact import PLACEHOLDER
from reconciler.kafka.io import config_providers

ENV_PROVIDER = "env"


class Unresolved(NamedTuple):
    """An `${env:…}` placeholder that could not be resolved: a finding."""

    config_key: str
    message: str
    hint: str | None = None


class ForChecks(NamedTuple):
    """The config the checks judge, what is wrong, and the keys they must leave alone."""

    config: dict[str, object]
    problems: list[Unresolved]
    skipped: frozenset[str]


def resolve_config(config: Mapping[str, object], env: Mapping[str, str]) -> ForChecks:
    """`config` with its placeholders resolved where this machine can (see the module doc).

    Called for every manifest with a placeholder (10,000 load in a second): `${env:NAME}`, the
    common case, is a dict lookup; only the other providers go through `placeholders.transform`."""
    if all(_env_only(value) for value in config.values()):
        return _env_resolved(config, env)
    texts = {key: value for key, value in config.items() if isinstance(value, str)}
    resolution = transform(texts, config_providers.lookup(env))
    problems: list[Unresolved] = []
    skipped: set[str] = set()
    for missing in resolution.unresolved:
        if missing.variable.provider == ENV_PROVIDER:
            problems.append(_env_problem(missing))
        else:
            skipped.add(missing.config_key)
    resolved = {key: resolution.config.get(key, value) if key in texts else value for key, value in config.items()}
    return ForChecks(resolved, problems, frozenset(skipped))


def _env_only(value: object) -> bool:
    return not isinstance(value, str) or "${" not in value or all(
        m.group(1) == ENV_PROVIDER and not m.group(2) for m in PLACEHOLDER.finditer(value)
    )


def _env_resolved(config: Mapping[str, object], env: Mapping[str, str]) -> ForChecks:
    problems: list[Unresolved] = []
    resolved: dict[str, object] = {}
    for key, value in config.items():
        if isinstance(value, str) and "${" in value:

            def replace(m: re.Match[str], key: str = key) -> str:
                name = m.group(3)
                if name in env:
                    return env[name]
                problems.append(_env_problem(Missing(key, Variable(ENV_PROVIDER, "", name), "not set")))
                return m.group(0)

            value = PLACEHOLDER.sub(replace, value)
        resolved[key] = value
    return ForChecks(resolved, problems, frozenset())


def _env_problem(missing: Missing) -> Unresolved:
    var = missing.variable
    if var.path:
        return Unresolved(missing.config_key, f"`{var}`: the env provider takes no path", f"write `${{env:{var.key}}}`")
    return Unresolved(
        missing.config_key, f"environment variable `{var.key}` is not set", f"export {var.key}=… before running the reconciler"
    )
