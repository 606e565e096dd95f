"""Which table each decoded record goes to: Java's `SinkWriter.routeRecordStatically` and
`routeRecordDynamically`.

- `iceberg.tables` without a route field: every record to every table;
- with `iceberg.tables.route-field`: a record to each table whose
  `iceberg.table.<table>.route-regex` matches the field's text whole (Java's `matches()`);
- `iceberg.tables.dynamic-enabled`: to the table the field names, lower-cased.

The field may be nested (`a.b`, Java's `RecordUtils.extractFromRecordValue`); a record whose
field is null (or missing) goes nowhere, as in Java. The text of a value is Java's `toString()`
for what schemaless JSON holds (`true`, `42`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from reconciler.connectors.iceberg.config import IcebergSinkSettings

if TYPE_CHECKING:
    import pyarrow as pa


def route(rows: pa.Table, settings: IcebergSinkSettings) -> dict[str, pa.Table]:
    """Table name → its rows (in the batch's order); tables with no row are left out."""
    if settings.route_field is None:
        return {table: rows for table in settings.tables} if rows.num_rows else {}
    texts = route_texts(rows, settings.route_field)
    if settings.dynamic:
        return _grouped(rows, [None if t is None else t.lower() for t in texts])
    routed = {}
    for table in settings.tables:
        regex = settings.table_config(table).route_regex
        if regex is None:
            continue
        verdicts = {text: regex.fullmatch(text) is not None for text in set(texts) if text is not None}
        mask = [text is not None and verdicts[text] for text in texts]
        if any(mask):
            routed[table] = rows.filter(mask)
    return routed


def route_texts(rows: pa.Table, field: str) -> list[str | None]:
    """The route field's text per row (None: null or missing)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    first, *rest = field.split(".")
    if first not in rows.column_names:
        return [None] * rows.num_rows
    column: pa.ChunkedArray | pa.Array = rows.column(first)
    for name in rest:
        kind = column.type
        if not pa.types.is_struct(kind) or kind.get_field_index(name) < 0:
            return [None] * rows.num_rows
        column = pc.struct_field(column, name)
    if pa.types.is_struct(column.type) or pa.types.is_list(column.type) or pa.types.is_map(column.type):
        return [None if v is None else str(v) for v in column.to_pylist()]
    texts: list[str | None] = column.cast(pa.string()).to_pylist()
    return texts


def _grouped(rows: pa.Table, names: list[str | None]) -> dict[str, pa.Table]:
    import pyarrow as pa

    positions: dict[str, list[int]] = {}
    for index, name in enumerate(names):
        if name is not None:
            positions.setdefault(name, []).append(index)
    return {name: rows.take(pa.array(indexes, pa.int64())) for name, indexes in positions.items()}
