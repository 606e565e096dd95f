"""A batch of JsonConverter bytes read into Connect values under one schema for the batch.

Pure. Each record is read as `JsonConverter.toConnectData` reads it (the envelope when
`schemas.enable`, the schema, the payload against it); a record Java would refuse is a failure
(its index and Java's reason), never an exception. The batch then needs one schema:

- records with schemas: all of one schema, the common case; or structs whose fields are
  merged by name (a field some schemas lack becomes optional); a record whose schema gives a
  field (or the value) another Arrow type than an earlier record's fails;
- records without: a schema inferred from them all (`infer`);
- both in one batch: the records without a schema fail (a Java sink gets both kinds, untyped
  and typed; one table cannot hold both).

A null record (a tombstone), and an envelope whose schema and payload are both null, is a row
of nulls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler.connectors.converters import infer
from reconciler.connectors.converters.schema import DataError, Field, Schema, optional, type_key
from reconciler.connectors.converters.schema_json import from_json
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.converters.values import to_connect
from reconciler.kafka.formats.jackson import JsonError, loads_exact

_NO_SCHEMA = object()
ENVELOPE_NEEDED = ('JsonConverter with schemas.enable requires "schema" and "payload" fields and may not contain '
                   "additional fields. If you are trying to deserialize plain JSON data, set schemas.enable=false "
                   "in your converter configuration.")


@dataclass(frozen=True)
class DecodeFailure:
    index: int  # the record's position in the batch
    reason: str


@dataclass
class Read:
    """`values[i]` is the Connect value of batch record `rows[i]` under `schema` (None when the
    batch has no value to type: all tombstones)."""

    schema: Schema | None = None
    rows: list[int] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    failures: list[DecodeFailure] = field(default_factory=list)


def read_json(values: Sequence[bytes | None], converter: Converter) -> Read:
    typed: list[tuple[int, Schema | None, Any]] = []
    schemaless: list[tuple[int, Any]] = []
    failures: list[DecodeFailure] = []
    cache: dict[str, Schema | None] = {}
    for index, raw in enumerate(values):
        try:
            schema, payload = _envelope(raw, converter, cache)
            if schema is None:
                schemaless.append((index, payload))
            else:
                typed.append((index, schema, to_connect(schema, payload,
                                                        replace_null_with_default=converter.replace_null_with_default)))
        except (DataError, JsonError, RecursionError) as exc:
            failures.append(DecodeFailure(index, str(exc)))
    read = _typed(typed, failures) if typed else _schemaless(schemaless, failures)
    if typed:
        for index, payload in schemaless:
            if payload is None:
                read.rows.append(index)
                read.values.append(None)
            else:
                failures.append(DecodeFailure(index, "has no schema, while other records of the batch have one"))
        ordered = sorted(zip(read.rows, read.values, strict=True), key=lambda pair: pair[0])
        read.rows, read.values = [row for row, _ in ordered], [value for _, value in ordered]
    return read


def _envelope(raw: bytes | None, converter: Converter, cache: dict[str, Schema | None]) -> tuple[Schema | None, Any]:
    if raw is None:
        return None, None
    try:
        node = loads_exact(raw)
    except JsonError as exc:
        raise DataError(f"Converting byte[] to Kafka Connect data failed due to serialization error: {exc}") from None
    if not converter.schemas_enable:
        return None, node
    if not isinstance(node, dict) or len(node) != 2 or "schema" not in node or "payload" not in node:
        raise DataError(ENVELOPE_NEEDED)
    key = repr(node["schema"])
    if key not in cache:
        cache[key] = from_json(node["schema"])
    return cache[key], node["payload"]


def _typed(records: list[tuple[int, Schema | None, Any]], failures: list[DecodeFailure]) -> Read:
    read = Read(failures=failures)
    distinct: dict[int, Schema] = {}
    for _, schema, _ in records:
        assert schema is not None
        distinct.setdefault(id(schema), schema)
    batch = _merged(list(distinct.values()))
    for index, schema, value in records:
        assert schema is not None
        problem = _conflict(batch, schema)
        if problem:
            failures.append(DecodeFailure(index, problem))
            continue
        read.rows.append(index)
        read.values.append(_aligned(batch, schema, value))
    read.schema = batch
    return read


def _merged(schemas: list[Schema]) -> Schema:
    first = schemas[0]
    if len(schemas) == 1 or first.type != "struct":
        return first
    fields: dict[str, Schema] = {}
    for schema in schemas:
        if schema.type != "struct":
            continue
        for f in schema.fields:
            if f.name not in fields:
                fields[f.name] = f.schema
    structs = [s for s in schemas if s.type == "struct"]
    merged = tuple(Field(name, s if all(x.field(name) for x in structs) else optional(s)) for name, s in fields.items())
    return Schema("struct", first.optional, first.name, fields=merged)


def _conflict(batch: Schema, schema: Schema) -> str | None:
    if schema is batch:
        return None
    if batch.type == "struct" and schema.type == "struct":
        for f in schema.fields:
            other = batch.field(f.name)
            if other is not None and type_key(other.schema) != type_key(f.schema):
                return (f"its schema gives field {f.name!r} the type {type_key(f.schema)}, "
                        f"an earlier record's schema {type_key(other.schema)}")
        return None
    if type_key(batch) != type_key(schema):
        return f"its schema's type {type_key(schema)} is not the batch's {type_key(batch)}"
    return None


def _aligned(batch: Schema, schema: Schema, value: Any) -> Any:
    if schema is batch or value is None or batch.type != "struct":
        return value
    return {f.name: value.get(f.name) for f in batch.fields}


def _schemaless(records: list[tuple[int, Any]], failures: list[DecodeFailure]) -> Read:
    read = Read(failures=failures)
    if not records or all(payload is None for _, payload in records):
        read.rows = [index for index, _ in records]
        read.values = [None for _ in records]
        return read
    schema = infer.infer(payload for _, payload in records)
    for index, payload in records:
        try:
            value = infer.shape(schema, payload)
        except DataError as exc:
            failures.append(DecodeFailure(index, str(exc)))
            continue
        read.rows.append(index)
        read.values.append(value)
    read.schema = schema
    return read
