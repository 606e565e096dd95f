"""Upsert mode and the CDC field, the driver's half: one copy-on-write snapshot per table per batch.

Java writes equality deletes; pyiceberg cannot, so the driver rewrites instead. The tasks' flushes
(`keyed`), in partition then flush order, each name the keys they supersede. The rows of those
keys are removed from the table's data files and from the files of earlier flushes: a file
holding one is replaced by a rewrite without them (or dropped when nothing is left). One
overwrite snapshot deletes the replaced files and adds the rewrites and the batch's files, with
the offsets in its summary: a crash before it leaves files no snapshot references, and the next
batch redoes the work from the same offsets; after it, the table's offsets make the records
below them skipped. Rows of a key in two partitions of one batch: the later partition's win.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reconciler.connectors.iceberg import datafiles, offsets
from reconciler.connectors.iceberg.writing import data_files

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table

KeyTuple = tuple[Any, ...]


@dataclass
class Flush:
    """One task flush's files, the keys it supersedes and the keys its files hold."""

    files: list[dict[str, Any]]
    keys: list[list[Any]]
    written: list[list[Any]]


@dataclass
class Plan:
    """What the snapshot does: files removed, files added."""

    deleted: list[DataFile] = field(default_factory=list)
    added: list[DataFile] = field(default_factory=list)


def _tuples(keys: Sequence[Sequence[Any]]) -> set[KeyTuple]:
    return {tuple(datafiles.python_value(part) for part in key) for key in keys}


def plan(table: Table, branch: str | None, id_columns: tuple[str, ...], flushes: Sequence[Flush]) -> Plan:
    """The files to delete and to add so that each superseded key keeps only its newest row."""
    later: set[KeyTuple] = set()
    result = Plan()
    for flush in reversed(flushes):  # each flush loses the keys of the flushes after it
        files = [_with_spec(table, datafiles.from_json(node)) for node in flush.files]
        if later & _tuples(flush.written):
            for data_file in files:
                result.added += _without(table, data_file, id_columns, later)
        else:
            result.added += files
        later |= _tuples(flush.keys)
    if later:
        for task in _candidates(table, branch, id_columns, later):
            rewritten = _without(table, task.file, id_columns, later)
            if rewritten != [task.file]:
                result.deleted.append(task.file)
                result.added += rewritten
    return result


def _with_spec(table: Table, data_file: DataFile) -> DataFile:
    """pyiceberg's writer leaves a file's spec id unset (its appends fill it in); a scan needs it."""
    if getattr(data_file, "_spec_id", None) is None:
        data_file.spec_id = table.metadata.default_spec_id
    return data_file


def _candidates(table: Table, branch: str | None, id_columns: tuple[str, ...], keys: set[KeyTuple]) -> list[Any]:
    """The branch's data files whose column bounds may hold one of `keys`."""
    snapshot = offsets.head(table, branch)
    if snapshot is None:
        return []
    return list(table.scan(row_filter=_prefilter(id_columns, keys), snapshot_id=snapshot.snapshot_id).plan_files())


def _prefilter(id_columns: tuple[str, ...], keys: set[KeyTuple]) -> BooleanExpression:
    """`col IN (…)` per id column of ints or strings (a superset of the keys' rows); else all rows."""
    from pyiceberg.expressions import AlwaysTrue, And, In

    expression: BooleanExpression = AlwaysTrue()
    for position, column in enumerate(id_columns):
        values = {key[position] for key in keys}
        if all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in values):
            expression = And(expression, In(column, values))  # type: ignore[call-arg]  # pyiceberg types In.__new__ oddly
    return expression


def _without(table: Table, data_file: DataFile, id_columns: tuple[str, ...], keys: set[KeyTuple]) -> list[DataFile]:
    """`[data_file]` when it holds none of `keys`; else the files of its other rows (maybe none)."""
    from pyiceberg.expressions import AlwaysTrue
    from pyiceberg.io.pyarrow import ArrowScan
    from pyiceberg.table import FileScanTask

    rows = ArrowScan(table_metadata=table.metadata, io=table.io, projected_schema=table.schema(),
                     row_filter=AlwaysTrue()).to_table(tasks=[FileScanTask(data_file)])
    kept = _anti_join(rows, id_columns, keys)
    if kept.num_rows == rows.num_rows:
        return [data_file]
    if not kept.num_rows:
        return []
    return data_files(table, kept, {})  # a fresh write id: names never collide


def _anti_join(rows: pa.Table, id_columns: tuple[str, ...], keys: set[KeyTuple]) -> pa.Table:
    """`rows` without those whose id columns are one of `keys`, in their order."""
    import pyarrow as pa

    if not rows.num_rows:
        return rows
    ordered = sorted(keys, key=repr)
    right = pa.table({column: pa.array([key[i] for key in ordered], type=rows.schema.field(column).type)
                      for i, column in enumerate(id_columns)})
    numbered = rows.append_column("__row", pa.array(range(rows.num_rows), pa.int64()))
    kept = numbered.join(right, keys=list(id_columns), join_type="left anti")
    return kept.sort_by("__row").drop_columns(["__row"]).select(rows.column_names)


def overwrite(table: Table, summary: dict[str, str], branch: str | None, planned: Plan) -> None:
    """One snapshot: the planned files deleted and added, the summary's offsets with them."""
    from pyiceberg.table.refs import MAIN_BRANCH

    transaction = table.transaction()
    with transaction.update_snapshot(snapshot_properties=summary, branch=branch or MAIN_BRANCH).overwrite() as update:
        for data_file in planned.deleted:
            update.delete_data_file(data_file)
        for data_file in planned.added:
            update.append_data_file(data_file)
    transaction.commit_transaction()
