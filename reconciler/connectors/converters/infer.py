"""A schema for schemaless JSON (`schemas.enable=false`, or an envelope with `"schema":null`),
inferred per batch, and the records shaped to it (docs/converters.md#schemaless-json).

Pure. The rules, from the values of the whole batch:

- an integer is `int64`; a number with a fraction or an exponent is `double`; a field that
  holds both is `double` (Java's JsonConverter reads them as INT64 and FLOAT64);
- a string is `string`, true/false is `boolean`;
- an object is a `struct` whose fields are all the keys seen, in the order first seen; an
  array is an `array` of its elements' type;
- every field is optional (a key missing from a record is null); a field that is only ever
  null, or an array only ever empty, has the type `null` (no value to type it by);
- a field whose values disagree otherwise (a string here, a number there; an object and an
  array) is a `string` holding each value's JSON text (a string as itself): no record is lost
  for another record's type;
- an integer outside int64's range fails its record (Java keeps its low 64 bits).
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Final

from reconciler.connectors.converters.encode import dumps
from reconciler.connectors.converters.schema import DataError, Field, Schema

NULL: Final = Schema("null", optional=True)
# The type of a field whose values disagree: their JSON text.
JSON_TEXT: Final = Schema("string", optional=True, name="connect-reconciler.JsonText")
_PRIMITIVE: Final = {bool: "boolean", int: "int64", Decimal: "double", str: "string"}


def infer(nodes: Iterable[Any]) -> Schema:
    """The schema of all `nodes` (parsed JSON, numbers with fractions as `Decimal`)."""
    schema = NULL
    for node in nodes:
        if not _fits(schema, node):  # the common case, a record like the others, builds nothing
            schema = merge(schema, schema_of(node))
    return schema


def _fits(schema: Schema, node: Any) -> bool:
    """Whether `merge(schema, schema_of(node))` is `schema` itself."""
    if node is None or schema is JSON_TEXT:
        return True
    kind = schema.type
    if kind == "struct":
        if type(node) is not dict or len(node) > len(schema.fields):
            return False
        fields = schema.fields
        for i, (key, value) in enumerate(node.items()):
            f = fields[i] if i < len(fields) and fields[i].name == key else schema.field(key)
            if f is None or not _fits(f.schema, value):
                return False
        return True
    if kind == "array":
        assert schema.items is not None
        return type(node) is list and all(_fits(schema.items, element) for element in node)
    expected = _PRIMITIVE.get(type(node))
    return expected == kind or (kind == "double" and expected == "int64")


def schema_of(node: Any) -> Schema:
    if node is None:
        return NULL
    if isinstance(node, list):
        return Schema("array", optional=True, items=infer(node))
    if isinstance(node, dict):
        return Schema("struct", optional=True, fields=tuple(Field(k, schema_of(v)) for k, v in node.items()))
    return Schema(_PRIMITIVE[type(node)], optional=True)


def merge(a: Schema, b: Schema) -> Schema:
    if a.type == "null" or a == b:
        return b
    if b.type == "null":
        return a
    if {a.type, b.type} == {"int64", "double"}:
        return Schema("double", optional=True)
    if a.type == b.type == "array":
        assert a.items is not None and b.items is not None
        return Schema("array", optional=True, items=merge(a.items, b.items))
    if a.type == b.type == "struct":
        fields = {f.name: f.schema for f in a.fields}
        for f in b.fields:
            fields[f.name] = merge(fields[f.name], f.schema) if f.name in fields else f.schema
        return Schema("struct", optional=True, fields=tuple(Field(n, s) for n, s in fields.items()))
    return JSON_TEXT


def shape(schema: Schema, node: Any) -> Any:
    """`node` as the Arrow-ready value of inferred `schema`; raises `DataError`."""
    if node is None or schema.type == "null":
        return None
    if schema is JSON_TEXT or schema.name == JSON_TEXT.name:
        return node if isinstance(node, str) else dumps(node).decode("utf-8")
    if schema.type == "int64":
        if not -(2**63) <= node < 2**63:
            raise DataError(f"the integer {node} is outside int64's range")
        return node
    if schema.type == "double":
        return float(node)
    if schema.type == "array":
        assert schema.items is not None
        return [shape(schema.items, element) for element in node]
    if schema.type == "struct":
        return {f.name: shape(f.schema, node.get(f.name)) for f in schema.fields}
    return node
