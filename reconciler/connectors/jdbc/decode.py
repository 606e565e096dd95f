"""A partition's buffered records (`sink_schema()` rows) read by their key and value
converters into `rows.Record`s, with one schema per part for the batch. Pure.

A record a converter refuses fails the batch with one line naming its topic, partition and
offset (Confluent's sink fails the task too, without `errors.tolerance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.converters.records import read_json
from reconciler.connectors.converters.schema import Schema
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.jdbc.rows import Record

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Decoded:
    records: list[Record]
    key_schema: Schema | None
    value_schema: Schema | None
    schemaless: bool  # the values had no schema (JsonConverter with schemas.enable=false)


def decode_records(rows: pa.Table, key_converter: Converter, value_converter: Converter) -> Decoded:
    topics = rows.column("topic").to_pylist()
    partitions = rows.column("partition").to_pylist()
    offsets = rows.column("offset").to_pylist()

    def where(index: int) -> str:
        return f"{topics[index]}-{partitions[index]}@{offsets[index]}"

    key_schema, keys = _read(rows.column("key").to_pylist(), key_converter, "key", where)
    value_schema, values = _read(rows.column("value").to_pylist(), value_converter, "value", where)
    records = [Record(t, p, o, k, v) for t, p, o, k, v in zip(topics, partitions, offsets, keys, values, strict=True)]
    return Decoded(records, key_schema, value_schema, value_converter.kind == "json" and not value_converter.schemas_enable)


def read_part(raw: Sequence[bytes | None], converter: Converter, part: str, rows: pa.Table) -> tuple[Schema | None, list[Any]]:
    """One part (`key`, `value`) of the batch `rows` read, as `decode_records` reads it."""

    def where(index: int) -> str:
        return f"{rows.column('topic')[index]}-{rows.column('partition')[index]}@{rows.column('offset')[index]}"

    return _read(raw, converter, part, where)


def _read(raw: Sequence[bytes | None], converter: Converter, part: str, where: Any) -> tuple[Schema | None, list[Any]]:
    if converter.kind == "bytes":
        return Schema("bytes", True), list(raw)
    if converter.kind == "string":
        texts = [None if r is None else r.decode(converter.encoding, errors="replace") for r in raw]
        return Schema("string", True), texts
    read = read_json(raw, converter)
    if read.failures:
        failure = read.failures[0]
        raise ConnectorError(f"the {part} of record {where(failure.index)} cannot be read by "
                             f"{converter.class_name}: {failure.reason}")
    values: list[Any] = [None] * len(raw)
    for index, value in zip(read.rows, read.values, strict=True):
        values[index] = value
    return read.schema, values
