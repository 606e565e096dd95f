"""jdbc-sink's fast batch: values read in C++ (`converters.uniform`) into Arrow columns, laid
out as the table's columns and COPYed as one CSV stream, no Python object per row.

Imports pyarrow: the task imports this when it writes. `columnar` gives the batch's layout and
its rows as an Arrow table, or None when the batch needs the per-record path (`decode`, `rows`):
values that are not one uniform struct of primitives, a tombstone, a Debezium change event,
`pk.mode=record_key`, or a key of floating point numbers (Python's and Arrow's equality differ
on -0.0). What it gives is the rows `rows.plan` gives for the same records: every record a row
in insert mode, the last record of each key for upsert and update; NUL dropped from text.
"""

from __future__ import annotations

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


def columnar(rows: pa.Table, key: Converter, value: Converter, settings: JdbcSinkSettings,
             table: str) -> tuple[Layout, pa.Table] | None:
    """(the layout, its rows in `Layout.names` order) for the batch, or None (see the module doc)."""
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
    if settings.pk_mode == "record_value" and settings.insert_mode != "insert":
        keys = [out.column(name) for name in lay.keys]
        if any(pt.is_floating(k.type) for k in keys):
            return None
        out = _last_per_key(out, list(lay.keys))
    return lay, out


def _last_per_key(table: pa.Table, keys: list[str]) -> pa.Table:
    numbered = table.append_column(_ORDER, pa.array(range(table.num_rows), pa.int64()))
    last = numbered.group_by(keys, use_threads=False).aggregate([(_ORDER, "max")])
    return table.take(pc.sort_indices(last.column(f"{_ORDER}_max")))


def copy_csv(connection: psycopg.Connection[Any], statement: psycopg.sql.Composed, table: pa.Table) -> None:
    """COPY `table` (columns in the statement's order) as CSV: a null is an empty field, an
    empty string `""` (Arrow quotes every string), as PostgreSQL's CSV format reads them."""
    sink = pa.BufferOutputStream()
    pcsv.write_csv(table, sink, _CSV)
    data = sink.getvalue()
    query = psycopg.sql.SQL("{} (FORMAT csv)").format(statement)
    with connection.cursor() as cursor, cursor.copy(query) as copy:
        copy.write(memoryview(data))
