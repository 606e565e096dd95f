"""The SELECTs `jdbc-source` runs, built with psycopg.sql (table and column names are always
quoted as `sql.Identifier` quotes them, with any `%` doubled, as in the user's query; offsets
are parameters). Pure: the statements are built, not run.

The WHERE and ORDER BY are Confluent's `TimestampIncrementingCriteria` ones; the rows are read
from the table (or the configured query) as a subquery, so a query's own columns are what the
criteria name. Each read is bounded to `batch.max.rows` rows (a LIMIT), so a read depends only on
the committed offset: in timestamp mode the bound is the `batch.max.rows`-th row's time, ties
included, since an offset between two rows of the same time would skip the second.
"""

from __future__ import annotations

from dataclasses import dataclass

from psycopg import sql

from reconciler.connectors.jdbc.source_tables import TableRef
from reconciler.connectors.jdbc.sql import quoted, verbatim

ROWS = sql.Identifier("__connect_rows")


@dataclass(frozen=True)
class Criteria:
    incrementing: str | None
    timestamps: tuple[str, ...]

    def timestamp(self) -> sql.Composable:
        """The row's time: the column, or COALESCE of the columns (`coalesceTimestampColumns`)."""
        names = [quoted(c) for c in self.timestamps]
        return names[0] if len(names) == 1 else sql.SQL("COALESCE({})").format(sql.SQL(",").join(names))


def source(table: TableRef | None, query: str) -> sql.Composable:
    return sql.SQL("SELECT * FROM {}").format(quoted(table.schema, table.table)) if table is not None else verbatim(query)


def _from(base: sql.Composable) -> sql.Composed:
    return sql.SQL("SELECT * FROM ({}) AS {}").format(base, ROWS)


def bulk(base: sql.Composable, suffix: str) -> sql.Composed:
    """Parameter: the row limit (one more than a batch takes, to tell a table too big for it)."""
    return sql.SQL("{} LIMIT %s {}").format(_from(base), verbatim(suffix))


def incrementing(base: sql.Composable, criteria: Criteria, suffix: str) -> sql.Composed:
    """Parameters: the last incrementing value, the row limit."""
    inc = quoted(criteria.incrementing or "")
    return sql.SQL("{} WHERE {} > %s ORDER BY {} ASC LIMIT %s {}").format(_from(base), inc, inc, verbatim(suffix))


def timestamp(base: sql.Composable, criteria: Criteria, suffix: str) -> sql.Composed:
    """Parameters: begin, end, begin, end, the row limit - 1. Rows after begin and before end,
    up to the time of the limit-th one (all rows of that time)."""
    ts = criteria.timestamp()
    window = sql.SQL("{ts} > %s AND {ts} < %s").format(ts=ts)
    bound = sql.SQL("(SELECT {ts} FROM ({base}) AS {rows} WHERE {window} ORDER BY {ts} ASC LIMIT 1 OFFSET %s)").format(
        ts=ts, base=base, rows=ROWS, window=window)
    return sql.SQL("{rows} WHERE {window} AND {ts} <= COALESCE({bound}, {ts}) ORDER BY {ts} ASC {suffix}").format(
        rows=_from(base), window=window, ts=ts, bound=bound, suffix=verbatim(suffix))


def timestamp_incrementing(base: sql.Composable, criteria: Criteria, suffix: str) -> sql.Composed:
    """Parameters: end, begin, last incrementing value, begin, the row limit."""
    ts, inc = criteria.timestamp(), quoted(criteria.incrementing or "")
    return sql.SQL("{rows} WHERE {ts} < %s AND (({ts} = %s AND {inc} > %s) OR {ts} > %s) "
                   "ORDER BY {ts},{inc} ASC LIMIT %s {suffix}").format(
        rows=_from(base), ts=ts, inc=inc, suffix=verbatim(suffix))


def table_columns() -> sql.SQL:
    """A table's columns (parameter: its quoted name): name, NOT NULL, auto-incrementing."""
    return sql.SQL(
        "SELECT a.attname, a.attnotnull, (a.attidentity <> '' OR coalesce(pg_get_expr(d.adbin, d.adrelid), '') "
        "LIKE 'nextval(%%') FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attrdef d "
        "ON d.adrelid = a.attrelid AND d.adnum = a.attnum WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 "
        "AND NOT a.attisdropped ORDER BY a.attnum")


def not_null_columns() -> sql.SQL:
    """Which (table oid, column number) pairs are NOT NULL (parameters: the oids, the numbers)."""
    return sql.SQL("SELECT a.attrelid, a.attnum FROM pg_catalog.pg_attribute a "
                   "JOIN unnest(%s::oid[], %s::int2[]) AS c(rel, num) ON a.attrelid = c.rel AND a.attnum = c.num "
                   "WHERE a.attnotnull")

