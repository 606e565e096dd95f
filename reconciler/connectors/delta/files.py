"""A delta-sink task's records as typed columns, and its Parquet data files (pyarrow).

`to_rows`: a `sink_schema()` batch → Connect's fields (`config.RECORD_FIELDS`) then the value's
columns (a struct value's fields; any other value one `value` column), each part through its
converter. Types Delta has no name for are made ones it has (timestamps in µs, UTC; Connect's
Time as milliseconds of the day). `write_files`: one Parquet file per table partition
(`delta.partition.by`) under the table's location, a fresh name each time; `DataFile`s describe
them for the driver's add actions.

A task writes a range in several parts (`delta.max.records.per.file`), and a column all null in
one part (schemaless JSON) may have a type in the next: so an all-null column keeps Arrow's null
type in the schema the task reports, which `unified` merges with any other, and is left out of
the part's files (Delta reads a column a file lacks as null). A column still null in the
batch's schema takes the table's type, or is a new string column (`table._evolved`).
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.columns import RowFailure, record_failures
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.delta.config import RECORD_FIELDS, DeltaSinkSettings
from reconciler.connectors.api import Stage
from reconciler.connectors.errant import ErrantReporter
from reconciler.connectors.storage import open_store

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True, kw_only=True)
class DataFile:
    """One written Parquet file, as an add action needs it (path relative to the table)."""

    path: str
    size: int
    partition_values: dict[str, str | None]
    modification_time: int  # ms since the epoch
    records: int


def to_rows(batch: pa.Table, key: Converter, value: Converter, reporter: ErrantReporter) -> pa.Table:
    """The records as the table's rows. A record a converter refuses goes to the task's errant
    record reporter: with `errors.tolerance=none` it fails the task naming its topic, partition
    and offset; with `all` it is left out, logged and sent to the dead letter queue, whose
    letters are committed before the data files exist (`connectors.errant`)."""
    keys = decode(batch.column("key"), key, "key")
    values = decode(batch.column("value"), value, "value")
    failures = {f.index: RowFailure(index=f.index, stage=Stage.KEY_CONVERTER, converter=key.class_name, reason=f.reason)
                for f in keys.failures}
    for f in values.failures:
        failures.setdefault(f.index, RowFailure(index=f.index, stage=Stage.VALUE_CONVERTER,
                                                converter=value.class_name, reason=f.reason))
    for failure in record_failures(batch, [failures[i] for i in sorted(failures)]):
        reporter.report(failure)  # raises with errors.tolerance=none
    reporter.flush()
    if keys.complete(batch.num_rows) and values.complete(batch.num_rows):  # the common batch: no take at all
        base, key_column, value_table = batch, _one_column(keys.table, "key"), values.table
    else:
        failed = set(failures)
        kept = [i for i in range(batch.num_rows) if i not in failed]
        key_column = _one_column(_take(keys.table, keys.rows, kept), "key")
        value_table = _take(values.table, values.rows, kept)
        base = batch.take(pa.array(kept, pa.int64()))
    clash = sorted(set(value_table.column_names) & set(RECORD_FIELDS))
    if clash and value_table.column_names != ["value"]:
        raise ConnectorError(f"the value's field `{clash[0]}` has the name of a Kafka record field the table keeps "
                             f"({', '.join(RECORD_FIELDS)})")
    columns = {
        "topic": base.column("topic"),
        "partition": base.column("partition"),
        "offset": base.column("offset"),
        "timestamp": pc.cast(base.column("timestamp"), pa.timestamp("ms")).cast(pa.timestamp("us", tz="UTC")),
        "key": key_column,
        "headers": base.column("headers"),
    }
    for name in value_table.column_names:
        columns[name] = value_table.column(name)
    return pa.table({name: _delta_type(column) for name, column in columns.items()})


def _take(table: pa.Table, rows: list[int], kept: list[int]) -> pa.Table:
    """The decoded rows of the kept records, in batch order (a record with no row: all nulls)."""
    where = {row: i for i, row in enumerate(rows)}
    return table.take(pa.array([where.get(index) for index in kept], pa.int64()))


def _one_column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if table.column_names == [name]:
        return table.column(name)
    return pa.chunked_array([pa.StructArray.from_arrays(
        [c.combine_chunks() for c in table.columns], fields=list(table.schema))], pa.struct(list(table.schema)))


def _delta_type(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """The column in a type Delta names (its protocol has no time, no unzoned ms timestamps); an
    all-null column stays null (see the module's doc)."""
    kind = column.type
    if pa.types.is_timestamp(kind):
        return column.cast(pa.timestamp("us", tz="UTC"))
    if pa.types.is_time(kind):
        return column.cast(pa.int32())
    return column


def unified(schemas: Sequence[pa.Schema]) -> pa.Schema:
    """One schema of the parts' (a null column takes the other parts' type); a column of two
    types fails naming it."""
    try:
        return pa.unify_schemas(list(schemas))
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise ConnectorError(f"the batch's records disagree on a column's type: {first_line(exc)}") from exc


def first_line(exc: BaseException) -> str:
    """The library's message in one line (or the exception's type when it has none)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def delta_schema(schema: pa.Schema) -> pa.Schema:
    """The batch's schema as the table gets it: a column null in every record a string."""
    return pa.schema([field.with_type(pa.string()) if pa.types.is_null(field.type) else field for field in schema])


def schema_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode()


def schema_of(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def filesystem(settings: DeltaSinkSettings) -> tuple[pafs.FileSystem, str]:
    """The table location's filesystem and root path in it: the file connectors' storage layer's,
    so a store is reached as they reach it (and fails in one line naming it)."""
    store = open_store(settings.table_uri, settings.store)
    root = store.location.join()
    if not store.location.object_store:  # a disk's or HDFS's directories are real: the root first
        store.fs.create_dir(root, recursive=True)
    return store.fs, root


def write_files(rows: pa.Table, settings: DeltaSinkSettings, opener: Callable[[], tuple[pafs.FileSystem, str]]) -> list[DataFile]:
    """One Parquet file per table partition of `rows`, under the table's location."""
    if not rows.num_rows:
        return []
    fs, root = opener()
    written = []
    for values, part in _partitions(rows, settings.partition_by):
        directory = "/".join(f"{quote(k)}={quote(v if v is not None else NULL_PARTITION)}" for k, v in values.items())
        relative = (directory + "/" if directory else "") + f"part-{uuid.uuid4()}.c000.snappy.parquet"
        path = f"{root}/{relative}"
        if directory:
            fs.create_dir(f"{root}/{directory}", recursive=True)
        pq.write_table(_without_nulls(part), path, filesystem=fs, compression="snappy")
        size = fs.get_file_info(path).size
        written.append(DataFile(path=relative, size=int(size or 0), partition_values=values,
                                modification_time=int(time.time() * 1000), records=part.num_rows))
    return written


def _without_nulls(part: pa.Table) -> pa.Table:
    """The part without its all-null columns: the table's type for them is the driver's to say."""
    return part.drop_columns([field.name for field in part.schema if pa.types.is_null(field.type)])


def _partitions(rows: pa.Table, columns: Sequence[str]) -> list[tuple[dict[str, str | None], pa.Table]]:
    """(partition values as Delta writes them, the rows without the partition columns)."""
    if not columns:
        return [({}, rows)]
    missing = [c for c in columns if c not in rows.column_names]
    if missing:
        raise ConnectorError(f"delta.partition.by names `{missing[0]}`, which the records have no column for")
    keys = [tuple(_partition_text(rows.column(c)[i].as_py()) for c in columns) for i in range(rows.num_rows)]
    groups: dict[tuple[str | None, ...], list[int]] = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    rest = rows.drop_columns(list(columns))
    return [(dict(zip(columns, key, strict=True)), rest.take(pa.array(indexes, pa.int64())))
            for key, indexes in groups.items()]


def _partition_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def committable(files: Sequence[DataFile], schema: pa.Schema) -> str:
    return json.dumps({"files": [asdict(f) for f in files], "schema": schema_text(schema)})


def read_committable(text: str) -> tuple[list[DataFile], pa.Schema]:
    node = json.loads(text)
    return [DataFile(**f) for f in node["files"]], schema_of(node["schema"])
