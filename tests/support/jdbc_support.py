"""Helpers for the jdbc-sink tests (no tests here): JsonConverter records with schemas, the
connector's config for the test database, and the table read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg import sql

from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, decimal, struct
from reconciler.devtools.postgres import RunningPostgres

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
JDBC_SINK = "reconciler.connectors.jdbc.connector:JdbcSinkConnector"
# An order: what the tests move, every kind of column Confluent's dialect maps.
ORDER = struct(
    ("id", Schema("int64")),
    ("customer", Schema("string", optional=True)),
    ("amount", decimal(2, optional=True)),
    ("quantity", Schema("int32", optional=True)),
    ("paid", Schema("boolean", optional=True)),
    name="order",
)


def order(i: int, customer: str | None = None) -> bytes:
    from decimal import Decimal

    value = {"id": i, "customer": customer or f"customer {i}", "amount": Decimal(i) / 100, "quantity": i % 7,
             "paid": i % 2 == 0}
    encoded = envelope(ORDER, value)
    assert encoded is not None
    return encoded


def sink_config(postgres: RunningPostgres, database: str, **extra: Any) -> dict[str, str]:
    """A jdbc-sink config for `database` of the test server, JsonConverter values with schemas."""
    url = f"jdbc:postgresql://{postgres.host}:{postgres.port}/{database}"
    config = {"name": "jdbc", "topics": "orders", "connection.url": url, "connection.user": postgres.user,
              "connection.password": postgres.password, "value.converter": JSON, "key.converter": STRING}
    config.update({key: str(value).lower() if isinstance(value, bool) else str(value) for key, value in extra.items()})
    return config


def table_rows(dsn: str, table: str, columns: Sequence[str], order_by: str = "id") -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as connection:
        query = sql.SQL("SELECT {} FROM {} ORDER BY {}").format(
            sql.SQL(", ").join(sql.Identifier(c) for c in columns), sql.Identifier(table), sql.Identifier(order_by))
        return connection.execute(query).fetchall()
