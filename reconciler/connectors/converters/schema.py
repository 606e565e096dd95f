"""Connect's schemas (`org.apache.kafka.connect.data.Schema`), read from and written as
`JsonConverter`'s JSON schema (`JsonConverter.asConnectSchema` / `asJsonSchema`).

Pure. A schema is a frozen `Schema` value (`schema_json.from_json` reads one). Defaults are kept
as Connect values (what `values.to_connect` gives), so a null field can be replaced by its
default as Java does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
DATE: Final = "org.apache.kafka.connect.data.Date"
TIME: Final = "org.apache.kafka.connect.data.Time"
TIMESTAMP: Final = "org.apache.kafka.connect.data.Timestamp"
SCALE: Final = "scale"
# Not Connect's own, but what Confluent's and Debezium's connectors put beside `scale`.
PRECISION: Final = "connect.decimal.precision"

# Connect's types as JsonConverter names them in a schema (JsonSchema.*_TYPE_NAME).
PRIMITIVES: Final = ("boolean", "int8", "int16", "int32", "int64", "float", "double", "bytes", "string")
TYPES: Final = (*PRIMITIVES, "array", "map", "struct")


class DataError(ValueError):
    """What Java's `DataException` says: a value or a schema JsonConverter cannot convert."""


@dataclass(frozen=True)
class Schema:
    """A Connect schema. `type` is JsonConverter's name of the type (`int32`, `float` for
    FLOAT32, `double` for FLOAT64…); `items` is an array's element or a map's value schema."""

    type: str
    optional: bool = False
    name: str | None = None
    version: int | None = None
    doc: str | None = None
    parameters: Mapping[str, str] | None = None
    default: Any = None
    fields: tuple[Field, ...] = ()
    keys: Schema | None = None
    items: Schema | None = None

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    @property
    def logical(self) -> str | None:
        """The logical type JsonConverter converts (Decimal, Date, Time, Timestamp), by name."""
        return self.name if self.name in (DECIMAL, DATE, TIME, TIMESTAMP) else None

    def scale(self) -> int:
        """A Decimal's scale (Java's `Decimal.scale`)."""
        text = (self.parameters or {}).get(SCALE)
        if text is None:
            raise DataError("Invalid Decimal schema: scale parameter not found.")
        try:
            return int(text)
        except ValueError:
            raise DataError(f"Invalid scale parameter found in Decimal schema: {text!r}") from None

    def describe(self) -> str:
        """How error messages name the schema: Java's `Schema.Type` name."""
        return {"float": "FLOAT32", "double": "FLOAT64"}.get(self.type, self.type.upper())


@dataclass(frozen=True)
class Field:
    name: str
    schema: Schema = field(repr=False)


def type_key(schema: Schema) -> str:
    """What decides a schema's Arrow type (`converters.arrow.arrow_type`), as text: two schemas
    with the same key are one column type (their docs, versions and defaults may differ)."""
    if schema.logical:
        params = (schema.parameters or {}) if schema.logical == DECIMAL else {}
        detail = ",".join(f"{k}={params[k]}" for k in (SCALE, PRECISION) if k in params)
        return f"{schema.logical.rsplit('.', 1)[1]}({detail})" if detail else schema.logical.rsplit(".", 1)[1]
    if schema.type == "array":
        assert schema.items is not None
        return f"array<{_nested_key(schema.items)}>"
    if schema.type == "map":
        assert schema.keys is not None and schema.items is not None
        return f"map<{type_key(schema.keys)},{_nested_key(schema.items)}>"
    if schema.type == "struct":
        return "struct<" + ",".join(f"{f.name}:{_nested_key(f.schema)}" for f in schema.fields) + ">"
    return schema.type


def _nested_key(schema: Schema) -> str:
    return type_key(schema) + ("" if schema.optional else " not null")


def optional(schema: Schema) -> Schema:
    """The same schema, optional (a field only some records of a batch have)."""
    return schema if schema.optional else Schema(**{**schema.__dict__, "optional": True})


def decimal(scale: int, precision: int | None = None, optional: bool = False) -> Schema:
    """Connect's `Decimal.schema(scale)` (with Confluent's precision parameter when given)."""
    parameters = {SCALE: str(scale)}
    if precision is not None:
        parameters[PRECISION] = str(precision)
    return Schema("bytes", optional, DECIMAL, 1, parameters=parameters)


def struct(*fields: tuple[str, Schema], optional: bool = False, name: str | None = None) -> Schema:
    return Schema("struct", optional, name, fields=tuple(Field(n, s) for n, s in fields))


# --- Schema → JSON schema (JsonConverter.asJsonSchema) ----------------------------------------


def to_json(schema: Schema | None, default_json: Any = None) -> dict[str, Any] | None:
    """The schema's JSON, keys in JsonConverter's order. `default_json(schema, value)` writes a
    default value (the encoder passes its own, which knows the decimal format)."""
    if schema is None:
        return None
    out: dict[str, Any] = {"type": schema.type}
    if schema.type == "array":
        out["items"] = to_json(schema.items, default_json)
    elif schema.type == "map":
        out["keys"] = to_json(schema.keys, default_json)
        out["values"] = to_json(schema.items, default_json)
    elif schema.type == "struct":
        out["fields"] = [{**(to_json(f.schema, default_json) or {}), "field": f.name} for f in schema.fields]
    out["optional"] = schema.optional
    for key in ("name", "version", "doc"):
        if getattr(schema, key) is not None:
            out[key] = getattr(schema, key)
    if schema.parameters is not None:
        out["parameters"] = dict(schema.parameters)
    if schema.default is not None and default_json is not None:
        out["default"] = default_json(schema, schema.default)
    return out
