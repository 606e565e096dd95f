"""A sink batch's records as typed columns: Connect's fields beside the key and the value as
their converters read them, and the records that did not decode (docs/converters.md#columns).

Imports pyarrow: only tasks import this. The columns, in order:

- Connect's fields asked for (`topic`, `partition`, `offset`, `timestamp` as
  `timestamp[ms, UTC]`, `headers` as in `sink_schema()`), with `key` among them: the key as its
  converter reads it (a struct key stays one struct column; bytes stay bytes);
- then the value: a struct's fields, one column each (a field named as one of Connect's fields
  above is written as `value_<name>`), or one column `value` for any other value.

Java converts a record's key, then its value: a record whose key fails is a key failure only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc

from reconciler.connectors.api import RecordFailure, SinkRecord, Stage
from reconciler.connectors.converters.arrow import Decoded, decode
from reconciler.connectors.converters.settings import Converter

CONNECT_FIELDS: Final = ("topic", "partition", "offset", "timestamp", "key", "headers")


@dataclass(frozen=True, kw_only=True)
class RowFailure:
    index: int  # the record's row in the batch
    stage: Stage
    converter: str  # the converter's class name
    reason: str


@dataclass(frozen=True, kw_only=True)
class Typed:
    """`table`: the records that decoded, in batch order; `failures`: the others, in order."""

    table: pa.Table
    failures: list[RowFailure] = field(default_factory=list)


def typed_rows(rows: pa.Table, key: Converter, value: Converter, fields: Sequence[str] = CONNECT_FIELDS) -> Typed:
    """The batch (`sink_schema()` rows) as Connect's `fields` and the value's columns."""
    keys = _decoded(rows, key, "key")
    failures = [RowFailure(index=f.index, stage=Stage.KEY_CONVERTER, converter=key.class_name, reason=f.reason)
                for f in keys.failures]
    values = _decoded(rows, value, "value")
    kept: list[int] | None = None  # the records kept, None: all of them (no take, no per-record work)
    if not (keys.complete(rows.num_rows) and values.complete(rows.num_rows)):
        key_rows = set(keys.rows)
        failures += [RowFailure(index=f.index, stage=Stage.VALUE_CONVERTER, converter=value.class_name,
                                reason=f.reason) for f in values.failures if f.index in key_rows]
        kept = sorted(key_rows & set(values.rows))
    taken = None if kept is None else pa.array(kept, pa.int64())
    names: list[str] = []
    arrays: list[pa.Array | pa.ChunkedArray] = []
    for name in fields:
        names.append(name)
        arrays.append(_key_column(rows, keys, kept) if name == "key" else _connect_column(rows, name, taken))
    value_table = _taken(values, kept)
    for name, column in zip(value_table.column_names, value_table.columns, strict=True):
        names.append(_free(name, names) if values.struct else name)
        arrays.append(column)
    return Typed(table=pa.table(arrays, names=names), failures=sorted(failures, key=lambda f: f.index))


def record_failures(rows: pa.Table, failures: Sequence[RowFailure]) -> list[RecordFailure]:
    """Each failure as the `RecordFailure` an `ErrantRecordReporter` takes (the raw record)."""
    if not failures:
        return []
    picked = rows.take(pa.array([f.index for f in failures], pa.int64())).to_pylist()
    return [
        RecordFailure(record=_record(row), stage=f.stage, executing_class=f.converter, message=f.reason)
        for row, f in zip(picked, failures, strict=True)
    ]


def _record(row: dict[str, object]) -> SinkRecord:
    headers = row["headers"]
    return SinkRecord(
        topic=str(row["topic"]), partition=int(row["partition"]), offset=int(row["offset"]),  # type: ignore[call-overload]
        key=row["key"], value=row["value"], timestamp_ms=int(row["timestamp"]),  # type: ignore[arg-type, call-overload]
        headers=None if headers is None else tuple((h["key"], h["value"]) for h in headers),  # type: ignore[attr-defined]
    )


def _decoded(rows: pa.Table, converter: Converter, name: str) -> Decoded:
    if converter.kind == "bytes":  # nothing to read: the column as it is
        return Decoded(pa.table({name: rows.column(name)}), list(range(rows.num_rows)))
    return decode(rows.column(name), converter, name)


def _taken(decoded: Decoded, kept: list[int] | None) -> pa.Table:
    if kept is None or decoded.rows == kept:
        return decoded.table
    position = {row: i for i, row in enumerate(decoded.rows)}
    return decoded.table.take(pa.array([position[row] for row in kept], pa.int64()))


def _key_column(rows: pa.Table, keys: Decoded, kept: list[int] | None) -> pa.Array | pa.ChunkedArray:
    table = _taken(keys, kept)
    if not keys.struct:
        return table.column(0)
    raw = rows.column("key") if kept is None else rows.column("key").take(pa.array(kept, pa.int64()))
    arrays = [column.combine_chunks() for column in table.columns]
    return pa.StructArray.from_arrays(arrays, fields=list(table.schema), mask=pc.is_null(raw).combine_chunks())


def _connect_column(rows: pa.Table, name: str, taken: pa.Array | None) -> pa.Array | pa.ChunkedArray:
    column = rows.column(name) if taken is None else rows.column(name).take(taken)
    return column.cast(pa.timestamp("ms", tz="UTC")) if name == "timestamp" else column


def _free(name: str, taken: list[str]) -> str:
    """`name`, or `value_<name>` (again, until free) when a Connect field has it."""
    while name in CONNECT_FIELDS or name in taken:
        name = f"value_{name}"
    return name
