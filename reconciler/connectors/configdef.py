"""Typed config definitions for connector plugins, after Kafka Connect's `ConfigDef`.

A plugin declares each key it reads once, with its type, default, doc and validator; the same
definition parses the config at run time, validates it before deploy, lists it
(`reconciler plugins`) and describes it in the JSON Schema. Values parse as Java's
`ConfigDef.parseType` parses them, a blank value counting as absent. Pure: no I/O, no plugin
loading. How a plugin uses it: docs/plugins.md#declaring-config-keys.
"""

from __future__ import annotations

import enum
import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from reconciler.core.topic_names import topic_name_problem

# Connector configs as Connect stores them: string → string (a null value is possible).
ConnectorConfig = Mapping[str, str | None]
Value = str | int | float | bool | list[str] | None
# Connect's `ConfigDef.Validator`: given a parsed value, why it is not valid (None when it is).
Validator = Callable[[Value], str | None]


class Type(enum.StrEnum):
    """Connect's `ConfigDef.Type`s (CLASS is a name only: nothing is loaded to check it)."""

    STRING = "string"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    BOOLEAN = "boolean"
    LIST = "list"
    PASSWORD = "password"
    CLASS = "class"


_INTEGER_BOUNDS: Final = {
    Type.SHORT: (-(2**15), 2**15 - 1),
    Type.INT: (-(2**31), 2**31 - 1),
    Type.LONG: (-(2**63), 2**63 - 1),
}
_LIST_SEPARATOR = re.compile(r"\s*,\s*")
# What Java's Integer.parseInt / Double.parseDouble take (Python's int() and float() also take
# `1_000` and non-ASCII digits, which a Java worker would refuse).
INTEGER_TEXT = re.compile(r"[-+]?[0-9]+")
NUMBER_TEXT = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[-+]?(?:Infinity|NaN)")
_TEXT_TYPES: Final = frozenset({Type.STRING, Type.PASSWORD, Type.CLASS})
_NOUN: Final = {
    Type.SHORT: "an integer",
    Type.INT: "an integer",
    Type.LONG: "an integer",
    Type.DOUBLE: "a number",
    Type.BOOLEAN: "true or false",
}


class _Required:
    """The default of a key that has none: the config must set it (Connect's NO_DEFAULT_VALUE)."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Final = _Required()


@dataclass(frozen=True, slots=True)
class ConfigProblem:
    """One invalid config value, named by key so the user knows what to fix.

    `unknown`: the key itself is the problem (no plugin or Connect defines it), so a manifest
    diagnostic points at the key rather than at its value.
    """

    key: str
    message: str
    hint: str | None = None
    unknown: bool = False

    def render(self) -> str:
        return f"`{self.key}`: {self.message}" + (f" (hint: {self.hint})" if self.hint else "")


@dataclass(frozen=True, slots=True)
class Display:
    """Connect's UI fields of a key (`group`, `orderInGroup`, `width`, `displayName`) and its
    importance: only `PUT …/config/validate` shows them. A plugin's keys usually have none, as
    a Java plugin's keys defined with `define(name, type, default, importance, doc)`."""

    group: str | None = None
    order: int = -1
    width: str = "NONE"  # Connect's `ConfigDef.Width`: NONE, SHORT, MEDIUM, LONG
    name: str | None = None  # None: the key's own name
    importance: str | None = None  # HIGH, MEDIUM or LOW; None: HIGH when required, else MEDIUM


NO_DISPLAY: Final = Display()


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One declared key: Connect's `ConfigKey`, its UI fields apart (`display`)."""

    name: str
    type: Type
    doc: str = ""
    default: Value | _Required = REQUIRED
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    ignore_case: bool = False  # choices compared ignoring case (Connect's CaseInsensitiveValidString)
    validator: Validator | None = None  # run on a value that parsed (and is in range)
    display: Display = NO_DISPLAY

    @property
    def required(self) -> bool:
        return self.default is REQUIRED

    def parse(self, text: str) -> tuple[Value, str | None]:
        """The typed value of a non-blank `text`, or (None, why it is not valid)."""
        if self.type in _TEXT_TYPES and not self.choices:
            value: Value = text.strip()  # the common case, kept short: it runs for every manifest
        else:
            value, problem = _parse(self.type, text.strip())
            if problem is not None:
                return None, f"must be {problem}; got {text.strip()!r}"
            if self.choices and not self._allowed(value):
                return None, f"must be one of {', '.join(self.choices)}; got {value!r}"
            if (out_of_range := self._range_problem(value)) is not None:
                return None, out_of_range
        invalid = self.validator(value) if self.validator is not None else None
        return (None, invalid) if invalid is not None else (value, None)

    def _allowed(self, value: Value) -> bool:
        if self.ignore_case and isinstance(value, str):
            return value.lower() in (choice.lower() for choice in self.choices)
        return value in self.choices

    def _range_problem(self, value: Value) -> str | None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return None
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {_number(self.minimum)}; got {value}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {_number(self.maximum)}; got {value}"
        return None

    def describe(self) -> dict[str, object]:
        """For `reconciler plugins --format json`: the key as plain data."""
        described: dict[str, object] = {"name": self.name, "type": self.type.value, "required": self.required}
        if not self.required:
            described["default"] = self.default
        if self.choices:
            described["choices"] = list(self.choices)
        if self.minimum is not None:
            described["minimum"] = self.minimum
        if self.maximum is not None:
            described["maximum"] = self.maximum
        described["doc"] = self.doc
        return described


@dataclass(frozen=True, slots=True)
class ConfigPrefix:
    """A family of keys the definition accepts without typing them (`producer.override.*`)."""

    prefix: str
    doc: str = ""


@dataclass(frozen=True)
class ConfigDef:
    """An immutable set of declared keys; `define` returns a new definition, so a plugin can
    extend another's (`Base.config_def.define(…)`) without changing it."""

    keys: Mapping[str, ConfigKey] = field(default_factory=dict)
    prefixes: tuple[ConfigPrefix, ...] = ()

    def define(
        self,
        name: str,
        type: Type,  # noqa: A002 - Connect's name for it
        doc: str = "",
        *,
        default: Value | _Required = REQUIRED,
        choices: Sequence[str] = (),
        minimum: float | None = None,
        maximum: float | None = None,
        ignore_case: bool = False,
        validator: Validator | None = None,
        display: Display = NO_DISPLAY,
    ) -> ConfigDef:
        if name in self.keys:
            raise ValueError(f"config key {name!r} is defined twice")
        key = ConfigKey(name, type, doc, default, tuple(choices), minimum, maximum, ignore_case, validator, display)
        return replace(self, keys={**self.keys, name: key})

    def define_prefix(self, prefix: str, doc: str = "") -> ConfigDef:
        return replace(self, prefixes=(*self.prefixes, ConfigPrefix(prefix, doc)))

    def merge(self, other: ConfigDef) -> ConfigDef:
        """Both definitions' keys, this one's first; where both define a key, this one's wins."""
        added = {name: key for name, key in other.keys.items() if name not in self.keys}
        return replace(self, keys={**self.keys, **added}, prefixes=(*self.prefixes, *other.prefixes))

    def groups(self) -> list[str]:
        """Connect's `ConfigDef.groups()`: the keys' groups, in the order they first appear."""
        return list(dict.fromkeys(key.display.group for key in self.keys.values() if key.display.group))

    def knows(self, name: str) -> bool:
        return name in self.keys or any(name.startswith(p.prefix) for p in self.prefixes)

    def parse(self, config: ConnectorConfig) -> ParsedConfig:
        """Every declared key's typed value (its default when absent or blank), and every problem."""
        values: dict[str, Value] = {}
        problems: list[ConfigProblem] = []
        for key in self.keys.values():
            text = config.get(key.name)
            if text is None or not text.strip():
                if key.required:
                    problems.append(_missing(key))
                values[key.name] = None if key.required else key.default  # type: ignore[assignment]
                continue
            value, problem = key.parse(text)
            if problem is not None:
                problems.append(ConfigProblem(key.name, problem))
                value = None if key.required else key.default  # type: ignore[assignment]
            values[key.name] = value
        return ParsedConfig(values, problems)

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        """Problems with the declared keys' values (missing, wrong type, out of range): those of
        `parse`, in the same order, found looking only at the keys `config` sets and the required
        ones (`validate` runs for every manifest, against Connect's 30-odd keys)."""
        keys, position = self.keys, self._positions
        names = sorted({name for name in config if name in keys}.union(self._required), key=position.__getitem__)
        problems = []
        for name in names:
            key, text = keys[name], config.get(name)
            if text is None or not text.strip():
                if key.required:
                    problems.append(_missing(key))
            elif (problem := key.parse(text)[1]) is not None:
                problems.append(ConfigProblem(name, problem))
        return problems

    @functools.cached_property
    def _required(self) -> frozenset[str]:
        return frozenset(name for name, key in self.keys.items() if key.required)

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        return {name: index for index, name in enumerate(self.keys)}

    def unknown(self, config: Iterable[str]) -> list[str]:
        """Keys of `config` this definition neither declares nor accepts by prefix."""
        return [name for name in config if not self.knows(name)]

    def describe(self) -> list[dict[str, object]]:
        return [key.describe() for key in self.keys.values()]


@dataclass(frozen=True)
class ParsedConfig:
    """Typed values by key (see `ConfigDef.parse`); a value that did not parse is its default."""

    values: Mapping[str, Value]
    problems: list[ConfigProblem]

    def checked(self) -> tuple[ParsedConfig, list[ConfigProblem]]:
        """(self, problems): the shape `api.valid_or_raise` takes."""
        return self, self.problems

    def string(self, name: str) -> str:
        value = self.values[name]
        return value if isinstance(value, str) else ""

    def optional_string(self, name: str) -> str | None:
        value = self.values[name]
        return value if isinstance(value, str) else None

    def integer(self, name: str) -> int:
        value = self.values[name]
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def number(self, name: str) -> float:
        value = self.values[name]
        return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0

    def boolean(self, name: str) -> bool:
        return self.values[name] is True

    def strings(self, name: str) -> list[str]:
        value = self.values[name]
        return list(value) if isinstance(value, list) else []


def topic_names(value: Value) -> str | None:
    """The validator of a key that names topics to produce to or consume from, one (STRING) or
    several (LIST): each must be a name Kafka accepts (`core.topic_names`), or the broker
    would refuse it only once a task runs."""
    for name in value if isinstance(value, list) else [value] if isinstance(value, str) else []:
        problem = topic_name_problem(name)
        if problem is not None:
            return f"invalid topic name: {problem}"
    return None


def _missing(key: ConfigKey) -> ConfigProblem:
    noun = _NOUN.get(key.type)
    return ConfigProblem(key.name, "is required" + (f" ({noun})" if noun else ""))


def _parse(type_: Type, text: str) -> tuple[Value, str | None]:
    """Java's `ConfigDef.parseType` on a trimmed, non-blank value: (value, None) or (None, noun)."""
    if type_ in _INTEGER_BOUNDS:
        low, high = _INTEGER_BOUNDS[type_]
        if not INTEGER_TEXT.fullmatch(text):
            return None, "an integer"
        number = int(text)
        if not low <= number <= high:
            return None, f"an integer from {low} to {high}"
        return number, None
    if type_ is Type.DOUBLE:
        if not NUMBER_TEXT.fullmatch(text):
            return None, "a number"
        return float(text.replace("Infinity", "inf")), None
    if type_ is Type.BOOLEAN:
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true", None
        return None, "true or false"
    if type_ is Type.LIST:
        return [item for item in _LIST_SEPARATOR.split(text) if item], None
    return text, None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
