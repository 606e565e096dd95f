"""The `jdbc-sink` task: a partition's records into its table, and the partition's next offset
into the offsets table, in one PostgreSQL transaction, so the table is exactly the topic
whatever kills the task when (docs/connectors.md#jdbc-sink).

`open` reads the offsets table; `write` drops the records below it and buffers the rest;
a flush (every `batch.size` records, and at `pre_commit(closing=True)`) decodes the buffered
records and hands each `batch.size` of them, as one transaction, to the task's `writer`: it
creates or evolves the table when allowed, COPYs the rows (into the table in insert mode,
through a temporary table for upsert, update and deletes) and writes the offset, on its own
thread while the task reads on (`pre_commit` waits for it). Any database error becomes one
`ConnectorError` line naming the place; the password is never in it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import psycopg

from reconciler import failpoints
from reconciler.connectors.api import ConnectorError, SinkTask, TopicPartition
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.jdbc import sql as q
from reconciler.connectors.jdbc.changes import unwrap
from reconciler.connectors.jdbc.config import JdbcSinkSettings
from reconciler.connectors.jdbc.connection import Failing, connect
from reconciler.connectors.jdbc.decode import decode_records
from reconciler.connectors.jdbc.rows import Layout, Planned, layout, plan, zone_of
from reconciler.connectors.jdbc.writer import TransactionWriter
from reconciler.connectors.range_files import split_by_partition

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass(frozen=True)
class Transaction:
    """One transaction's rows, decoded before the writer's thread takes it: either the columnar
    rows as CSV (`csv`, `bulk`) or the per-record rows (`planned`), and the offset after them."""

    tp: TopicPartition
    table: q.TableName
    lay: Layout
    next_offset: int
    csv: pa.Buffer | None = None
    planned: Planned | None = None
    schemaless: bool = False


class JdbcSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = JdbcSinkSettings.parse(task_config)
        self.converters = (converter(task_config, "key"), converter(task_config, "value"))
        self.zone = zone_of(self.settings)
        self.connection: psycopg.Connection[Any] | None = None
        self.held: dict[TopicPartition, int] = {}
        self.buffers: dict[TopicPartition, list[pa.RecordBatch]] = {}
        self.last_buffered: dict[TopicPartition, int] = {}
        self.writer = TransactionWriter()

    # --- the SinkTask methods ---

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        connection = self._connect()
        name = self.settings.offsets_table
        with self._failing(f"offsets table {name}"), connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [name])  # tasks create it once
            connection.execute(q.create_offsets(name))
            found = {(t, p): o for t, p, o in connection.execute(q.read_offsets(name), [self.settings.name])}
        for tp in partitions:
            if tp in found:
                self.held[tp] = found[tp]
        return {tp: self.held[tp] for tp in partitions if tp in self.held}

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow.compute as pc

        for tp, part in split_by_partition(batch):
            low = max(self.held.get(tp, 0), self.last_buffered.get(tp, -1) + 1)
            rows = part.filter(pc.greater_equal(part.column("offset"), low))
            if not rows.num_rows:
                continue
            self.buffers.setdefault(tp, []).append(rows)
            self.last_buffered[tp] = pc.max(rows.column("offset")).as_py()
            if self.settings.batch_size and sum(b.num_rows for b in self.buffers[tp]) >= self.settings.batch_size:
                self._flush(tp)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        if closing:
            for tp in list(self.buffers):
                self._flush(tp)
        self.writer.drain()  # what `_safe` calls written must be committed
        return {tp: self._safe(tp, offset) for tp, offset in offsets.items()}

    def stop(self) -> None:
        self.buffers = {}
        self.writer.close()  # before the connection closes under it
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    # --- flushing ---

    def _safe(self, tp: TopicPartition, offset: int) -> int:
        """Everything below `offset` is in the database, except what is still buffered."""
        buffered = self.buffers.get(tp)
        return min(offset, buffered[0].column("offset")[0].as_py()) if buffered else offset

    def _flush(self, tp: TopicPartition) -> None:
        """Hand the partition's buffered records to the writer, `batch.size` records per
        transaction, each decoded here meanwhile. The columnar read takes all of them at once
        (a quarter less CPU than 3,000 at a time), then each transaction its slice."""
        import pyarrow as pa

        from reconciler.connectors.jdbc import bulk

        chunks = self.buffers.pop(tp, [])
        if not chunks:
            return
        rows = pa.Table.from_batches(chunks)
        size = self.settings.batch_size or rows.num_rows
        table = q.TableName.parse(self.settings.table_for(tp[0]), self.settings.quote)
        fast = bulk.columnar(rows, *self.converters, self.settings, str(table))  # the common batch, no row in Python
        for start in range(0, rows.num_rows, size):
            part = rows.slice(start, size)
            next_offset = part.column("offset")[-1].as_py() + 1
            if fast is not None:
                csv = bulk.to_csv(bulk.transaction_rows(fast, start, size))
                transaction = Transaction(tp=tp, table=table, lay=fast.layout, next_offset=next_offset, csv=csv)
            else:
                transaction = self._planned(tp, table, part, next_offset)
            self.writer.submit(partial(self._write_transaction, transaction))

    def _planned(self, tp: TopicPartition, table: q.TableName, rows: pa.Table, next_offset: int) -> Transaction:
        """The per-record way: every record read in Python, its row planned (`rows.plan`)."""
        decoded = unwrap(decode_records(rows, *self.converters), self.settings.delete_enabled)
        lay = layout(self.settings, str(table), decoded.key_schema, decoded.value_schema, decoded.schemaless)
        return Transaction(tp=tp, table=table, lay=lay, next_offset=next_offset,
                           planned=plan(decoded.records, lay, self.settings, self.zone), schemaless=decoded.schemaless)

    def _write_transaction(self, transaction: Transaction) -> None:
        """On the writer's thread: the rows and the partition's next offset, one transaction."""
        (topic, partition), table = transaction.tp, transaction.table
        connection = self._connect()
        with self._failing(f"table {table}"), connection.transaction():
            if transaction.csv is not None:
                self._write_columns(connection, table, transaction.lay, transaction.csv)
            elif transaction.planned is not None and (transaction.planned.puts or transaction.planned.deletes):
                self._write_rows(connection, table, transaction.lay, transaction.planned, transaction.schemaless)
            failpoints.hit(failpoints.JDBC_AFTER_ROWS)
            connection.execute(q.write_offset(self.settings.offsets_table),
                               [self.settings.name, topic, partition, transaction.next_offset])
            failpoints.hit(failpoints.JDBC_BEFORE_COMMIT)
        failpoints.hit(failpoints.JDBC_AFTER_COMMIT)
        self.held[transaction.tp] = transaction.next_offset

    def _write_rows(self, connection: psycopg.Connection[Any], table: q.TableName, lay: Layout, planned: Planned,
                    schemaless: bool) -> None:
        if not self._prepare(connection, table, lay, schemaless, needed=bool(planned.puts)):
            return  # only deletes, and no table to delete from
        if planned.deletes:
            connection.execute(q.create_temp(q.DELETES, table, lay.keys))
            _copy(connection, q.copy_into(psycopg.sql.Identifier(q.DELETES), lay.keys), planned.deletes)
            connection.execute(q.delete_using(table, lay.keys))
        if not planned.puts:
            return
        if self.settings.insert_mode == "insert":
            _copy(connection, q.copy_into(table.ident(), lay.names), planned.puts)
            return
        connection.execute(q.create_temp(q.BATCH, table, lay.names))
        _copy(connection, q.copy_into(psycopg.sql.Identifier(q.BATCH), lay.names), planned.puts)
        if self.settings.insert_mode == "upsert":
            connection.execute(q.upsert_from(table, lay.keys, lay.others))
        elif lay.others:
            connection.execute(q.update_from(table, lay.keys, lay.others))

    def _write_columns(self, connection: psycopg.Connection[Any], table: q.TableName, lay: Layout,
                       csv: pa.Buffer) -> None:
        """`bulk.columnar`'s rows, as CSV: COPYed into the table (insert), or through the batch table."""
        from reconciler.connectors.jdbc.bulk import copy_csv

        self._prepare(connection, table, lay, False, needed=True)
        if self.settings.insert_mode == "insert":
            copy_csv(connection, q.copy_into(table.ident(), lay.names), csv)
            return
        connection.execute(q.create_temp(q.BATCH, table, lay.names))
        copy_csv(connection, q.copy_into(psycopg.sql.Identifier(q.BATCH), lay.names), csv)
        if self.settings.insert_mode == "upsert":
            connection.execute(q.upsert_from(table, lay.keys, lay.others))
        elif lay.others:
            connection.execute(q.update_from(table, lay.keys, lay.others))

    def _prepare(self, connection: psycopg.Connection[Any], table: q.TableName, lay: Layout, schemaless: bool,
                 needed: bool) -> bool:
        """Whether the table has the layout's columns, after creating or evolving it as allowed."""
        place = f"table {table} in {self.settings.target.describe()}"
        existing = _columns(connection, table)
        if existing is None:
            if not needed:
                return False
            if schemaless:
                raise ConnectorError(f"{place} does not exist: records without schemas (value.converter.schemas."
                                     "enable=false) are written only into an existing table (auto.create=false)")
            if not self.settings.auto_create:
                raise ConnectorError(f"{place} does not exist and auto.create is false")
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [str(table)])
            connection.execute(q.create_table(table, lay.columns, lay.keys))
            existing = _columns(connection, table) or set()
        for column in lay.columns:
            if column.name in existing:
                continue
            if schemaless or not self.settings.auto_evolve:
                raise ConnectorError(f"{place} has no column {column.name} and auto.evolve is "
                                     f"{'not possible without schemas' if schemaless else 'false'}")
            if not column.nullable:
                raise ConnectorError(f"{place}: cannot add the required column {column.name} (only optional fields "
                                     "are added, as Confluent's sink adds them)")
            connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [str(table)])
            connection.execute(q.add_column(table, column))
        return True

    # --- the connection ---

    def _connect(self) -> psycopg.Connection[Any]:
        if self.connection is None or self.connection.closed:
            self.connection = connect(self.settings.target)
        return self.connection

    def _failing(self, place: str) -> Failing:
        return Failing(self.settings.target, place)


def _columns(connection: psycopg.Connection[Any], table: q.TableName) -> set[str] | None:
    """The table's column names, or None when there is no such table."""
    quoted = table.ident().as_string(connection)
    found = connection.execute(q.table_columns(), [quoted]).fetchall()
    return {name for name, _, _ in found} or None


def _copy(connection: psycopg.Connection[Any], statement: psycopg.sql.Composed, rows: Sequence[Sequence[Any]]) -> None:
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def alter_offsets_table(settings: JdbcSinkSettings, offsets: Mapping[TopicPartition, int | None]) -> None:
    """Set (or, for None, remove) partitions' next offsets in the offsets table, at once."""
    name = settings.offsets_table
    with connect(settings.target) as connection, Failing(settings.target, f"offsets table {name}"), connection.transaction():
        connection.execute(q.create_offsets(name))
        for (topic, partition), offset in offsets.items():
            if offset is None:
                connection.execute(q.delete_offset(name), [settings.name, topic, partition])
            else:
                connection.execute(q.write_offset(name), [settings.name, topic, partition, offset])
