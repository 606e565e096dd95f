"""Records into the rows and deletes of one transaction. Pure.

`layout` decides the table's columns from the batch's key and value schemas as Confluent's
`FieldsMetadata` does (pk.mode, pk.fields, fields.whitelist); `to_pg` turns a Connect value
into what psycopg writes for its column type; `plan` folds a partition's records into rows to
put and keys to delete, so one statement per kind gives the end state the records, applied one
by one, would give.
"""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.converters.schema import Schema
from reconciler.connectors.jdbc.config import KAFKA_PK_NAMES, JdbcSinkSettings
from reconciler.connectors.jdbc.sql import Column, UnsupportedType, pg_type
from reconciler.connectors.jdbc.temporal import is_temporal, to_pg_time

KAFKA_SCHEMAS: Final = (Schema("string"), Schema("int32"), Schema("int64"))
KAFKA_FIELDS: Final = ("topic", "partition", "offset")  # of `Record`, in KAFKA_PK_NAMES' order
Part = Literal["kafka", "key", "value"]


@dataclass(frozen=True)
class Record:
    """One record, its key and value read by their converters (None: null)."""

    topic: str
    partition: int
    offset: int
    key: Any
    value: Any
    skip: bool = False  # a change event that changes no row here (changes.py)


@dataclass(frozen=True)
class Layout:
    """The table's columns, where each one's value comes from (the part, and a struct's field or
    None for the whole part) and its Connect schema (None: schemaless, written as read)."""

    columns: tuple[Column, ...]
    sources: tuple[tuple[Part, str | None], ...]
    schemas: tuple[Schema | None, ...]
    keys: tuple[str, ...]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def others(self) -> list[str]:
        return [c.name for c in self.columns if c.name not in self.keys]


@dataclass
class Planned:
    puts: list[tuple[Any, ...]] = field(default_factory=list)  # rows in `Layout.names` order
    deletes: list[tuple[Any, ...]] = field(default_factory=list)  # key values in `Layout.keys` order


def layout(settings: JdbcSinkSettings, table: str, key_schema: Schema | None, value_schema: Schema | None,
           schemaless: bool = False) -> Layout:
    """The columns for records with these schemas (`schemaless`: the value's were inferred)."""
    entries: list[tuple[str, Part, str | None, Schema]] = []
    mode = settings.pk_mode
    if mode == "kafka":
        names = settings.pk_fields or KAFKA_PK_NAMES
        entries += [(n, "kafka", attr, s) for n, attr, s in zip(names, KAFKA_FIELDS, KAFKA_SCHEMAS, strict=True)]
    elif mode == "record_key":
        entries += _key_fields(settings, table, key_schema)
    elif mode == "record_value":
        entries += _value_keys(settings, table, value_schema)
    keys = tuple(name for name, *_ in entries)
    if value_schema is not None:
        if value_schema.type != "struct":
            raise ConnectorError(f"table {table}: the record values' schema is {value_schema.describe()}; "
                                 "jdbc-sink writes Struct values (one column per field)")
        entries += [(f.name, "value", f.name, f.schema) for f in value_schema.fields
                    if f.name not in keys and (not settings.whitelist or f.name in settings.whitelist)]
    columns, sources, schemas = [], [], []
    for name, part, source, schema in entries:
        try:
            kind = "TEXT" if schemaless and part == "value" and schema.type in ("struct", "map") else pg_type(schema)
        except UnsupportedType as exc:
            raise ConnectorError(f"table {table}, column {name}: {exc}") from None
        columns.append(Column(name, kind, schema.optional or (part == "value" and schemaless)))
        sources.append((part, source))
        schemas.append(None if schemaless and part == "value" else schema)
    return Layout(tuple(columns), tuple(sources), tuple(schemas), keys)


def _key_fields(settings: JdbcSinkSettings, table: str, schema: Schema | None) -> list[tuple[str, Part, str | None, Schema]]:
    if schema is None:
        raise ConnectorError(f"table {table}: pk.mode=record_key, but the records have no key schema "
                             "(set key.converter, with schemas)")
    if schema.type != "struct":
        if len(settings.pk_fields) != 1:
            raise ConnectorError(f"table {table}: the key is a primitive ({schema.describe()}), so pk.fields must "
                                 f"name exactly one column; it names {list(settings.pk_fields)}")
        return [(settings.pk_fields[0], "key", None, schema)]
    return [(name, "key", name, _field(schema, name, table, "key")) for name in
            (settings.pk_fields or [f.name for f in schema.fields])]


def _value_keys(settings: JdbcSinkSettings, table: str, schema: Schema | None) -> list[tuple[str, Part, str | None, Schema]]:
    if schema is None or schema.type != "struct":
        raise ConnectorError(f"table {table}: pk.mode=record_value needs Struct values with a schema")
    return [(name, "value", name, _field(schema, name, table, "value")) for name in
            (settings.pk_fields or [f.name for f in schema.fields])]


def _field(schema: Schema, name: str, table: str, part: str) -> Schema:
    found = schema.field(name)
    if found is None:
        raise ConnectorError(f"table {table}: pk.fields names {name!r}, which the record {part}'s schema lacks")
    return found.schema


# --- values ---------------------------------------------------------------------------------


def to_pg(schema: Schema | None, value: Any, zone: dt.tzinfo, date_zone: dt.tzinfo | None = None) -> Any:
    """What psycopg writes for a Connect value (`zone`: db.timezone, for Timestamp and Time;
    `date_zone`: for Date, None unless db.timezone.date=none; `temporal`)."""
    if value is None:
        return None
    if schema is None:  # schemaless: JSON values as read; objects and arrays as JSON text
        if isinstance(value, (dict, list)):
            return json.dumps(value, default=str, ensure_ascii=False)
        return value.replace("\x00", "") if isinstance(value, str) else value
    if schema.name and is_temporal(schema.name):
        return to_pg_time(schema.name, value, zone, date_zone)
    if schema.type == "string":
        return value.replace("\x00", "")  # PostgreSQL text cannot hold NUL (Confluent drops it too)
    if schema.type == "array":
        return [to_pg(schema.items, v, zone, date_zone) for v in value]
    return value


def zone_of(settings: JdbcSinkSettings) -> dt.tzinfo:
    return zoneinfo.ZoneInfo(settings.timezone)


def row_of(record: Record, lay: Layout, zone: dt.tzinfo, date_zone: dt.tzinfo | None = None) -> tuple[Any, ...]:
    return tuple(to_pg(schema, _pick(record, part, name), zone, date_zone)
                 for (part, name), schema in zip(lay.sources, lay.schemas, strict=True))


def _pick(record: Record, part: Part, name: str | None) -> Any:
    if part == "kafka":
        return getattr(record, name or "offset")
    whole = record.key if part == "key" else record.value
    if name is None or whole is None:
        return whole
    return whole.get(name)


# --- folding a partition's records ----------------------------------------------------------


def plan(records: Sequence[Record], lay: Layout, settings: JdbcSinkSettings, zone: dt.tzinfo) -> Planned:
    """Rows to put and keys to delete. With a record key or value as the key, a key's tombstone
    deletes its row and only the records after its last tombstone are put (upsert and update:
    only its last); with no key (pk.mode none or kafka) every record is a row."""
    planned = Planned()
    keyed = settings.pk_mode in ("record_key", "record_value")
    records = [r for r in records if not r.skip]
    dates = zone if settings.date_in_db_zone else None
    if not keyed:
        for record in records:
            _require_value(record, settings)
            planned.puts.append(row_of(record, lay, zone, dates))
        return planned
    key_positions = [lay.names.index(k) for k in lay.keys]
    last: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}
    deleted: set[tuple[Any, ...]] = set()
    for record in records:
        if record.value is None and not settings.delete_enabled:
            _require_value(record, settings)
        row = row_of(record, lay, zone, dates) if record.value is not None else None
        key = _key(record, lay, zone, dates) if row is None else tuple(_hashable(row[i]) for i in key_positions)
        if row is None:
            deleted.add(key)
            last[key] = []
        elif settings.insert_mode == "insert":
            last.setdefault(key, []).append(row)
        else:
            last[key] = [row]
    planned.deletes = sorted(deleted, key=repr)
    planned.puts = [row for rows in last.values() for row in rows]
    return planned


def _key(record: Record, lay: Layout, zone: dt.tzinfo, dates: dt.tzinfo | None) -> tuple[Any, ...]:
    picked = []
    for name in lay.keys:
        index = lay.names.index(name)
        part, source = lay.sources[index]
        picked.append(_hashable(to_pg(lay.schemas[index], _pick(record, part, source), zone, dates)))
    return tuple(picked)


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _require_value(record: Record, settings: JdbcSinkSettings) -> None:
    if record.value is None:
        raise ConnectorError(
            f"Sink connector '{settings.name}' is configured with 'delete.enabled={str(settings.delete_enabled).lower()}'"
            f" and 'pk.mode={settings.pk_mode}' and therefore requires records with a non-null Struct value and "
            f"non-null Struct schema, but found record at (topic='{record.topic}',partition={record.partition},"
            f"offset={record.offset}) with a null value")
