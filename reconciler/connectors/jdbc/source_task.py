"""The `jdbc-source` task: each poll reads, per table (or the query), up to `batch.max.rows` rows
after the committed offset, in one REPEATABLE READ snapshot, and returns them with the offset
after the last (docs/connectors.md#jdbc-source). A poll depends only on the committed offsets and
the database, so a batch re-run after a crash reads the same rows (plus rows committed since).

Bulk mode reads the whole table once per batch (no offsets, as Confluent's); the others read
Confluent's WHERE/ORDER BY (`source_sql`). Database errors are one line naming the table.
"""

from __future__ import annotations

import datetime as dt
import logging
import zoneinfo
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

from reconciler.connectors.api import ConnectorError, PartitionKey, SourceBatch, SourceOffset, SourceTask, partition_key
from reconciler.connectors.converters.schema import DataError
from reconciler.connectors.converters.settings import Converter, converter
from reconciler.connectors.jdbc import source_sql as q
from reconciler.connectors.jdbc.connection import Failing, connect
from reconciler.connectors.jdbc.source_config import BULK, INCREMENTING, TIMESTAMP, JdbcSourceSettings
from reconciler.connectors.jdbc.source_offsets import QUERY_PARTITION, Position, lookup_keys, table_partition
from reconciler.connectors.jdbc.source_tables import TableRef, parse_tables
from reconciler.connectors.jdbc.source_records import encode_rows
from reconciler.connectors.jdbc.source_types import TEXT_OIDS, ColumnInfo, RowShape, row_shape

LOG = logging.getLogger(__name__)
JSON_WITH_SCHEMAS = Converter("json", schemas_enable=True)


class JdbcSourceTask(SourceTask):
    def __init__(self, task_config: Mapping[str, str]) -> None:
        super().__init__(task_config)
        self.settings = JdbcSourceSettings.parse(task_config)
        self.sources: list[TableRef | None] = [None] if self.settings.query else list(parse_tables(self.settings.tables))
        self.converter = converter(task_config, "value") if task_config.get("value.converter") else JSON_WITH_SCHEMAS
        self.zone = zoneinfo.ZoneInfo(self.settings.timezone)
        self.connection: psycopg.Connection[Any] | None = None
        self.criteria: dict[TableRef | None, q.Criteria] = {}
        self.bulk_read = False

    def poll_batch(self, committed: Mapping[PartitionKey, SourceOffset], max_records: int) -> SourceBatch:
        if self.settings.mode == BULK and self.bulk_read:
            return SourceBatch.empty()  # once per batch: the next batch reads the table again
        topics: list[str] = []
        values: list[bytes | None] = []
        offsets: dict[PartitionKey, SourceOffset] = {}
        for table in self.sources:
            budget = max_records - len(values)
            if budget <= 0:
                break
            limit = budget if self.settings.mode == BULK else min(budget, self.settings.batch_max_rows)
            rows, position = self._read(table, self._committed(table, committed), limit)
            topic = self.settings.topic_prefix + (table.table if table is not None else "")
            topics.extend([topic] * len(rows))
            values.extend(rows)
            if position is not None and rows:
                offsets[partition_key(QUERY_PARTITION if table is None else table_partition(table))] = \
                    position.to_offset()
        self.bulk_read = True
        return SourceBatch(topics, [None] * len(values), values, offsets)

    def stop(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    # --- reading ---

    def _committed(self, table: TableRef | None, committed: Mapping[PartitionKey, SourceOffset]) -> Position:
        for key in lookup_keys(table, self.settings.target.database):
            if committed.get(key):
                return Position.from_offset(committed[key])
        initial = self.settings.timestamp_initial
        if initial is not None and initial >= 0 and self.settings.uses_timestamp:
            return Position.from_offset({"timestamp": initial})
        return Position()

    def _read(self, table: TableRef | None, position: Position, limit: int) -> tuple[list[bytes | None], Position | None]:
        connection = self._connect()
        place = f"table {table}" if table is not None else "the query"
        with Failing(self.settings.target, place, "read"), connection.transaction():
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
            criteria = self._criteria(connection, table)
            statement, params = self._statement(connection, table, criteria, position, limit)
            with connection.cursor() as cursor:
                cursor.execute(statement, params)
                shape = self._shape(connection, cursor, table)
                rows = cursor.fetchall()
        if self.settings.mode == BULK and len(rows) > limit:  # timestamp mode may pass it: ties
            raise ConnectorError(f"{place} in {self.settings.target.describe()} has more rows than a batch "
                                 f"takes ({limit}): mode=bulk reads a whole table per batch; raise the batch's "
                                 "record budget or use an incremental mode")
        values = self._encode(shape, table, rows)
        if self.settings.mode == BULK or not rows:
            return values, None
        return values, self._position(shape, criteria, rows[-1])

    def _statement(self, connection: psycopg.Connection[Any], table: TableRef | None, criteria: q.Criteria,
                   position: Position, limit: int) -> tuple[Any, list[Any]]:
        base, suffix, mode = q.source(table, self.settings.query), self.settings.query_suffix, self.settings.mode
        if mode == BULK:
            return q.bulk(base, suffix), [limit + 1]
        if mode == INCREMENTING:
            last = -1 if position.incrementing is None else position.incrementing
            return q.incrementing(base, criteria, suffix), [last, limit]
        now = connection.execute("SELECT CURRENT_TIMESTAMP").fetchone()
        assert now is not None
        end = now[0] - dt.timedelta(milliseconds=self.settings.delay_ms)
        begin = position.timestamp or dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        if mode == TIMESTAMP:
            return q.timestamp(base, criteria, suffix), [begin, end, begin, end, limit - 1]
        last = -1 if position.incrementing is None else position.incrementing
        return q.timestamp_incrementing(base, criteria, suffix), [end, begin, last, begin, limit]

    def _encode(self, shape: RowShape, table: TableRef | None, rows: list[tuple[Any, ...]]) -> list[bytes | None]:
        try:
            return encode_rows(self.converter, shape, rows)
        except (DataError, ValueError) as exc:
            where = f"table {table}" if table is not None else "the query"
            raise ConnectorError(f"cannot convert a row of {where} in {self.settings.target.describe()}: {exc}") from None

    def _position(self, shape: RowShape, criteria: q.Criteria, row: tuple[Any, ...]) -> Position:
        value = shape.value(row)
        timestamp = next((value[c] for c in criteria.timestamps if value.get(c) is not None), None)
        incrementing = value.get(criteria.incrementing) if criteria.incrementing else None
        if criteria.incrementing and not isinstance(incrementing, int):
            raise ConnectorError(f"the incrementing column {criteria.incrementing} holds {incrementing!r}, "
                                 "not an integer (Invalid type for incrementing column)")
        return Position.at(timestamp, incrementing)

    # --- the table's columns ---

    def _criteria(self, connection: psycopg.Connection[Any], table: TableRef | None) -> q.Criteria:
        if table in self.criteria:
            return self.criteria[table]
        settings = self.settings
        incrementing = settings.incrementing_column if settings.uses_incrementing else None
        timestamps = settings.timestamp_columns if settings.uses_timestamp else ()
        if table is not None:
            columns = connection.execute(q.table_columns(), [table.ident().as_string(connection)]).fetchall()
            place = f"table {table} in {settings.target.describe()}"
            if not columns:
                raise ConnectorError(f"{place} does not exist (or the user may not read it)")
            incrementing = self._incrementing(place, columns, incrementing)
            self._check_columns(place, columns, incrementing, timestamps)
        self.criteria[table] = q.Criteria(incrementing, timestamps)
        return self.criteria[table]

    def _incrementing(self, place: str, columns: list[tuple[str, bool, bool]], named: str | None) -> str | None:
        if named != "":
            return named
        auto = [name for name, _, is_auto in columns if is_auto]
        if not auto:
            raise ConnectorError(f"{place} has no auto-incrementing column: set incrementing.column.name")
        return auto[0]

    def _check_columns(self, place: str, columns: list[tuple[str, bool, bool]], incrementing: str | None,
                       timestamps: tuple[str, ...]) -> None:
        not_null = {name: flag for name, flag, _ in columns}
        for key, name in [("incrementing.column.name", incrementing), *(("timestamp.column.name", t) for t in timestamps)]:
            if name is None:
                continue
            if name not in not_null:
                raise ConnectorError(f"{place} has no column {name} ({key})")
            if self.settings.validate_non_null and not not_null[name]:
                raise ConnectorError(f"{place}: column {name} ({key}) may be NULL; make it NOT NULL or set "
                                     "validate.non.null=false")

    def _shape(self, connection: psycopg.Connection[Any], cursor: psycopg.Cursor[Any], table: TableRef | None) -> RowShape:
        description = cursor.description or []
        result = cursor.pgresult
        assert result is not None
        places = [(result.ftable(i), result.ftablecol(i)) for i in range(len(description))]
        found = connection.execute(q.not_null_columns(), [[p[0] for p in places], [p[1] for p in places]]).fetchall()
        required = {(rel, num) for rel, num in found}
        columns = [ColumnInfo(c.name, c.type_code, c.precision, c.scale, places[i] in required)
                   for i, c in enumerate(description)]
        shape = row_shape(columns, table.table if table is not None else None, self.settings.numeric_mapping, self.zone)
        if shape.skipped:
            LOG.warning("jdbc-source: columns %s of %s have types with no Connect mapping; left out", shape.skipped,
                        table or "the query")
        return shape

    def _connect(self) -> psycopg.Connection[Any]:
        if self.connection is None or self.connection.closed:
            self.connection = connect(self.settings.target)
            for oid in TEXT_OIDS:
                self.connection.adapters.register_loader(oid, TextLoader)
            self.connection.execute("SELECT set_config('TimeZone', %s, false)", [self.settings.timezone])
        return self.connection
