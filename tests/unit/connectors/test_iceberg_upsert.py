"""iceberg-sink's upsert mode and CDC field: each flush reduced to the last record per key, and
the driver's copy-on-write plan on a real (SQLite-catalogued) table read back by pyiceberg."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.iceberg import datafiles, upsert
from reconciler.connectors.iceberg.keyed import Op, operations, reduce
from reconciler.connectors.iceberg.writing import data_files


def test_operations_follow_the_cdc_fields_first_letter() -> None:
    values = pa.table({"op": ["D", "u", "I", None, "create", " d"]})
    assert operations(values, "op", upsert=False) == [Op.DELETE, Op.UPDATE, Op.INSERT, Op.INSERT, Op.INSERT, Op.DELETE]
    assert operations(values, "op", upsert=True) == [Op.DELETE, Op.UPDATE, Op.UPDATE, Op.UPDATE, Op.UPDATE, Op.DELETE]
    assert operations(values, None, upsert=True) == [Op.UPDATE] * 6


def test_the_last_record_per_key_is_written_unless_deleted() -> None:
    rows = pa.table({"id": [1, 2, 1, 3, 2], "v": ["a", "b", "c", "d", "e"]})
    ops = [Op.UPDATE, Op.UPDATE, Op.UPDATE, Op.INSERT, Op.DELETE]
    reduced = reduce(rows, ("id",), ops, "db.t", [10, 11, 12, 13, 14])
    assert reduced.rows.to_pylist() == [{"id": 1, "v": "c"}, {"id": 3, "v": "d"}]
    assert sorted(reduced.keys) == [[1], [2]]  # the insert supersedes nothing
    assert sorted(reduced.written) == [[1], [3]]


def test_a_missing_or_null_id_fails_naming_it() -> None:
    rows = pa.table({"id": [1, None], "v": ["a", "b"]})
    with pytest.raises(ConnectorError, match="record at offset 8 has no value for id column id"):
        reduce(rows, ("id",), [Op.UPDATE] * 2, "db.t", [7, 8])
    with pytest.raises(ConnectorError, match="id column key is not a column of the table"):
        reduce(rows, ("key",), [Op.UPDATE] * 2, "db.t", [7, 8])


def _flush(table: object, rows: pa.Table, keys: list[int]) -> upsert.Flush:
    files = [datafiles.to_json(f) for f in data_files(table, rows, {})]  # type: ignore[arg-type]
    nodes = json.loads(json.dumps(files))
    return upsert.Flush(files=nodes, keys=[[k] for k in keys], written=[[k] for k in rows.column("id").to_pylist()])


def test_the_plan_replaces_each_keys_rows_in_the_table_and_in_earlier_flushes(tmp_path: Path) -> None:
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=f"file://{tmp_path / 'wh'}")
    try:
        catalog.create_namespace("db")
        schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
        table = catalog.create_table("db.t", schema)
        table.append(pa.table({"id": [1, 2, 3], "v": ["old1", "old2", "old3"]}, schema=schema))
        table.append(pa.table({"id": [4], "v": ["old4"]}, schema=schema))
        first = _flush(table, pa.table({"id": [2, 5], "v": ["p0", "p0"]}, schema=schema), [2, 5, 3])  # 3 deleted
        second = _flush(table, pa.table({"id": [5], "v": ["p1"]}, schema=schema), [5])
        planned = upsert.plan(table, None, ("id",), [first, second])
        assert len(planned.deleted) == 1  # the file of ids 1-3; the file of 4 is untouched
        upsert.overwrite(table, {"k": "v"}, None, planned)
        rows = sorted(catalog.load_table("db.t").scan().to_arrow().to_pylist(), key=lambda r: r["id"])
        assert rows == [{"id": 1, "v": "old1"}, {"id": 2, "v": "p0"}, {"id": 4, "v": "old4"}, {"id": 5, "v": "p1"}]
        assert catalog.load_table("db.t").current_snapshot().summary["k"] == "v"  # type: ignore[union-attr]
    finally:
        catalog.engine.dispose()
