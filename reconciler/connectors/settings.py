"""One settings reader for connectors: a frozen dataclass whose fields are read from a `ConfigDef`.

A subclass names its `config_def`; each field is the value of the key of its name with `.` for
`_` (`flush_records` ← `flush.records`), or of the key `setting("…")` names, typed as the key
is declared (a LIST as a tuple of strings) and passed through `setting(convert=…)` when given.
A field no one key gives (the connector's `name`, a value made of several keys) is `derived`
from the parsed config and the config as given. `read(config)` returns the settings with every
problem: the definition's, those a derived field adds to `parsed.problems`, and the class's own
(`more_problems`, `config_problems`); `parse(config)` raises `InvalidConnectorConfig` on any.
The built-ins' settings are read this way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self

from reconciler.connectors.api import ConnectorConfig, valid_or_raise
from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ParsedConfig, Type

_KEY = "config-key"
_CONVERT = "config-convert"
_DERIVE = "config-derive"
_READERS: dict[Type, Callable[[ParsedConfig, str], Any]] = {
    Type.LIST: lambda parsed, key: tuple(parsed.strings(key)),
    Type.INT: ParsedConfig.integer,
    Type.SHORT: ParsedConfig.integer,
    Type.LONG: ParsedConfig.integer,
    Type.DOUBLE: ParsedConfig.number,
    Type.BOOLEAN: ParsedConfig.boolean,
}

Derive = Callable[[ParsedConfig, ConnectorConfig], Any]


def setting(key: str | None = None, *, convert: Callable[[Any], Any] | None = None) -> Any:
    """A field read from `key` (when its name, dots for underscores, is not the key), its typed
    value passed through `convert` (to lower-case a choice, make a flag of one, …) when given."""
    metadata: dict[str, object] = {}
    if key is not None:
        metadata[_KEY] = key
    if convert is not None:
        metadata[_CONVERT] = convert
    return dataclasses.field(metadata=metadata)


def derived(derive: Derive, *, secret: bool = False) -> Any:
    """A field `derive(parsed, config)` computes; a problem it finds goes to `parsed.problems`.
    A `secret` one (it may hold credentials) is left out of the settings' repr."""
    return dataclasses.field(metadata={_DERIVE: derive}, repr=not secret)


def connector_name(parsed: ParsedConfig, config: ConnectorConfig) -> str:
    """The connector's `name` (a Connect key, not one of the connector's definition)."""
    return str(config.get("name") or "")


class ConnectorSettings:
    """Base of a connector's settings dataclass (`@dataclass(frozen=True, kw_only=True)`)."""

    config_def: ClassVar[ConfigDef]

    @classmethod
    def read(cls, config: ConnectorConfig) -> tuple[Self, list[ConfigProblem]]:
        parsed = cls.config_def.parse(config)
        fields = dataclasses.fields(cls)  # type: ignore[arg-type]  # subclasses are dataclasses
        settings = cls(**{each.name: _value(cls.config_def, each, parsed, config) for each in fields})
        found = parsed.problems
        return settings, [*found, *settings.more_problems(found), *settings.config_problems(config, found)]

    @classmethod
    def parse(cls, config: ConnectorConfig) -> Self:
        return valid_or_raise(cls.read(config))

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """The class's own checks, beside the definition's (`found`)."""
        return []

    def config_problems(self, config: ConnectorConfig, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """The class's checks that need the config as given: keys outside the definition (the
        converters), or whether a key is set at all. After `more_problems`."""
        return []


def _value(config_def: ConfigDef, each: dataclasses.Field[Any], parsed: ParsedConfig, config: ConnectorConfig) -> Any:
    derive = each.metadata.get(_DERIVE)
    if derive is not None:
        return derive(parsed, config)
    key = each.metadata.get(_KEY, each.name.replace("_", "."))
    value = _READERS.get(config_def.keys[key].type, ParsedConfig.string)(parsed, key)
    convert = each.metadata.get(_CONVERT)
    return value if convert is None else convert(value)

