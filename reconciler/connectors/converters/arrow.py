"""Connect's types as Arrow types, and a batch of keys or values decoded into typed columns.

Imports pyarrow: only the tasks that decode import this module (`validate`, `plan`, `apply`
and `status` never do). `decode` reads a batch of raw bytes with a `Converter` and returns an
Arrow table, one row per record that decoded, and a `DecodeFailure` (record index, reason) for
each one that did not, so a sink applies `errors.tolerance` and its dead letter queue to them
instead of failing the batch (docs/converters.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

import pyarrow as pa

from reconciler.connectors.converters.records import DecodeFailure, Read, read_json
from reconciler.connectors.converters.schema import DATE, DECIMAL, PRECISION, TIME, TIMESTAMP, DataError, Schema
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.converters.uniform import read_uniform

_PRIMITIVES: Final = {
    "boolean": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "float": pa.float32(), "double": pa.float64(), "bytes": pa.binary(), "string": pa.string(), "null": pa.null(),
}
MAX_DECIMAL128: Final = 38


@dataclass(frozen=True)
class Decoded:
    """`table` holds the records that decoded; `rows[i]` is the batch index of its row i;
    `struct`: the table's columns are a struct's fields (else one column, the value)."""

    table: pa.Table
    rows: list[int]
    failures: list[DecodeFailure] = field(default_factory=list)
    struct: bool = False

    def complete(self, count: int) -> bool:
        """Every one of the batch's `count` records decoded: row i is record i (`rows` are
        distinct batch indices in order), so the table needs no take to line up with the batch."""
        return len(self.rows) == count and not self.failures


def arrow_type(schema: Schema) -> pa.DataType:
    """The Arrow type of a Connect schema (docs/converters.md#types)."""
    if schema.name == DECIMAL:
        scale = schema.scale()
        text = (schema.parameters or {}).get(PRECISION) or ""
        precision = int(text) if text.isdigit() and 0 < int(text) <= 76 else MAX_DECIMAL128  # Java ignores it
        return pa.decimal128(precision, scale) if precision <= MAX_DECIMAL128 else pa.decimal256(precision, scale)
    logical = {DATE: pa.date32(), TIME: pa.time32("ms"), TIMESTAMP: pa.timestamp("ms", tz="UTC")}.get(schema.name or "")
    if logical is not None:
        return logical
    if schema.type in _PRIMITIVES:
        return _PRIMITIVES[schema.type]
    if schema.type == "array":
        assert schema.items is not None
        return pa.list_(arrow_field("element", schema.items))
    if schema.type == "map":
        assert schema.keys is not None and schema.items is not None
        return pa.map_(arrow_field("key", schema.keys, nullable=False), arrow_field("value", schema.items))
    return pa.struct([arrow_field(f.name, f.schema) for f in schema.fields])


def arrow_field(name: str, schema: Schema, nullable: bool | None = None) -> pa.Field:
    """A column or nested field: nullable when the schema is optional (top-level columns always
    are: a tombstone's row is null)."""
    return pa.field(name, arrow_type(schema), nullable=schema.optional if nullable is None else nullable)


def decode(values: Sequence[bytes | None] | pa.Array | pa.ChunkedArray, converter: Converter, name: str = "value", *,
           fast: bool = True) -> Decoded:
    """The batch's keys or values, a list or a binary Arrow column (`name` names the column of
    a non-struct value); `fast`: try `uniform.read_uniform` first (False: every record read in
    Python, the reference)."""
    uniform = read_uniform(values, converter) if fast else None  # the common batch, read in C++
    if uniform is not None:
        return Decoded(uniform.table, list(range(len(values))), struct=True)
    strings = _utf8(values) if fast and converter.kind == "string" and converter.encoding == "utf-8" else None
    if strings is not None:
        return Decoded(pa.table({name: strings}), list(range(len(values))))
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        values = values.to_pylist()
    if converter.kind == "bytes":
        return Decoded(pa.table({name: pa.array(values, pa.binary())}), list(range(len(values))))
    if converter.kind == "string":
        texts = [None if v is None else _text(v, converter.encoding) for v in values]
        return Decoded(pa.table({name: pa.array(texts, pa.string())}), list(range(len(values))))
    read = read_json(values, converter)
    return _table(read, name)


def _utf8(values: Sequence[bytes | None] | pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray | None:
    """UTF-8 strings cast in C++ when every one is well-formed UTF-8, where Java's decoding and
    Arrow's give the same text; None when one is not (Java replaces what is malformed: `_text`)."""
    column = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.binary())
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        return None
    try:
        return column.cast(pa.string())  # the type the per-record way gives
    except pa.ArrowException:  # "Invalid UTF8 payload" (or over 2 GiB): the per-record way, with Java's U+FFFD
        return None


def _text(raw: bytes, codec: str) -> str:
    """Java's `new String(bytes, charset)`: malformed input becomes U+FFFD, never an error."""
    if codec == "utf-16" and not raw.startswith((b"\xfe\xff", b"\xff\xfe")):
        codec = "utf-16-be"  # Java's UTF-16 without a byte order mark is big-endian
    return raw.decode(codec, errors="replace")


def _table(read: Read, name: str) -> Decoded:
    failures = list(read.failures)
    schema, rows, values = read.schema, read.rows, read.values
    try:
        if schema is not None:
            arrow_type(schema)
    except (DataError, ValueError, pa.ArrowException) as exc:  # a Decimal schema without its scale
        failures += [DecodeFailure(index, f"its schema has no Arrow type: {exc}") for index in rows]
        return Decoded(pa.table({name: pa.array([], pa.null())}), [], _in_order(failures))
    if schema is not None and _needs_fit(schema):
        rows, values = _kept(rows, values, failures, lambda value: _fit(schema, value))
    try:
        table = _columns(schema, values, name)
    except (ValueError, TypeError, OverflowError, pa.ArrowException):
        # A value Arrow refuses (a string with a lone surrogate, which Java's strings may hold):
        # find which, and leave them out.
        rows, values = _kept(rows, values, failures, lambda value: _columns(schema, [value], name) and value)
        table = _columns(schema, values, name)
    struct = schema is not None and schema.type == "struct" and bool(schema.fields)
    return Decoded(table, rows, _in_order(failures), struct)


def _kept(rows: list[int], values: list[Any], failures: list[DecodeFailure],
          check: Callable[[Any], Any]) -> tuple[list[int], list[Any]]:
    """The rows and values `check` takes (its result replaces the value); a failure for the others."""
    kept_rows, kept = [], []
    for index, value in zip(rows, values, strict=True):
        try:
            kept.append(check(value))
        except (DataError, ArithmeticError, ValueError, TypeError, OverflowError, pa.ArrowException) as exc:
            failures.append(DecodeFailure(index, str(exc)))
            continue
        kept_rows.append(index)
    return kept_rows, kept


def _in_order(failures: list[DecodeFailure]) -> list[DecodeFailure]:
    return sorted(failures, key=lambda f: f.index)


def _columns(schema: Schema | None, values: list[Any], name: str) -> pa.Table:
    if schema is None:
        return pa.table({name: pa.array(values, pa.null())})
    if schema.type != "struct" or not schema.fields:
        return pa.Table.from_arrays([pa.array(values, arrow_type(schema))], schema=pa.schema([arrow_field(name, schema, True)]))
    array = pa.array(values, pa.struct([arrow_field(f.name, f.schema, True) for f in schema.fields]))
    return pa.Table.from_struct_array(array) if len(array) else pa.table(
        {f.name: pa.array([], arrow_type(f.schema)) for f in schema.fields},
        schema=pa.schema([arrow_field(f.name, f.schema, True) for f in schema.fields]))


def _fit(schema: Schema, value: Any) -> Any:
    """Check what Arrow cannot hold as Java would keep it: a decimal with more fraction digits
    than the scale, or more digits than the precision."""
    if value is None:
        return None
    if schema.name == DECIMAL:
        return _decimal(schema, value)
    if schema.type == "array" and schema.items is not None and _needs_fit(schema.items):
        return [_fit(schema.items, v) for v in value]
    if schema.type == "map" and schema.items is not None and _needs_fit(schema.items):
        return [(k, _fit(schema.items, v)) for k, v in value]
    if schema.type == "struct" and any(_needs_fit(f.schema) for f in schema.fields):
        return {f.name: _fit(f.schema, value[f.name]) for f in schema.fields}
    return value


def _needs_fit(schema: Schema) -> bool:
    if schema.name == DECIMAL:
        return True
    nested = [f.schema for f in schema.fields] + [s for s in (schema.items,) if s is not None]
    return any(_needs_fit(s) for s in nested)


def _decimal(schema: Schema, value: Decimal) -> Decimal:
    kind = arrow_type(schema)
    scale, precision = kind.scale, kind.precision
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)))
    if exponent < -scale:
        unscaled, rest = divmod(unscaled, 10 ** (-scale - exponent))
        if rest:
            raise DataError(f"the decimal {value} has more than the {scale} fraction digits of its schema's scale")
    else:
        unscaled *= 10 ** (exponent + scale)
    if len(str(unscaled)) > precision:
        raise DataError(f"the decimal {value} has more than the {precision} digits of its precision")
    return Decimal(f"{'-' if sign else ''}{unscaled}E{-scale}")
