"""The fast read of a JsonConverter batch whose records all carry the same schema bytes: the
payloads parsed in C++ by `pyarrow.json` into typed columns, none of them read in Python.

Imports pyarrow: only the tasks that decode import this module. `read_uniform` returns the
batch's schema and table, or None whenever it cannot be sure the result is what the per-record
reader (`records.read_json`, Java's `JsonConverter.toConnectData`) gives; the caller then runs
that reader, which also finds the record that failed and why (errors.tolerance, the DLQ). It
takes the batch only when:

- every record is `{"schema":S,"payload":{…}}` with byte-identical `{"schema":S,"payload":`
  (the first record read whole, so S is the schema and nothing else), no tombstone, no line
  break in a payload;
- the schema is a struct of unnamed primitives Arrow parses exactly as Java reads them
  (`_PARSED`): no logical types, bytes (base64), defaults, arrays, maps or nested structs;
- Arrow accepts every payload (a number out of an integer's range, a fraction for an integer, a
  string for a number: Java truncates, wraps or zeroes; Arrow refuses, so the batch goes the
  per-record way), one row per record, no null in a required field, no NaN or infinity
  (literals Jackson refuses), no -0 (Jackson reads `-0` as the integer 0), valid UTF-8.

A float field is parsed as a double and cast to float32, as Java's `(float)` of
`doubleValue()`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from reconciler.connectors.converters.schema import DataError, Schema
from reconciler.connectors.converters.schema_json import from_json
from reconciler.connectors.converters.settings import Converter
from reconciler.kafka.formats.jackson import JsonError, loads_exact

_PARSED: Final = {  # Connect type: how Arrow parses it (float: as a double, cast after)
    "boolean": pa.bool_(), "int8": pa.int8(), "int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64(),
    "float": pa.float64(), "double": pa.float64(), "string": pa.string(),
}
_FINAL: Final = {**_PARSED, "float": pa.float32()}
_START: Final = b'{"schema":'
_PAYLOAD: Final = b',"payload":'
_BLOCK_BYTES: Final = 16 << 20


@dataclass(frozen=True)
class Uniform:
    """`table` has one column per field of the struct `schema`, every record a row, in order."""

    schema: Schema
    table: pa.Table


def read_uniform(values: Sequence[bytes | None] | pa.Array | pa.ChunkedArray, converter: Converter) -> Uniform | None:
    """The batch (raw values, a binary Arrow column or a list) read in C++, or None: the
    per-record reader must read it."""
    if converter.kind != "json" or not converter.schemas_enable or not len(values):
        return None
    column = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(values, pa.binary())
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.null_count or not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        return None
    if pa.types.is_large_binary(column.type):  # Spark 4's Arrow batches (useLargeVarTypes)
        try:
            column = column.cast(pa.binary())
        except pa.ArrowException:  # more than 2 GiB
            return None
    found = _prefix(column[0].as_py())
    if found is None:
        return None
    prefix, schema = found
    try:
        payloads = _payloads(column, prefix)
    except pa.ArrowException:  # more than 2 GiB of payloads: Arrow's binary offsets are 32-bit
        return None
    if payloads is None:
        return None
    table = _parsed(payloads, schema, len(column))
    return None if table is None else Uniform(schema=schema, table=table)


def arrow_columns(schema: Schema) -> pa.Schema:
    """The table's schema: every column nullable (as `arrow._columns` makes a struct's)."""
    return pa.schema([pa.field(f.name, _FINAL[f.schema.type], nullable=True) for f in schema.fields])


def _prefix(first: bytes) -> tuple[bytes, Schema] | None:
    """`{"schema":S,"payload":` of the first record, and S read, when the fast path takes S."""
    if not first.startswith(_START):
        return None
    try:
        node = loads_exact(first)
        if not isinstance(node, dict) or set(node) != {"schema", "payload"} or not isinstance(node["schema"], dict):
            return None
        schema = from_json(node["schema"])
    except (DataError, JsonError, RecursionError):
        return None
    if schema is None or not _takes(schema):
        return None
    at = first.find(_PAYLOAD)
    while at >= 0:  # the first `,"payload":` after which S is complete JSON (S may hold the text)
        try:
            if loads_exact(first[len(_START):at]) == node["schema"]:
                return first[: at + len(_PAYLOAD)], schema
        except JsonError:
            pass
        at = first.find(_PAYLOAD, at + 1)
    return None


def _takes(schema: Schema) -> bool:
    if schema.type != "struct" or not schema.fields or len({f.name for f in schema.fields}) != len(schema.fields):
        return False
    return all(f.schema.type in _PARSED and f.schema.name is None and f.schema.default is None for f in schema.fields)


def _payloads(column: pa.Array, prefix: bytes) -> bytes | None:
    """The payloads, one a line, when every record has the prefix and an object payload."""
    if not (pc.all(pc.starts_with(column, prefix + b"{")).as_py() and pc.all(pc.ends_with(column, b"}}")).as_py()):
        return None
    sliced = pc.binary_slice(column, len(prefix), -1)
    lines = pc.binary_join_element_wise(sliced, pa.scalar(b"", pa.binary()), b"\n")  # each payload and "\n"
    _, offsets, data = lines.buffers()
    bounds = pa.Array.from_buffers(pa.int32(), len(lines) + 1, [None, offsets], offset=lines.offset)
    begin, end = bounds[0].as_py(), bounds[-1].as_py()
    joined: bytes = data.slice(begin, end - begin).to_pybytes()
    if b"\r" in joined or joined.count(b"\n") != len(column):
        return None  # a line break inside a payload (whitespace between tokens)
    return joined


def _parsed(payloads: bytes, schema: Schema, count: int) -> pa.Table | None:
    parsed = pa.schema([pa.field(f.name, _PARSED[f.schema.type]) for f in schema.fields])
    try:
        table = pj.read_json(pa.py_buffer(payloads), read_options=pj.ReadOptions(block_size=_BLOCK_BYTES),
                             parse_options=pj.ParseOptions(explicit_schema=parsed, unexpected_field_behavior="ignore"))
        if table.num_rows != count:
            return None
        if not payloads.isascii():
            for column in table.columns:
                column.validate(full=True)  # Arrow keeps invalid UTF-8 bytes; Jackson refuses them
    except (pa.ArrowException, ValueError):
        return None
    columns = []
    for f, column in zip(schema.fields, table.columns, strict=True):
        if not f.schema.optional and column.null_count:
            return None  # Java's "Invalid null value for required …": the per-record reader says which
        if f.schema.type in ("float", "double"):
            if pc.any(pc.invert(pc.is_finite(column))).as_py() or _negative_zero(column):
                return None  # NaN or Infinity: literals Jackson refuses; -0: Jackson's int 0, Arrow's -0.0
            column = column.cast(_FINAL[f.schema.type], safe=False)
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=arrow_columns(schema))


def _negative_zero(column: pa.ChunkedArray) -> bool:
    bits = pa.chunked_array([chunk.view(pa.int64()) for chunk in column.chunks], pa.int64())
    return bool(pc.any(pc.equal(bits, -(2**63))).as_py())
