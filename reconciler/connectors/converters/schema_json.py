"""Connect schemas read from JsonConverter's JSON schema (`JsonConverter.asConnectSchema`).

Pure. `from_json` raises `DataError` with Java's message where Java throws a `DataException`;
a default is converted when the schema is read, as Java does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reconciler.connectors.converters.schema import TYPES, DataError, Field, Schema
from reconciler.connectors.converters.values import to_connect


def from_json(node: Any) -> Schema | None:
    """A schema from its JSON (None for JSON null, a schemaless record); raises `DataError`."""
    if node is None:
        return None
    if not isinstance(node, dict):
        raise DataError("Schema must contain 'type' field")
    kind = node.get("type")
    if not isinstance(kind, str):
        raise DataError("Schema must contain 'type' field")
    if kind not in TYPES:
        raise DataError(f"Unknown schema type: {kind}")
    nested = _nested(kind, node)
    name, version, doc = node.get("name"), node.get("version"), node.get("doc")
    schema = Schema(
        kind,
        optional=node.get("optional") is True,
        name=name if isinstance(name, str) else None,
        version=version if isinstance(version, int) and not isinstance(version, bool) else None,
        doc=doc if isinstance(doc, str) else None,
        parameters=_parameters(node.get("parameters")),
        **nested,
    )
    if "default" in node:
        return _with_default(schema, node["default"])
    return schema


def required_schema(node: Any) -> Schema:
    """A schema that may not be JSON null (an array's items, a map's keys and values, a field)."""
    schema = from_json(node)
    if schema is None:
        raise DataError("Schema must contain 'type' field")
    return schema


def _nested(kind: str, node: dict[str, Any]) -> dict[str, Any]:
    if kind == "array":
        items = node.get("items")
        if items is None:
            raise DataError("Array schema did not specify the element type")
        return {"items": required_schema(items)}
    if kind == "map":
        if node.get("keys") is None:
            raise DataError("Map schema did not specify the key type")
        if node.get("values") is None:
            raise DataError("Map schema did not specify the value type")
        return {"keys": required_schema(node["keys"]), "items": required_schema(node["values"])}
    if kind == "struct":
        return {"fields": _fields(node.get("fields"))}
    return {}


def _fields(nodes: Any) -> tuple[Field, ...]:
    if not isinstance(nodes, list):
        raise DataError("Struct schema's \"fields\" argument is not an array.")
    fields: list[Field] = []
    for node in nodes:
        name = node.get("field") if isinstance(node, dict) else None
        if not isinstance(name, str):
            raise DataError("Struct schema's field name not specified properly")
        if any(f.name == name for f in fields):
            raise DataError(f"Cannot create field because of field name duplication {name}")
        fields.append(Field(name, required_schema(node)))
    return tuple(fields)


def _parameters(node: Any) -> Mapping[str, str] | None:
    if not isinstance(node, dict):
        return None
    if not all(isinstance(value, str) for value in node.values()):
        raise DataError("Schema parameters must have string values.")
    return dict(node)


def _with_default(schema: Schema, node: Any) -> Schema:
    value = to_connect(schema, node, replace_null_with_default=False)
    return Schema(**{**schema.__dict__, "default": value}) if value is not None else schema


