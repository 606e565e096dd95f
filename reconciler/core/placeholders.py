"""Connect's config placeholders (KIP-297), as pure functions: find, resolve, put back.

A config value may hold `${provider:[path:]key}` (Connect's `ConfigTransformer.DEFAULT_PATTERN`):
`${env:DB_PW}`, `${file:/etc/app/db.properties:password}`, `${directory:/run/secrets:db-pw}`.
The config topic keeps the placeholder; whoever runs the connector resolves it with its own
providers when it starts the connector and its tasks (Java's `WorkerConfigTransformer`, our
runtime through `kafka.io.config_providers`). `transform` is `ConfigTransformer.transform` with
the providers passed in as a `Lookup`: every (provider, path) is asked once for all of its
keys. Unlike Java, which leaves a placeholder it cannot resolve in place, `transform` reports
it (`Unresolved`): the caller decides whether that fails the connector (the runtime) or skips a
check (validate). An `Unresolved` names the config key, the provider and its key, never a value.

`reverse_transform` is `AbstractHerder.reverseTransform`: task configs a connector generated
from resolved values are written back with the placeholders of its raw config, so the secrets
never reach the config topic through the task configs either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from reconciler.core.redact import MIN_SCRUB_LENGTH, PLACEHOLDER, has_placeholder

EMPTY_PATH = ""


@dataclass(frozen=True)
class Variable:
    """One placeholder: `${provider:path:key}` (path "" when absent, as Java has it)."""

    provider: str
    path: str
    key: str

    def __str__(self) -> str:
        return f"${{{self.provider}:{self.path + ':' if self.path else ''}{self.key}}}"


class ProviderFailure(Exception):
    """A provider could not answer for a path (an unreadable file, a path the env provider
    does not take); the message names neither the path nor a value."""


# (provider, path, keys) → the values found (a missing key is simply absent); None: no such
# provider. Raises ProviderFailure when the path cannot be read at all.
Lookup = Callable[[str, str, frozenset[str]], Mapping[str, str] | None]


@dataclass(frozen=True)
class Unresolved:
    """A placeholder that stays unresolved, and why (no value in it)."""

    config_key: str
    variable: Variable
    reason: str

    def render(self) -> str:
        """Config key, provider and its key; not the path: a placeholder's text is masked as a
        secret is (`core.redact`), and a path may name one (`/run/secrets/<tenant>/`)."""
        v = self.variable
        return f"config `{self.config_key}`: provider {v.provider!r} key {v.key!r}: {self.reason}"


@dataclass(frozen=True, kw_only=True)
class Resolution:
    """A transformed config, what stayed unresolved, and the keys whose value was filled."""

    config: dict[str, str | None]
    unresolved: tuple[Unresolved, ...]
    filled: frozenset[str]
    given: frozenset[str] = frozenset()  # each value a provider gave (a part of a filled value, maybe)

    @property
    def complete(self) -> bool:
        return not self.unresolved

    def secrets(self) -> set[str]:
        """The values the placeholders gave, alone and as the whole values of the keys they
        filled (`tenant-${env:PW}`), for scrubbing."""
        whole = {v for k in self.filled if (v := self.config.get(k))}
        return {v for v in whole | self.given if len(v) >= MIN_SCRUB_LENGTH}


def variables(value: str | None) -> list[Variable]:
    if not has_placeholder(value):
        return []
    assert value is not None
    return [Variable(m.group(1), m.group(2) or EMPTY_PATH, m.group(3)) for m in PLACEHOLDER.finditer(value)]


def keys_with_variables(config: Mapping[str, object]) -> frozenset[str]:
    return frozenset(k for k, v in config.items() if isinstance(v, str) and has_placeholder(v))


def transform(config: Mapping[str, str | None], lookup: Lookup) -> Resolution:
    """`config` with every placeholder a provider answers replaced (ConfigTransformer.transform)."""
    wanted: dict[tuple[str, str], set[str]] = {}
    for value in config.values():
        for var in variables(value):
            wanted.setdefault((var.provider, var.path), set()).add(var.key)
    found: dict[tuple[str, str], Mapping[str, str] | None] = {}
    failures: dict[tuple[str, str], str] = {}
    for (provider, path), keys in sorted(wanted.items()):
        try:
            found[(provider, path)] = lookup(provider, path, frozenset(keys))
        except ProviderFailure as exc:
            failures[(provider, path)] = str(exc)
    resolved: dict[str, str | None] = {}
    unresolved: list[Unresolved] = []
    given: set[str] = set()
    for key, value in config.items():
        if not has_placeholder(value):
            resolved[key] = value
            continue
        assert value is not None
        resolved[key] = PLACEHOLDER.sub(_replacer(key, found, failures, unresolved, given), value)
    filled = frozenset(k for k in keys_with_variables(config) if not any(u.config_key == k for u in unresolved))
    return Resolution(config=resolved, unresolved=tuple(unresolved), filled=filled, given=frozenset(given))


def _replacer(
    key: str,
    found: Mapping[tuple[str, str], Mapping[str, str] | None],
    failures: Mapping[tuple[str, str], str],
    unresolved: list[Unresolved],
    given: set[str],
) -> Callable[[re.Match[str]], str]:
    def replace(m: re.Match[str]) -> str:
        var = Variable(m.group(1), m.group(2) or EMPTY_PATH, m.group(3))
        at = (var.provider, var.path)
        if at in failures:
            unresolved.append(Unresolved(key, var, failures[at]))
        elif found.get(at) is None:
            unresolved.append(Unresolved(key, var, f"no config provider named {var.provider!r}"))
        elif var.key not in (data := found[at] or {}):
            unresolved.append(Unresolved(key, var, _missing(var)))
        else:
            given.add(data[var.key])
            return data[var.key]
        return m.group(0)

    return replace


def _missing(var: Variable) -> str:
    if var.provider == "env":
        return "the environment variable is not set"
    if var.provider == "directory":
        return "no such file in the directory"
    return "no such key"


def reverse_transform(
    raw_connector_config: Mapping[str, str | None], task_configs: Sequence[Mapping[str, str]], resolved: Resolution
) -> list[dict[str, str]]:
    """Task configs with the raw connector config's placeholders put back.

    Java's rule: a task config key that is a connector key whose raw value holds a placeholder
    gets that raw value. And, so that a connector that copies a secret under another key does
    not write it to the topic either: a whole value equal to what a placeholder gave (at least
    MIN_SCRUB_LENGTH long, so that a `1` or a `true` stays what it is) becomes the placeholder.
    """
    with_vars = keys_with_variables(raw_connector_config)
    by_value = {
        value: raw
        for key in sorted(with_vars)
        if (value := resolved.config.get(key)) is not None
        and len(value) >= MIN_SCRUB_LENGTH
        and (raw := raw_connector_config.get(key)) is not None
    }
    return [_reversed(config, raw_connector_config, with_vars, by_value) for config in task_configs]


def _reversed(
    config: Mapping[str, str], raw: Mapping[str, str | None], with_vars: Iterable[str], by_value: Mapping[str, str]
) -> dict[str, str]:
    out = {key: by_value.get(value, value) for key, value in config.items()}
    for key in with_vars:
        raw_value = raw.get(key)
        if key in out and raw_value is not None:
            out[key] = raw_value
    return out
