"""Validation errors (jsonschema's and pydantic's) → findings with plain messages and hints.

The manifest schema is the contract editors and CI tools see, so its errors come first; pydantic
adds what the schema cannot say (cross-field rules) and anything the two disagree on.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic_core import ErrorDetails

from reconciler.core.models import API_VERSION, KIND_CONNECTOR
from reconciler.manifests.findings import (
    Finding,
    Path,
    choice_hint,
    describe_type,
    show_value,
    unknown_field_hint,
)

if TYPE_CHECKING:
    from jsonschema import ValidationError

_JSON_TYPE_NAMES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}

_REQUIRED_HINTS: dict[str, str] = {
    "apiVersion": f"add `apiVersion: {API_VERSION}`",
    "kind": f"add `kind: {KIND_CONNECTOR}`",
    "class": "a registered connector name (e.g. parquet-sink) or a 'module:Class' path",
    "id": "restart, offsets and topics reset requests run once per `id`; give each new request a new id",
    "offset": "use `offset: null` to delete the partition's offset",
}


def schema_findings(document: Mapping[str, Any]) -> list[Finding]:
    """Every JSON Schema error in one document, translated."""
    # Imported here: `python -m reconciler.manifests.schema` must not find itself pre-imported.
    from reconciler.manifests.schema import validator

    return [finding for error in validator().iter_errors(document) for finding in _translate(error)]


def pydantic_findings(errors: Iterable[ErrorDetails], document: Mapping[str, object]) -> list[Finding]:
    """pydantic's errors, translated; locations trimmed to what exists in the document."""
    findings = []
    for error in errors:
        kind = error["type"]
        loc = _existing_prefix(tuple(error["loc"]), document, keep_missing=kind == "missing")
        if kind == "extra_forbidden":
            findings.append(Finding(loc, "unknown field", None, "key"))
        elif kind == "missing":
            findings.append(Finding(loc, "required field is missing", _REQUIRED_HINTS.get(str(loc[-1]))))
        elif kind in ("value_error", "assertion_error"):
            message = error["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
            findings.append(Finding(loc, message, coarse=True))
        elif kind in _PYDANTIC_TYPES:
            findings.append(_type_finding(loc, error["input"], [_PYDANTIC_TYPES[kind]]))
        elif kind == "string_pattern_mismatch":
            findings.append(_pattern_finding(loc, error["input"]))
        else:
            findings.append(Finding(loc, error["msg"]))
    return findings


# pydantic error types the schema would have reported the same way (where the two disagree,
# e.g. 2.0 for an integer, which JSON Schema accepts and the strict models do not).
_PYDANTIC_TYPES = {
    "int_type": "integer",
    "int_from_float": "integer",
    "bool_type": "boolean",
    "string_type": "string",
    "dict_type": "object",
    "list_type": "array",
    "float_type": "number",
}


def _translate(error: ValidationError) -> Iterator[Finding]:
    path: Path = tuple(error.absolute_path)
    kind = error.validator
    instance: Any = error.instance
    expected: Any = error.validator_value
    if kind == "additionalProperties":
        schema: Any = error.schema
        allowed = schema.get("properties", {})
        for key in instance:
            if key not in allowed:
                yield Finding((*path, key), "unknown field", unknown_field_hint(path, key, allowed), "key")
    elif kind == "required":
        for key in expected:
            if key not in instance:
                yield Finding((*path, key), "required field is missing", _REQUIRED_HINTS.get(key))
    elif kind in ("anyOf", "oneOf"):
        branch = _branch_of_matching_type(error)
        if branch is None:
            yield _type_finding(path, instance, _branch_types(error))
        else:
            for sub in branch:
                yield from _translate(sub)
    elif kind == "type":
        yield _type_finding(path, instance, [expected] if isinstance(expected, str) else list(expected))
    else:
        yield _value_finding(path, kind, instance, error)


def _value_finding(path: Path, kind: object, instance: Any, error: ValidationError) -> Finding:
    shown = show_value(instance)
    expected: Any = error.validator_value
    if kind == "const":
        field = str(path[-1]) if path else "value"
        return Finding(path, f"unsupported {field} {shown}", f"use `{field}: {expected}`")
    if kind == "enum":
        return Finding(path, f"invalid value {shown}", choice_hint(instance, [str(c) for c in expected]))
    if kind == "minimum":
        return Finding(path, f"must be at least {expected}, got {shown}")
    if kind == "maximum":
        return Finding(path, f"must be at most {expected}, got {shown}")
    if kind == "minLength":
        return Finding(path, "must not be empty" if expected == 1 else f"must be at least {expected} characters long")
    if kind == "maxLength":
        return Finding(path, f"must be at most {expected} characters long")
    if kind == "pattern":
        return _pattern_finding(path, instance)
    return Finding(path, error.message)


def _pattern_finding(path: Path, instance: Any) -> Finding:
    if path == ("metadata", "name"):
        return Finding(
            path,
            f"invalid connector name {show_value(instance)}",
            "use letters, digits, '.', '_' and '-', starting with a letter or digit, at most 249 characters",
        )
    if path and path[-1] == "id":
        return Finding(path, f"invalid request id {show_value(instance)}: it must not contain whitespace")
    return Finding(path, f"invalid value {show_value(instance)}")


def _type_finding(path: Path, instance: object, expected_types: Sequence[str]) -> Finding:
    names = [_JSON_TYPE_NAMES.get(t, t) for t in _collapse_numbers(expected_types)]
    expected = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
    # Config values are never echoed (they may be resolved secrets); null needs no echo.
    shown = show_value(instance) if path[:2] != ("spec", "config") and instance is not None else ""
    got = describe_type(instance) + (f" ({shown})" if shown else "")
    return Finding(path, f"expected {expected}, got {got}", _type_hint(path, instance, expected_types))


def _type_hint(path: Path, instance: object, expected: Sequence[str]) -> str | None:
    if path[:2] == ("spec", "config") and isinstance(instance, dict | list):
        return "Connect configs are flat: write the value as one string, e.g. comma-separated"
    if "string" in expected and isinstance(instance, int | float | bool):
        return "quote the value to make it a string"
    if isinstance(instance, str):
        if "integer" in expected and instance.strip().lstrip("+-").isdigit():
            return "remove the quotes"
        if "boolean" in expected and instance.lower() in ("true", "false"):
            return "write true or false without quotes"
    return None


def _collapse_numbers(types: Sequence[str]) -> list[str]:
    # "a string, an integer, a number…" reads badly; integers are numbers.
    if "integer" in types and "number" in types:
        return [t for t in types if t != "integer"]
    return list(types)


def _branch_of_matching_type(error: ValidationError) -> list[ValidationError] | None:
    """The errors of the anyOf branch whose type the value has, if exactly that went wrong."""
    branches: dict[object, list[ValidationError]] = defaultdict(list)
    for sub in error.context or ():
        branches[sub.relative_schema_path[0]].append(sub)
    for subs in branches.values():
        if not any(sub.validator == "type" and not sub.relative_path for sub in subs):
            return subs
    return None


def _branch_types(error: ValidationError) -> list[str]:
    types: list[str] = []
    for sub in error.context or ():
        if sub.validator == "type" and not sub.relative_path:
            value: Any = sub.validator_value
            for name in [value] if isinstance(value, str) else value:
                if name not in types:
                    types.append(name)
    return types


def _existing_prefix(loc: Path, document: Mapping[str, object], *, keep_missing: bool) -> Path:
    """The part of a pydantic location that exists in the document (+ the missing key)."""
    node: object = document
    for depth, element in enumerate(loc):
        if isinstance(node, Mapping) and element in node:
            node = node[element]
        elif isinstance(node, list) and isinstance(element, int) and 0 <= element < len(node):
            node = node[element]
        else:
            return loc[: depth + 1] if keep_missing else loc[:depth]
    return loc
