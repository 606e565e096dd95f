"""PostgreSQL result columns as Connect fields, as Confluent's `GenericDatabaseDialect.addFieldToSchema`
and `PostgreSqlDatabaseDialect` map the types pgjdbc reports (docs/connectors.md#jdbc-source),
and each row's values as the Connect values JsonConverter writes. Pure.

A column type with no mapping (arrays, intervals, network types…) is left out of the record,
as Confluent's source leaves it out (it logs "not currently supported"). A field is optional
unless its column is NOT NULL in its table (pgjdbc's `isNullable`).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from reconciler.connectors.converters.encode import Float32
from reconciler.connectors.converters.schema import DATE, TIME, TIMESTAMP, Schema, decimal as decimal_schema, struct

# pg_type OIDs by the Connect type Confluent's source gives the JDBC type pgjdbc reports.
_PLAIN: Final = {
    16: "boolean", 17: "bytes", 18: "string", 19: "string", 25: "string", 1042: "string", 1043: "string",
    142: "string", 114: "string", 3802: "string", 2950: "string",  # xml; json, jsonb, uuid (PostgreSQL dialect)
    20: "int64", 21: "int16", 23: "int32", 26: "int64", 700: "float", 701: "double",
}
_LOGICAL: Final = {1082: DATE, 1083: TIME, 1266: TIME, 1114: TIMESTAMP, 1184: TIMESTAMP}
NUMERIC: Final = 1700
TEXT_OIDS: Final = (114, 3802, 2950)  # read as text: json and jsonb as the server prints them, uuid
MAX_INTEGER_PRECISION: Final = 18
_EPOCH_DAY: Final = dt.date(1970, 1, 1)

Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class ColumnInfo:
    """What a result column tells about itself (psycopg's description, the table's NOT NULL)."""

    name: str
    oid: int
    precision: int | None = None
    scale: int | None = None
    not_null: bool = False


@dataclass(frozen=True)
class RowShape:
    """The record schema of a result and, per kept column, its index and value converter."""

    schema: Schema
    indexes: tuple[int, ...]
    converters: tuple[Convert, ...]
    skipped: tuple[str, ...]  # columns of a type with no Connect mapping

    def value(self, row: Sequence[Any]) -> dict[str, Any]:
        return {field.name: (None if row[i] is None else convert(row[i]))
                for field, i, convert in zip(self.schema.fields, self.indexes, self.converters, strict=True)}


def _integer_schema(precision: int) -> str:
    """`integerSchema(optional, precision)`: the smallest integer type holding the digits."""
    return "int64" if precision > 9 else "int32" if precision > 4 else "int16" if precision > 2 else "int8"


def _same(value: Any) -> Any:
    return value


def _numeric(column: ColumnInfo, mapping: str) -> tuple[Schema, Convert]:
    precision, scale = column.precision or 0, column.scale or 0
    optional = not column.not_null
    integral = scale == 0 and column.precision is not None and precision <= MAX_INTEGER_PRECISION
    if mapping != "none" and integral:
        return Schema(_integer_schema(precision), optional), int
    if mapping in ("best_fit", "best_fit_eager_double") and scale > 0 and (
            mapping == "best_fit_eager_double" or precision <= MAX_INTEGER_PRECISION):
        return Schema("double", optional), float
    exponent = decimal.Decimal(1).scaleb(-scale)

    def rescale(value: decimal.Decimal) -> decimal.Decimal:
        if not value.is_finite():
            raise ValueError(f"column {column.name} holds {value}, which a Connect Decimal cannot hold")
        return value.quantize(exponent, rounding=decimal.ROUND_HALF_UP)
    return decimal_schema(scale, precision, optional), rescale


def _field(column: ColumnInfo, mapping: str, zone: dt.tzinfo) -> tuple[Schema, Convert] | None:
    optional = not column.not_null
    if column.oid in _PLAIN:
        kind = _PLAIN[column.oid]
        return Schema(kind, optional), Float32 if kind == "float" else str if column.oid in TEXT_OIDS else _same
    if column.oid == NUMERIC:
        return _numeric(column, mapping)
    logical = _LOGICAL.get(column.oid)
    if logical is None:
        return None
    base = {DATE: "int32", TIME: "int32", TIMESTAMP: "int64"}[logical]
    schema = Schema(base, optional, logical, 1)
    if column.oid == 1114:
        return schema, lambda v: to_utc(v, zone)
    if column.oid == 1266:
        return schema, _utc_time
    return schema, _same


def to_utc(value: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """A `timestamp` (no time zone) read in `db.timezone`, or a `timestamptz`, as UTC."""
    moment = value if value.tzinfo is not None else value.replace(tzinfo=zone)
    return moment.astimezone(dt.UTC)


def _utc_time(value: dt.time) -> dt.time:
    moment = dt.datetime.combine(_EPOCH_DAY, value.replace(tzinfo=value.tzinfo or dt.UTC))
    return moment.astimezone(dt.UTC).time()


def row_shape(columns: Sequence[ColumnInfo], name: str | None, mapping: str, zone: dt.tzinfo) -> RowShape:
    """The records' schema: a struct named after the table (none for a query), as `SchemaMapping.create`."""
    fields, indexes, converters, skipped = [], [], [], []
    for index, column in enumerate(columns):
        mapped = _field(column, mapping, zone)
        if mapped is None:
            skipped.append(column.name)
            continue
        fields.append((column.name, mapped[0]))
        indexes.append(index)
        converters.append(mapped[1])
    return RowShape(struct(*fields, name=name), tuple(indexes), tuple(converters), tuple(skipped))

