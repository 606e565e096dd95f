"""Upsert mode and the CDC field, the task's half: a flush's rows reduced to what replaces the
table's rows by their id columns (`iceberg.tables.upsert-mode-enabled`, `iceberg.tables.cdc-field`,
Tabular's sink's keys; its `BaseDeltaTaskWriter` semantics).

Each record's operation: with a CDC field, its text's first letter (`D` delete, `U` update,
anything else or nothing an insert; an insert is an update in upsert mode, as Iceberg's later
writer has it); without one, every record updates. An update or a delete supersedes the row its
key had (in the table or earlier in the batch); an insert only adds. Of the flush's records the
last one per key is written, unless it is a delete. What is handed on (`KeyedRows`): the rows to
write, the superseding keys (the driver removes their rows, `upsert`) and the written keys (so
the driver finds a later flush's key in an earlier flush's files). Keys are JSON-ready lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.iceberg.datafiles import json_value
from reconciler.connectors.iceberg.routing import route_texts

if TYPE_CHECKING:
    import pyarrow as pa


class Op(StrEnum):
    INSERT = "I"
    UPDATE = "U"
    DELETE = "D"


@dataclass(frozen=True, kw_only=True)
class KeyedRows:
    rows: pa.Table
    keys: list[list[Any]]  # superseding: their rows elsewhere are removed
    written: list[list[Any]]  # the keys of `rows`


def operations(values: pa.Table, cdc_field: str | None, upsert: bool) -> list[Op]:
    """Each record's operation (Tabular's `IcebergWriter.extractCdcOperation`)."""
    plain = Op.UPDATE if upsert else Op.INSERT
    if cdc_field is None:
        return [Op.UPDATE] * values.num_rows
    ops = []
    for text in route_texts(values, cdc_field):
        first = (text or "").strip()[:1].upper()
        ops.append(Op.DELETE if first == "D" else Op.UPDATE if first == "U" else plain)
    return ops


def reduce(rows: pa.Table, id_columns: tuple[str, ...], ops: list[Op], table: str,
           offsets: list[int]) -> KeyedRows:
    """The last record per key (batch order), its row unless deleted; a null id fails naming it."""
    import pyarrow as pa

    missing = [c for c in id_columns if c not in rows.column_names]
    if missing:
        raise ConnectorError(f"table {table}: id column {missing[0]} is not a column of the table (check "
                             f"iceberg.table.{table}.id-columns or iceberg.tables.default-id-columns)")
    columns = [rows.column(c).to_pylist() for c in id_columns]
    last: dict[tuple[Any, ...], int] = {}
    superseding: set[tuple[Any, ...]] = set()
    for index, key in enumerate(zip(*columns, strict=True)):
        if any(part is None for part in key):
            column = id_columns[[part is None for part in key].index(True)]
            raise ConnectorError(f"table {table}: record at offset {offsets[index]} has no value for id column "
                                 f"{column}, which upsert mode and the CDC field need")
        last[key] = index
        if ops[index] is not Op.INSERT:
            superseding.add(key)
    kept = sorted(i for i in last.values() if ops[i] is not Op.DELETE)
    written = [_json_key(key) for key, i in last.items() if ops[i] is not Op.DELETE]
    return KeyedRows(rows=rows.take(pa.array(kept, pa.int64())), keys=[_json_key(k) for k in superseding],
                     written=written)


def _json_key(key: tuple[Any, ...]) -> list[Any]:
    return [json_value(part) for part in key]
