"""jdbc-sink's fast batch: values read in C++ (`converters.uniform`) into Arrow columns, laid
out as the table's columns and COPYed as one CSV stream, no Python object per row.

Imports pyarrow: the task imports this when it writes. `columnar` gives the batch's layout and
its records as Arrow rows, or None when the batch needs the per-record path (`decode`, `rows`):
values that are not one uniform struct of primitives, a tombstone, a Debezium change event,
`pk.mode=record_key`, or a key of floating point numbers (Python's and Arrow's equality differ
on -0.0). It reads a whole flush at once; `transaction_rows` gives what `rows.plan` gives for one
transaction's slice of it: every record a row in insert mode, the last record of each key for
upsert and update; NUL dropped from text. `to_csv` is run by the task, `copy_csv` by its writer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.types as pt
import psycopg

from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.converters.uniform import read_uniform
from reconciler.connectors.jdbc.changes import is_envelope
from reconciler.connectors.jdbc.config import JdbcSinkSettings
from reconciler.connectors.jdbc.decode import read_part
from reconciler.connectors.jdbc.rows import Layout, layout

_ORDER: Final = "__connect_order"
_CSV: Final = pcsv.WriteOptions(include_header=False, batch_size=64 * 1024)


@dataclass(frozen=True)
class Columns:
    """A batch read the columnar way: its layout, and a row per record in `Layout.names` order."""

    layout: Layout
    table: pa.Table
    last_per_key: bool  # upsert and update by the value's fields: a transaction writes each key's last row


def columnar(rows: pa.Table, key: Converter, value: Converter, settings: JdbcSinkSettings,
             table: str) -> Columns | None:
    """The batch's layout and rows (see `Columns`), or None (see the module doc)."""
    if settings.pk_mode not in ("none", "kafka", "record_value"):
        return None
    uniform = read_uniform(rows.column("value"), value)
    if uniform is None or is_envelope(uniform.schema, False):
        return None
    key_schema = read_part(rows.column("key").to_pylist(), key, "key", rows)[0]  # a key Java refuses fails as ever
    lay = layout(settings, table, key_schema, uniform.schema, False)
    columns: list[pa.ChunkedArray] = []
    for part, source in lay.sources:
        assert source is not None  # kafka and value parts always name theirs here
        column = rows.column(source) if part == "kafka" else uniform.table.column(source)
        if pt.is_string(column.type):
            column = pc.replace_substring(column, "\x00", "")  # PostgreSQL text cannot hold NUL
        columns.append(column)
    out = pa.Table.from_arrays(columns, names=lay.names)
    last_per_key = settings.pk_mode == "record_value" and settings.insert_mode != "insert"
    if last_per_key and any(pt.is_floating(out.column(name).type) for name in lay.keys):
        return None
    return Columns(layout=lay, table=out, last_per_key=last_per_key)


def transaction_rows(columns: Columns, start: int, size: int) -> pa.Table:
    """The rows of the transaction of records [start, start + size) of the batch."""
    rows = columns.table.slice(start, size)
    return _last_per_key(rows, list(columns.layout.keys)) if columns.last_per_key else rows


def _last_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    """Each key's last row, in the rows' order: the positions of the last rows, sorted, taken."""
    numbered = table.append_column(_ORDER, pa.array(range(table.num_rows), pa.int64()))
    last = numbered.group_by(keys, use_threads=False).aggregate([(_ORDER, "max")])
    positions = last.column(f"{_ORDER}_max")
    return table.take(positions.take(pc.sort_indices(positions)))


def to_csv(table: pa.Table) -> pa.Buffer:
    """`table` as CSV without a header: a null is an empty field, an empty string `""` (Arrow
    quotes every string), as PostgreSQL's CSV format reads them."""
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, _CSV)
    return sink.getvalue()


def copy_csv(connection: psycopg.Connection[Any], statement: psycopg.sql.Composed, data: pa.Buffer) -> None:
    """COPY `data` (`to_csv` of columns in the statement's order)."""
    query = psycopg.sql.SQL("{} (FORMAT csv)").format(statement)
    with connection.cursor() as cursor, cursor.copy(query) as copy:
        copy.write(memoryview(data))
