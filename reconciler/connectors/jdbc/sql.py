"""The SQL `jdbc-sink` runs, built with psycopg.sql: every table and column name is an
`sql.Identifier` (quoted by psycopg, never interpolated), every value a parameter or COPY data.
And Connect's types as PostgreSQL's, as Confluent's `PostgreSqlDatabaseDialect.getSqlType`
maps them (docs/connectors.md#jdbc-sink). Pure: the statements are built, not run.

`quoted` and `verbatim` serve `jdbc-source` too: a statement that carries parameters reads every
`%` in its text as a placeholder's, so a name or a query holding one has it doubled there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from psycopg import sql

from reconciler.connectors.converters.schema import DECIMAL, Schema
from reconciler.connectors.jdbc.temporal import COLUMN_TYPES

# Confluent's `getSqlType` for PostgreSQL, by Connect type (JsonConverter's names) and logical
# name; and Debezium's time types and UUID as its JDBC sink creates them (`temporal`).
LOGICAL_TYPES: Final = {DECIMAL: "DECIMAL", **COLUMN_TYPES}
PRIMITIVE_TYPES: Final = {
    "int8": "SMALLINT", "int16": "SMALLINT", "int32": "INT", "int64": "BIGINT", "float": "REAL",
    "double": "DOUBLE PRECISION", "boolean": "BOOLEAN", "string": "TEXT", "bytes": "BYTEA",
}
BATCH: Final = "__connect_batch"  # the temporary tables a merge goes through (dropped at commit)
DELETES: Final = "__connect_deletes"


def quoted(*parts: str) -> sql.Composable:
    """A quoted identifier that may hold `%`, for a statement with parameters (`sql.Identifier`
    does not double it, and psycopg would read it as a placeholder)."""
    return verbatim(sql.Identifier(*parts).as_string(None))


def verbatim(text: str) -> sql.SQL:
    """SQL text taken as written (the user's `query`, a quoted name), its `%` doubled."""
    return sql.SQL(text.replace("%", "%%"))


class UnsupportedType(ValueError):
    """A Connect schema with no PostgreSQL column type (a struct or map field)."""


def pg_type(schema: Schema) -> str:
    """The column type Confluent's sink creates for a field of `schema`."""
    if schema.name in LOGICAL_TYPES:
        return LOGICAL_TYPES[schema.name]
    if schema.type in PRIMITIVE_TYPES:
        return PRIMITIVE_TYPES[schema.type]
    if schema.type == "array" and schema.items is not None and schema.items.type != "array":
        return pg_type(schema.items) + "[]"
    raise UnsupportedType(f"{schema.describe()} has no PostgreSQL column type (Confluent's sink has none either)")


@dataclass(frozen=True)
class TableName:
    """A table, optionally in a schema (`schema.table`, as Confluent's `TableId` parses it)."""

    schema: str | None
    table: str

    @classmethod
    def parse(cls, name: str, quote: bool) -> TableName:
        parts = [p if quote else p.lower() for p in name.split(".")]
        if len(parts) == 1:
            return cls(None, parts[0])
        return cls(parts[-2], parts[-1])  # catalog.schema.table: the catalog is the database

    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.table) if self.schema is None else sql.Identifier(self.schema, self.table)

    def __str__(self) -> str:
        return self.table if self.schema is None else f"{self.schema}.{self.table}"


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # a PostgreSQL type, from `pg_type`: fixed text, never from a record
    nullable: bool = True


def _names(names: Sequence[str]) -> sql.Composed:
    return sql.SQL(", ").join(sql.Identifier(n) for n in names)


def create_table(table: TableName, columns: Sequence[Column], keys: Sequence[str]) -> sql.Composed:
    """Confluent's `CREATE TABLE`: required fields NOT NULL, the key columns the primary key."""
    defs = [sql.SQL("{} {}{}").format(sql.Identifier(c.name), sql.SQL(c.type),
                                      sql.SQL("" if c.nullable and c.name not in keys else " NOT NULL"))
            for c in columns]
    if keys:
        defs.append(sql.SQL("PRIMARY KEY ({})").format(_names(keys)))
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} ({})").format(table.ident(), sql.SQL(", ").join(defs))


def add_column(table: TableName, column: Column) -> sql.Composed:
    return sql.SQL("ALTER TABLE {} ADD COLUMN {} {}").format(table.ident(), sql.Identifier(column.name),
                                                            sql.SQL(column.type))


def table_columns() -> sql.SQL:
    """The columns of a table (parameter: its quoted name) with their types and NOT NULL."""
    return sql.SQL("SELECT attname, format_type(atttypid, atttypmod), attnotnull FROM pg_attribute "
                   "WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped ORDER BY attnum")


def create_temp(temp: str, table: TableName, names: Sequence[str]) -> sql.Composed:
    """A temporary table with `names` typed as the target's columns, dropped at commit."""
    return sql.SQL("CREATE TEMP TABLE {} ON COMMIT DROP AS SELECT {} FROM {} WITH NO DATA").format(
        sql.Identifier(temp), _names(names), table.ident())


def copy_into(target: sql.Identifier, names: Sequence[str]) -> sql.Composed:
    return sql.SQL("COPY {} ({}) FROM STDIN").format(target, _names(names))


def upsert_from(table: TableName, keys: Sequence[str], others: Sequence[str]) -> sql.Composed:
    """Confluent's PostgreSQL upsert, from the batch's temporary table (one row per key)."""
    names = [*keys, *others]
    action = sql.SQL("DO NOTHING") if not others else sql.SQL("DO UPDATE SET {}").format(
        sql.SQL(", ").join(sql.SQL("{0} = EXCLUDED.{0}").format(sql.Identifier(n)) for n in others))
    return sql.SQL("INSERT INTO {} ({}) SELECT {} FROM {} ON CONFLICT ({}) {}").format(
        table.ident(), _names(names), _names(names), sql.Identifier(BATCH), _names(keys), action)


def _key_match(keys: Sequence[str], source: str) -> sql.Composed:
    return sql.SQL(" AND ").join(sql.SQL("{}.{} = {}.{}").format(sql.Identifier("__t"), sql.Identifier(k),
                                                                 sql.Identifier(source), sql.Identifier(k))
                                 for k in keys)


def update_from(table: TableName, keys: Sequence[str], others: Sequence[str]) -> sql.Composed:
    """Confluent's `UPDATE … WHERE key = ?`, for the whole batch at once."""
    assigns = sql.SQL(", ").join(sql.SQL("{} = {}.{}").format(sql.Identifier(n), sql.Identifier(BATCH),
                                                              sql.Identifier(n)) for n in others)
    return sql.SQL("UPDATE {} AS {} SET {} FROM {} WHERE {}").format(
        table.ident(), sql.Identifier("__t"), assigns, sql.Identifier(BATCH), _key_match(keys, BATCH))


def delete_using(table: TableName, keys: Sequence[str]) -> sql.Composed:
    return sql.SQL("DELETE FROM {} AS {} USING {} WHERE {}").format(
        table.ident(), sql.Identifier("__t"), sql.Identifier(DELETES), _key_match(keys, DELETES))


# --- the offsets table ----------------------------------------------------------------------


def create_offsets(name: str) -> sql.Composed:
    return sql.SQL("CREATE TABLE IF NOT EXISTS {} (connector TEXT NOT NULL, topic TEXT NOT NULL, "
                   "kafka_partition INT NOT NULL, next_offset BIGINT NOT NULL, "
                   "PRIMARY KEY (connector, topic, kafka_partition))").format(sql.Identifier(name))


def read_offsets(name: str) -> sql.Composed:
    return sql.SQL("SELECT topic, kafka_partition, next_offset FROM {} WHERE connector = %s").format(quoted(name))


def write_offset(name: str) -> sql.Composed:
    return sql.SQL("INSERT INTO {} (connector, topic, kafka_partition, next_offset) VALUES (%s, %s, %s, %s) "
                   "ON CONFLICT (connector, topic, kafka_partition) DO UPDATE SET next_offset = EXCLUDED.next_offset"
                   ).format(quoted(name))


def delete_offset(name: str) -> sql.Composed:
    return sql.SQL("DELETE FROM {} WHERE connector = %s AND topic = %s AND kafka_partition = %s").format(quoted(name))
