"""A batch's columns meet its table: the table loaded (or created, as Java's
`IcebergWriterFactory.autoCreateTable` does), evolved (new fields added, types widened, as
`SchemaUpdate` does), and the batch cast to the table's columns.

Run by the tasks, as Java's workers do it: schema changes are metadata commits of their own,
retried when another task changed the table meanwhile; only the data's commit is the driver's.
Without evolution a field the table lacks is left out and a column the batch lacks is null
(Java's `RecordConverter`); a required column without a value fails, naming it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Final

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.iceberg.config import IcebergSinkSettings

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

RETRIES: Final = 3  # Java's CREATE_TABLE_RETRIES and SCHEMA_UPDATE_RETRIES + 1
_TRANSFORM: Final = re.compile(r"(\w+)\((.+)\)")
# Java's partition field names per transform (`PartitionSpec.Builder`).
_SUFFIX: Final = {"year": "year", "month": "month", "day": "day", "hour": "hour", "bucket": "bucket",
                  "truncate": "trunc"}


def iceberg_arrow(schema: pa.Schema) -> pa.Schema:
    """The batch's schema in the types Iceberg has: small ints as int, times and timestamps in
    microseconds; a field only ever null has no type yet and is left out (as Java's inference does)."""
    import pyarrow as pa

    fields = [f.with_type(fitted) for f in schema if (fitted := _fit(f.type)) is not None]
    return pa.schema(fields)


def _fit(kind: pa.DataType) -> pa.DataType | None:
    import pyarrow as pa

    if pa.types.is_null(kind):
        return None
    if pa.types.is_int8(kind) or pa.types.is_int16(kind) or pa.types.is_uint8(kind) or pa.types.is_uint16(kind):
        return pa.int32()
    if pa.types.is_uint32(kind):
        return pa.int64()
    if pa.types.is_time(kind):
        return pa.time64("us")
    if pa.types.is_timestamp(kind):
        return pa.timestamp("us", tz=kind.tz)
    if pa.types.is_struct(kind):
        children = [kind.field(i) for i in range(kind.num_fields)]
        return pa.struct([c.with_type(t) for c in children if (t := _fit(c.type)) is not None])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        item = _fit(kind.value_type)
        return pa.list_(kind.value_field.with_type(item if item is not None else pa.string()))
    if pa.types.is_map(kind):
        key, item = _fit(kind.key_type), _fit(kind.item_type)
        return pa.map_(key or pa.string(), item or pa.string())
    return kind


def load_or_create(catalog: Catalog, name: str, settings: IcebergSinkSettings, schema: pa.Schema,
                   where: str) -> Table | None:
    """The table; created from `schema` when missing and auto-create is on; None when missing and
    routed dynamically (Java's `NoOpWriter`), else one ConnectorError line."""
    from pyiceberg.exceptions import CommitFailedException, NoSuchTableError, TableAlreadyExistsError

    try:
        return catalog.load_table(name)
    except NoSuchTableError:
        if not settings.auto_create:
            if settings.dynamic:
                return None
            raise ConnectorError(f"table {name} does not exist in the {where} and "
                                 "iceberg.tables.auto-create-enabled is false") from None
    _create_namespaces(catalog, name)
    try:
        return _create(catalog, name, settings, schema)
    except (TableAlreadyExistsError, CommitFailedException):  # another task created it meanwhile
        return catalog.load_table(name)
    except Exception:
        # Catalogs report a lost race in their own ways (SQLite: an IntegrityError): if the
        # table is there now, another task made it; otherwise the creation's error stands.
        if catalog.table_exists(name):
            return catalog.load_table(name)
        raise


def _create(catalog: Catalog, name: str, settings: IcebergSinkSettings, schema: pa.Schema) -> Table:
    if not len(schema):
        raise ConnectorError(f"cannot create table {name}: the records have no field with a value to type a column")
    partition_by = settings.table_config(name).partition_by
    transaction = catalog.create_table_transaction(name, schema, properties=settings.auto_create_props)
    if partition_by:
        with transaction.update_spec() as spec:
            for text in partition_by:
                column, transform, field_name = partition_field(text)
                spec.add_field(column, transform, field_name)
    transaction.commit_transaction()
    return catalog.load_table(name)


def partition_field(text: str) -> tuple[str, str, str]:
    """Java's `SchemaUtils.createPartitionSpec` entry → (column, pyiceberg transform, field name)."""
    matched = _TRANSFORM.fullmatch(text.strip())
    if matched is None:
        return text.strip(), "identity", text.strip()
    kind, args = matched.group(1).rstrip("s") if matched.group(1) != "hours" else "hour", matched.group(2)
    if kind in ("bucket", "truncate"):
        column, _, width = (part.strip() for part in args.partition(","))
        if not width.isdigit():
            raise ConnectorError(f"partition field {text!r}: {kind} needs (column, n)")
        return column, f"{kind}[{width}]", f"{column}_{_SUFFIX[kind]}"
    if kind not in _SUFFIX:
        raise ConnectorError(f"partition field {text!r}: unsupported transform {matched.group(1)}")
    return args.strip(), kind, f"{args.strip()}_{_SUFFIX[kind]}"


def _create_namespaces(catalog: Catalog, name: str) -> None:
    """Each level of the table's namespace, as Java's `createNamespaceIfNotExist`."""
    levels = name.split(".")[:-1]
    for depth in range(1, len(levels) + 1):
        namespace = tuple(levels[:depth])
        try:
            catalog.create_namespace(namespace)
        except Exception:
            # Already there, or made by another task at the same time (SQLite reports that
            # race as an IntegrityError): only a namespace still missing is a failure.
            if not catalog.namespace_exists(namespace):
                raise


def evolve(table: Table, schema: pa.Schema) -> Table:
    """The table with every field of `schema` it lacks added and its types widened, retried
    when another writer changed the table meanwhile; unchanged when it has them all."""
    from pyiceberg.exceptions import CommitFailedException

    for attempt in range(RETRIES):
        if not _lacks(table, schema):
            return table
        try:
            with table.update_schema() as update:
                update.union_by_name(schema)
            return table
        except CommitFailedException:
            if attempt == RETRIES - 1:
                raise
            table = table.refresh()
    return table


def _lacks(table: Table, schema: pa.Schema) -> bool:
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    have = schema_to_pyarrow(table.schema(), include_field_ids=False)
    return any(f.name not in have.names or not _same(have.field(f.name).type, f.type) for f in schema)


def _same(have: pa.DataType, want: pa.DataType) -> bool:
    import pyarrow as pa

    if pa.types.is_string(have) and pa.types.is_large_string(want) or pa.types.is_large_string(have):
        return True
    return bool(have.equals(want)) or (pa.types.is_int64(have) and pa.types.is_int32(want)) or (
        pa.types.is_float64(have) and pa.types.is_float32(want))


def conform(table: Table, rows: pa.Table, name: str) -> pa.Table:
    """`rows` as the table's columns: cast to their types, a column the batch lacks null, a
    field the table lacks left out. A required column without a value, or a value its
    column's type cannot hold, fails naming the column."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    target = schema_to_pyarrow(table.schema(), include_field_ids=False)
    columns = []
    for column in target:
        if column.name not in rows.column_names:
            if not column.nullable:
                raise ConnectorError(f"table {name}: the records have no value for required column {column.name}")
            columns.append(pa.nulls(rows.num_rows, column.type))
            continue
        data = rows.column(column.name)
        if not column.nullable and data.null_count:
            raise ConnectorError(f"table {name}: a record has no value for required column {column.name}")
        try:
            columns.append(data.cast(column.type))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ConnectorError(f"table {name}: column {column.name} ({column.type}) cannot hold the records' "
                                 f"{data.type} values: {str(exc).splitlines()[0]}") from None
    return pa.Table.from_arrays(columns, schema=target)



def unfit_rows(table: Table, rows: pa.Table) -> dict[int, str]:
    """The rows `conform` cannot cast to the table's columns, each with why (naming the column):
    a required column without a value, a value its column's type cannot hold."""
    import pyarrow as pa
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    target = schema_to_pyarrow(table.schema(), include_field_ids=False)
    unfit: dict[int, str] = {}
    for column in target:
        if column.name not in rows.column_names:
            continue
        data = rows.column(column.name)
        values = data.to_pylist()
        for index, value in enumerate(values):
            if index in unfit:
                continue
            if value is None:
                if not column.nullable:
                    unfit[index] = f"no value for required column {column.name}"
                continue
            try:
                pa.array([value], type=data.type).cast(column.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                unfit[index] = f"column {column.name} ({column.type}) cannot hold the value {str(value)[:80]!r}"
    return unfit
