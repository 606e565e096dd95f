"""Debezium change events (`before`, `after`, `op`, `source`, `ts_ms`) read as the rows they
change, so `jdbc-sink` applies them as Debezium's own JDBC sink does. Pure.

The envelope is found, not configured: Debezium's sink treats a value whose schema is named
`…Envelope` as a change event (`KafkaDebeziumSinkRecord.isDebeziumMessage`); with
JsonConverter's schemas off there is no name, so an object holding `before`, `after`, `op`
and `source` is one. Then, by `op`:

- `c` (create), `r` (snapshot read), `u` (update): the row is `after`;
- `d` (delete): with `delete.enabled`, a delete of the record key's row (as a tombstone);
  without, skipped (Debezium's sink skips it; Confluent's sink behind `ExtractNewRecordState`
  never sees it: the SMT drops delete events by default);
- `t` (truncate), `m` (message): skipped (Debezium's `truncate.enabled` is false by default).

Tombstones keep Confluent's rule (a delete with `delete.enabled`, else an error), so a
Debezium source's tombstones (`tombstones.on.delete=true`, its default) need `delete.enabled`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Final

from reconciler.connectors.converters.schema import Schema
from reconciler.connectors.jdbc.decode import Decoded
from reconciler.connectors.jdbc.rows import Record

ENVELOPE_FIELDS: Final = frozenset({"before", "after", "op", "source"})
ROW_OPS: Final = frozenset({"c", "r", "u"})
DELETE_OP: Final = "d"


def is_envelope(schema: Schema | None, schemaless: bool) -> bool:
    """Whether values of `schema` are Debezium change events."""
    if schema is None or schema.type != "struct":
        return False
    names = {f.name for f in schema.fields}
    if schemaless:
        return ENVELOPE_FIELDS <= names
    return "Envelope" in (schema.name or "") and {"after", "op"} <= names


def unwrap(decoded: Decoded, delete_enabled: bool) -> Decoded:
    """`decoded` with change events read as rows, deletes and skips; as it is otherwise."""
    if not is_envelope(decoded.value_schema, decoded.schemaless):
        return decoded
    assert decoded.value_schema is not None
    after = decoded.value_schema.field("after")
    row_schema = after.schema if after is not None and after.schema.type == "struct" else None
    records = [_unwrapped(record, delete_enabled) for record in decoded.records]
    return replace(decoded, records=records, value_schema=row_schema)


def _unwrapped(record: Record, delete_enabled: bool) -> Record:
    value: Any = record.value
    if value is None:
        return record  # a tombstone: Confluent's rule
    op = value.get("op")
    if op in ROW_OPS and value.get("after") is not None:
        return replace(record, value=value["after"])
    if op == DELETE_OP and delete_enabled:
        return replace(record, value=None)
    return replace(record, value=None, skip=True)
