"""Which tables `jdbc-source` reads and which task reads each, as Confluent's
`TableMonitorThread` and `JdbcSourceConnector.taskConfigs` decide. Pure but for `list_tables`
(one catalog query).

A table is a `TableRef` (schema, name). Task configs carry a task's tables under `tables` as
Confluent writes them, `"schema"."table"` joined by commas; `parse_tables` reads that back
honouring quotes, so a name holding commas or quotes survives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from psycopg import sql

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.jdbc.source_config import JdbcSourceSettings

# pgjdbc's table types (getTables) as pg_class.relkind values.
RELKINDS: Final = {"TABLE": "r", "PARTITIONED TABLE": "p", "VIEW": "v", "MATERIALIZED VIEW": "m",
                   "FOREIGN TABLE": "f"}
_QUOTED = re.compile(r'\s*"((?:[^"]|"")*)"')


@dataclass(frozen=True, order=True)
class TableRef:
    schema: str
    table: str

    def ident(self) -> sql.Identifier:
        return sql.Identifier(self.schema, self.table)

    def unquoted(self) -> str:
        """`schema.table`: Confluent's `QuoteMethod.NEVER` form (offsets, include-list matching)."""
        return f"{self.schema}.{self.table}"

    def quoted(self) -> str:
        return ".".join('"' + part.replace('"', '""') + '"' for part in (self.schema, self.table))

    def __str__(self) -> str:
        return self.unquoted()


def list_tables(connection: Any, settings: JdbcSourceSettings) -> list[TableRef]:
    """The database's tables of `table.types` in `schema.pattern`, ordered as pgjdbc lists them."""
    kinds = [RELKINDS[t] for t in settings.table_types if t in RELKINDS] or ["r"]
    rows = connection.execute(
        "SELECT n.nspname, c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n "
        "ON n.oid = c.relnamespace WHERE c.relkind = ANY(%s) AND n.nspname !~ '^pg_' "
        "AND n.nspname <> 'information_schema' AND (%s::text IS NULL OR n.nspname LIKE %s) "
        "ORDER BY n.nspname, c.relname", [kinds, settings.schema_pattern, settings.schema_pattern]).fetchall()
    return [TableRef(schema, table) for schema, table in rows]


def _named(table: TableRef, names: Sequence[str]) -> bool:
    """Confluent's legacy match: `schema.table`, `"schema"."table"` or the bare table name."""
    return any(name in (table.unquoted(), table.quoted(), table.table) for name in names)


def select_tables(tables: Sequence[TableRef], settings: JdbcSourceSettings) -> list[TableRef]:
    """The tables the connector reads; a whitelisted name that is no table fails, naming it
    (Confluent's connector would only log that no table matched)."""
    if settings.include:
        chosen = [t for t in tables if any(re.fullmatch(p, t.unquoted()) for p in settings.include)
                  and not any(re.fullmatch(p, t.unquoted()) for p in settings.exclude)]
    elif settings.whitelist:
        chosen = [t for t in tables if _named(t, settings.whitelist)]
        missing = [n for n in settings.whitelist if not any(_named(t, [n]) for t in tables)]
        if missing:
            raise ConnectorError(f"no table {', '.join(missing)} in {settings.target.describe()} "
                                 f"(table.whitelist; check its name and schema, and the user's rights)")
    else:
        chosen = [t for t in tables if not _named(t, settings.blacklist)]
    by_name: dict[str, list[TableRef]] = {}
    for table in chosen:
        by_name.setdefault(table.table, []).append(table)
    duplicates = [str(t) for same in by_name.values() if len(same) > 1 for t in same]
    if duplicates:
        raise ConnectorError("The connector uses the unqualified table name as the topic name and has detected "
                             f"duplicate unqualified table names: {', '.join(duplicates)}; select one of each")
    return chosen


def group_tables(tables: Sequence[TableRef], max_tasks: int) -> list[list[TableRef]]:
    """Connect's `ConnectorUtils.groupPartitions`: contiguous groups, the first ones one larger."""
    groups = min(len(tables), max_tasks)
    per, extra = divmod(len(tables), groups)
    out, start = [], 0
    for index in range(groups):
        size = per + (1 if index < extra else 0)
        out.append(list(tables[start:start + size]))
        start += size
    return out


def render_tables(tables: Sequence[TableRef]) -> str:
    return ",".join(t.quoted() for t in tables)


def parse_tables(text: str) -> list[TableRef]:
    """`render_tables` read back: `"schema"."table"` items, commas between."""
    tables, position = [], 0
    while position < len(text):
        parts = []
        for separator in (".", ","):
            match = _QUOTED.match(text, position)
            if match is None:
                raise ValueError(f"not a quoted table list at {position}: {text!r}")
            parts.append(match.group(1).replace('""', '"'))
            position = match.end()
            if position < len(text) and text[position] != separator:
                raise ValueError(f"expected {separator!r} at {position}: {text!r}")
            position += 1
        tables.append(TableRef(parts[0], parts[1]))
    return tables
