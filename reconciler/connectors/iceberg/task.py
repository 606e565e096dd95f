"""The `iceberg-sink` task: one Kafka partition's range decoded, routed and written as Parquet
data files of its tables; nothing committed. The files are handed to the driver
(`committable`), which appends them in one snapshot per table (`commit`).

Per table, the task reads the offset the table holds for its partition (the snapshot summary,
`offsets`) and drops the records below it: after a crash between a table's commit and the
group's, the records come again and each table keeps only what it lacks. That offset goes to
the driver with the files, which commits only if the table still holds it (another writer
fenced). Records are written every `FLUSH_ROWS` rows, so a range's memory stays bounded.

A record whose value does not decode, or does not fit its table's columns, goes to the task's
errant record reporter (`errors.tolerance`: none fails the task naming its offset and the
column, all sends it to the dead letter queue and the batch goes on). In upsert mode or with a
CDC field each flush is reduced to the last record per key (`keyed`) and hands the driver the
keys it supersedes (`upsert`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from reconciler.connectors.api import ConnectorError, SinkTask, Stage, TopicPartition
from reconciler.connectors.converters.columns import RowFailure, record_failures
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.errant import reporter_for
from reconciler.connectors.iceberg import datafiles, keyed, offsets, tables
from reconciler.connectors.iceberg.catalog import close_catalog, describe, one_line, open_catalog
from reconciler.connectors.iceberg.config import IcebergSinkSettings
from reconciler.connectors.iceberg.routing import route
from reconciler.connectors.iceberg.writing import data_files

if TYPE_CHECKING:
    import pyarrow as pa
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

FLUSH_ROWS: Final = 200_000


class TableWrites:
    """What the task wrote into one table: the offset the table held when first read, the files."""

    def __init__(self, held: int | None) -> None:
        self.held = held
        self.files: list[dict[str, Any]] = []
        self.flushes: list[dict[str, Any]] = []  # upsert mode: each flush's files and keys
        self.rows = 0


class IcebergSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = IcebergSinkSettings.parse(task_config)
        self.value_converter = converter(task_config, "value")
        self.group = self.settings.offsets_group(task_config)
        self.where = describe(self.settings.catalog)
        self.errant = reporter_for(self, task_config)
        self.raw: Any = None  # the flush's records as read (a pa.Table): what a failed record reports
        self._catalog: Catalog | None = None
        self.buffer: list[pa.RecordBatch] = []
        self.buffered = 0
        self.written: dict[str, TableWrites] = {}

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        # Where the tables are is the driver's to say (`table_offsets`); each table's own offset
        # is applied per table when its rows are written.
        return {}

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self.buffer.append(batch)
            self.buffered += batch.num_rows
        if self.buffered >= FLUSH_ROWS:
            self._flush()

    def pre_commit(self, offsets_: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        if closing:
            self._flush()
        return dict(offsets_) if not self.buffer else {}

    def committable(self) -> str | None:
        entries = [{"table": name, "held": w.held, "rows": w.rows, "files": w.files, "flushes": w.flushes}
                   for name, w in self.written.items() if w.files or w.flushes]
        return json.dumps({"tables": entries}) if entries else None

    def stop(self) -> None:
        self.buffer = []
        if self._catalog is not None:
            close_catalog(self._catalog)
        self._catalog = None

    # --- writing ---

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = open_catalog(self.settings.catalog_name, self.settings.catalog)
        return self._catalog

    def _flush(self) -> None:
        import pyarrow as pa

        if not self.buffer:
            return
        batch = pa.Table.from_batches(self.buffer)
        self.buffer, self.buffered = [], 0
        self.raw = batch
        rows = self._decoded(batch)
        for name, part in route(rows, self.settings).items():
            self._write_table(name, part, batch.column("topic")[0].as_py(), batch.column("partition")[0].as_py())
        self.errant.flush()  # the dead letters are committed before the driver can commit the files

    def _decoded(self, batch: pa.Table) -> pa.Table:
        """The values as columns, with the records' offsets in `__offset` (dropped before writing);
        a value that does not decode goes to the errant record reporter."""
        import pyarrow as pa

        from reconciler.connectors.converters.arrow import decode

        decoded = decode(batch.column("value"), self.value_converter)
        failures = [RowFailure(index=f.index, stage=Stage.VALUE_CONVERTER, converter=self.value_converter.class_name,
                               reason=f.reason) for f in decoded.failures]
        for failure in record_failures(batch, failures):
            self.errant.report(failure)  # raises with errors.tolerance=none
        record_offsets = batch.column("offset")
        if not decoded.complete(batch.num_rows):
            record_offsets = record_offsets.take(pa.array(decoded.rows, pa.int64()))
        return decoded.table.append_column("__offset", record_offsets)

    def _fitting(self, table: Table, rows: pa.Table, name: str) -> tuple[pa.Table, pa.Table]:
        """(`rows` without those that do not fit the table's columns, each sent to the reporter;
        the rest cast to the table's columns)."""
        import pyarrow as pa

        values = rows.drop_columns(["__offset"])
        try:
            return rows, tables.conform(table, values, name)
        except ConnectorError:
            unfit = tables.unfit_rows(table, values)
            if not unfit:
                raise
        positions = {offset: i for i, offset in enumerate(self.raw.column("offset").to_pylist())}
        record_offsets = rows.column("__offset").to_pylist()
        failures = [RowFailure(index=positions[record_offsets[i]], stage=Stage.TASK_PUT, converter=type(self).__name__,
                               reason=f"table {name}: {why}") for i, why in sorted(unfit.items())]
        for failure in record_failures(self.raw, failures):
            self.errant.report(failure)  # raises with errors.tolerance=none, naming offset and column
        rows = rows.take(pa.array([i for i in range(rows.num_rows) if i not in unfit], pa.int64()))
        return rows, tables.conform(table, rows.drop_columns(["__offset"]), name)

    def _write_table(self, name: str, rows: pa.Table, topic: str, partition: int) -> None:
        import pyarrow.compute as pc

        schema = tables.iceberg_arrow(rows.drop_columns(["__offset"]).schema)
        table = self._guarded(name, lambda: tables.load_or_create(self.catalog, name, self.settings, schema,
                                                                   self.where))
        if table is None:
            return
        if name not in self.written:
            branch = self.settings.table_config(name).commit_branch
            held = offsets.table_offsets(table, branch, [topic], self.group).get((topic, partition))
            self.written[name] = TableWrites(held)
        written = self.written[name]
        if written.held is not None:
            rows = rows.filter(pc.greater_equal(rows.column("__offset"), written.held))
        if not rows.num_rows:
            return
        if self.settings.evolve_schema:
            evolved = tables.iceberg_arrow(rows.drop_columns(["__offset"]).schema)
            table = self._guarded(name, lambda: tables.evolve(table, evolved))
        rows, conformed = self._fitting(table, rows, name)
        if self.settings.keyed:
            ops = keyed.operations(rows, self.settings.cdc_field, self.settings.upsert)
            reduced = keyed.reduce(conformed, self.settings.table_config(name).id_columns, ops, name,
                                   rows.column("__offset").to_pylist())
            files = self._guarded(name, lambda: self._data_files(table, reduced.rows)) if reduced.rows.num_rows else []
            written.flushes.append({"files": files, "keys": reduced.keys, "written": reduced.written})
            written.rows += reduced.rows.num_rows
            return
        files = self._guarded(name, lambda: self._data_files(table, conformed))
        written.files += files
        written.rows += conformed.num_rows

    def _data_files(self, table: Table, rows: pa.Table) -> list[dict[str, Any]]:
        return [datafiles.to_json(f) for f in data_files(table, rows, self.settings.write_props)]

    def _guarded(self, name: str, work: Any) -> Any:
        """`work()`, a failure of the catalog or the storage as one line naming table and catalog."""
        try:
            return work()
        except ConnectorError:
            raise
        except Exception as exc:  # noqa: BLE001 - pyiceberg, pyarrow's filesystems and SQLAlchemy each raise their own
            raise ConnectorError(f"table {name} in the {self.where}: {type(exc).__name__}: "
                                 f"{one_line(exc, self.settings.catalog)}") from None
