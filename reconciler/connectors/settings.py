"""One settings reader for connectors: a frozen dataclass whose fields are read from a `ConfigDef`.

A subclass names its `config_def`; each field is the value of the key of its name with `.` for
`_` (`flush_records` ← `flush.records`), or of the key `setting("…")` names, typed as the key
is declared (a LIST as a tuple of strings). `read(config)` returns the settings with every
problem, the definition's and the class's own (`more_problems`); `parse(config)` raises
`InvalidConnectorConfig` on any. The built-ins' settings are read this way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, Self

from reconciler.connectors.api import ConnectorConfig, valid_or_raise
from reconciler.connectors.configdef import ConfigDef, ConfigProblem, ParsedConfig, Type

_KEY = "config-key"
_READERS: dict[Type, Callable[[ParsedConfig, str], Any]] = {
    Type.LIST: lambda parsed, key: tuple(parsed.strings(key)),
    Type.INT: ParsedConfig.integer,
    Type.SHORT: ParsedConfig.integer,
    Type.LONG: ParsedConfig.integer,
    Type.DOUBLE: ParsedConfig.number,
    Type.BOOLEAN: ParsedConfig.boolean,
}


def setting(key: str) -> Any:
    """A field read from `key` (when its name, dots for underscores, is not the key)."""
    return dataclasses.field(metadata={_KEY: key})


class ConnectorSettings:
    """Base of a connector's settings dataclass (`@dataclass(frozen=True, kw_only=True)`)."""

    config_def: ClassVar[ConfigDef]

    @classmethod
    def read(cls, config: ConnectorConfig) -> tuple[Self, list[ConfigProblem]]:
        parsed = cls.config_def.parse(config)
        values = {}
        for each in dataclasses.fields(cls):  # type: ignore[arg-type]  # subclasses are dataclasses
            key = each.metadata.get(_KEY, each.name.replace("_", "."))
            read = _READERS.get(cls.config_def.keys[key].type, ParsedConfig.string)
            values[each.name] = read(parsed, key)
        settings = cls(**values)
        return settings, [*parsed.problems, *settings.more_problems(parsed.problems)]

    @classmethod
    def parse(cls, config: ConnectorConfig) -> Self:
        return valid_or_raise(cls.read(config))

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        """The class's own checks, beside the definition's (`found`)."""
        return []


def no_topic(topics: tuple[str, ...], found: list[ConfigProblem]) -> list[ConfigProblem]:
    """A sink's `topics` that names none (unless its value was reported already)."""
    if not topics and not any(p.key == "topics" for p in found):
        return [ConfigProblem("topics", "names no topic")]
    return []
