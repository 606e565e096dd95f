"""What the JSON Schema can know statically about the built-in connectors' configs.

For each built-in class, an `if spec.class == <name> then spec.config is …` clause: the keys
the plugin declares and those Connect defines for its kind, each with its type, default and
doc; other keys refused, as `reconciler validate` refuses them. Editors then complete and
check `spec.config` as they type. The schema stays laxer than the loader where it cannot
know (a `${…}` placeholder, a number written as a string, client override names): what the
loader accepts, the schema accepts (a test checks it).

Only the built-ins (this package's own entry points: a new built-in registered in
`pyproject.toml` appears here once the package is reinstalled and the schema regenerated):
the schema file is checked in, so it must not depend on which other plugins happen to be
installed where it is generated.
"""

from __future__ import annotations

import re
from typing import Any

from reconciler.connectors.api import Connector
from reconciler.connectors.configdef import REQUIRED, ConfigDef, ConfigKey, Type, topic_names
from reconciler.connectors.framework import ANY, framework_def
from reconciler.connectors.registry import built_in_connectors
from reconciler.connectors.unapplied import NOT_APPLIED_LISTS, UNCHANGING_CONVERTERS, accepted_converters
from reconciler.core.topic_names import MAX_LENGTH

_SCALAR = ["string", "number", "boolean", "null"]
_PLACEHOLDER = {"type": "string", "pattern": r"\$\{"}  # resolved at load or by a Connect worker
_INTEGER_TEXT = {"type": "string", "pattern": r"^\s*([-+]?[0-9]+)?\s*$"}
_NUMBER_TEXT = {"type": "string", "pattern": r"^\s*([-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?)?\s*$"}
_BOOLEAN_TEXT = {"type": "string", "pattern": r"^\s*([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])?\s*$"}


def plugin_clauses() -> list[dict[str, Any]]:
    """One `if`/`then` clause per built-in connector class."""
    return [_clause(name, cls) for name, cls in built_in_connectors().items()]


def connect_key_defs() -> dict[str, Any]:
    """`$defs` for the keys Connect defines, which the clauses refer to (`#/$defs/connect:<key>`)."""
    return {f"connect:{key.name}": _key_schema(key) for key in ANY.keys.values()}


def _clause(name: str, cls: type[Connector]) -> dict[str, Any]:
    own = cls.config_def or ConfigDef()
    keys = own.merge(framework_def(cls.kind))
    config: dict[str, Any] = {
        "description": f"`{name}` ({cls.kind} connector): its keys and the keys Kafka Connect defines.",
        "properties": {key.name: _property(key, own, cls.converters) for key in keys.keys.values()},
        "patternProperties": {"^" + re.escape(prefix.prefix): {"description": prefix.doc} for prefix in keys.prefixes},
        "additionalProperties": False,
    }
    required = [key.name for key in own.keys.values() if key.required]
    spec: dict[str, Any] = {"properties": {"config": config}}
    if required:
        config["required"] = required
        spec["required"] = ["config"]
    return {
        "if": {"properties": {"spec": {"properties": {"class": {"const": name}}, "required": ["class"]}}, "required": ["spec"]},
        "then": {"properties": {"spec": spec}},
    }


def _property(key: ConfigKey, own: ConfigDef, converts: frozenset[str]) -> dict[str, Any]:
    if key.name in own.keys:
        return _key_schema(key)
    if key.name in NOT_APPLIED_LISTS or key.name in UNCHANGING_CONVERTERS:
        return _unapplied_schema(key, converts)
    return {"$ref": f"#/$defs/connect:{key.name}"}


def _unapplied_schema(key: ConfigKey, converts: frozenset[str]) -> dict[str, Any]:
    """A Connect key the runtime does not apply to a Python connector (`connectors.unapplied`):
    blank or, for a converter, one of those that leave the bytes as they are (or, for a plugin
    that converts keys or values itself, one of those it knows)."""
    allowed = accepted_converters(key.name, converts) if key.name in UNCHANGING_CONVERTERS else ()
    note = f" Python connectors: only {', '.join(allowed)} (or blank)." if allowed else " Python connectors: blank only."
    choice = "|".join(re.escape(name) for name in allowed)
    typed = {"type": "string", "pattern": rf"^\s*({choice})?\s*$" if allowed else r"^\s*$"}
    return {"description": key.doc + note, "anyOf": [typed, _PLACEHOLDER, {"type": "null"}]}


def _key_schema(key: ConfigKey) -> dict[str, Any]:
    schema: dict[str, Any] = {"description": key.doc + _default_note(key)}
    if not key.required and key.default is not None:
        schema["default"] = ",".join(key.default) if isinstance(key.default, list) else key.default
    schema["anyOf"] = [*_typed(key), _PLACEHOLDER, {"type": "null"}]
    return schema


def _typed(key: ConfigKey) -> list[dict[str, Any]]:
    if key.validator is topic_names:
        return [{"type": ["number", "boolean"]}, {"type": "string", "pattern": topic_pattern(key.type is Type.LIST)}]
    if key.choices:
        if key.ignore_case:
            return [{"type": "string", "pattern": "^\\s*(" + "|".join(_any_case(c) for c in key.choices) + ")?\\s*$"}]
        return [{"enum": list(key.choices)}, {"type": "string", "pattern": r"^\s*$"}]
    if key.type in (Type.INT, Type.SHORT, Type.LONG):
        return [{"type": "integer", **_limits(key)}, _INTEGER_TEXT]
    if key.type is Type.DOUBLE:
        return [{"type": "number", **_limits(key)}, _NUMBER_TEXT]
    if key.type is Type.BOOLEAN:
        return [{"type": "boolean"}, _BOOLEAN_TEXT]
    return [{"type": _SCALAR}]


def topic_pattern(many: bool) -> str:
    """Kafka's topic-name rule (`core.topic_names`) as a pattern: one name, or a comma-separated
    list of them (empty items allowed: the loader drops them, as Connect's topic lists do);
    blank allowed (a required key's blank is the loader's to refuse). Laxer than the rule where
    a pattern cannot say it: `.` and `..` pass."""
    name = f"[a-zA-Z0-9._-]{{1,{MAX_LENGTH}}}"
    return rf"^\s*({name})?(\s*,\s*({name})?)*\s*$" if many else rf"^\s*({name})?\s*$"


def _limits(key: ConfigKey) -> dict[str, float]:
    limits = {}
    if key.minimum is not None:
        limits["minimum"] = key.minimum
    if key.maximum is not None:
        limits["maximum"] = key.maximum
    return limits


def _any_case(word: str) -> str:
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in word)


def _default_note(key: ConfigKey) -> str:
    if key.default is REQUIRED:
        return " Required."
    return ""
