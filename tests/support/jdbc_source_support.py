"""Helpers for the jdbc-source tests (no tests here): a database with an `orders` table, the
connector's config for it, the table's rows as the payloads Confluent's source writes (computed
here from the rows, independently of the connector), and the records and offsets read back."""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from collections import Counter
from typing import Any

import psycopg

from reconciler.devtools.postgres import RunningPostgres
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.settings import KafkaSettings

JDBC_SOURCE = "jdbc-source"
EPOCH = dt.datetime(1970, 1, 1)
ORDERS = ("CREATE TABLE orders (id bigserial PRIMARY KEY, customer text, amount numeric(10,2), "
          "updated timestamp NOT NULL)")


def new_database(postgres: RunningPostgres) -> tuple[str, str]:
    name = f"src_{uuid.uuid4().hex[:10]}"
    return name, postgres.create_database(name)


def create_orders(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(ORDERS)


def insert_orders(dsn: str, first: int, count: int, tie_every: int = 3) -> None:
    """Rows `first`… with increasing times, every `tie_every` rows sharing one (timestamp mode's ties)."""
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO orders (id, customer, amount, updated) SELECT i, 'customer ' || i, i / 100.0, "
            "timestamp '2024-01-01' + (i / %s::int) * interval '1001001 microseconds' FROM generate_series(%s::int, %s::int) i",
            [tie_every, first, first + count - 1])


def source_config(postgres: RunningPostgres, database: str, prefix: str, **extra: Any) -> dict[str, str]:
    config = {"connection.url": f"jdbc:postgresql://{postgres.host}:{postgres.port}/{database}",
              "connection.user": postgres.user, "connection.password": postgres.password,
              "table.whitelist": "orders", "topic.prefix": prefix,
              "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    config.update({key: str(value) for key, value in extra.items()})
    return config


def _decimal_base64(value: Any, scale: int) -> str:
    unscaled = int(value.scaleb(scale))
    size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(size, "big", signed=True)).decode()


def expected_payloads(dsn: str) -> Counter[str]:
    """Each row as JsonConverter's payload text (Decimal as BASE64 of the unscaled value, the
    Timestamp as epoch milliseconds), computed from the rows alone."""
    with psycopg.connect(dsn) as connection:
        rows = connection.execute("SELECT id, customer, amount, updated FROM orders").fetchall()
    return Counter(json.dumps({"id": i, "customer": c, "amount": _decimal_base64(a, 2),
                               "updated": (u - EPOCH) // dt.timedelta(milliseconds=1)}, separators=(",", ":"))
                   for i, c, a, u in rows)


def topic_payloads(settings: KafkaSettings, topic: str) -> Counter[str]:
    """The records' payloads (as compact JSON text), each checked to have no key and a schema."""
    found: Counter[str] = Counter()
    for message in read_to_end(settings, topic):
        assert message.key is None
        value = json.loads(message.value or b"null")
        assert value["schema"]["name"] == "orders" and value["schema"]["type"] == "struct"
        found[json.dumps(value["payload"], separators=(",", ":"))] += 1
    return found


def offset_records(settings: KafkaSettings, connector: str) -> list[tuple[bytes, bytes | None]]:
    """The connector's records in the offsets topic, raw (key bytes, value bytes)."""
    prefix = json.dumps([connector]).encode()[:-1] + b","
    return [(m.key or b"", m.value) for m in read_to_end(settings, settings.topics.offsets)
            if (m.key or b"").startswith(prefix)]


def last_row_offset(dsn: str, mode: str) -> bytes:
    """What Confluent's source writes after the table's last row (ORDER BY its criteria)."""
    with psycopg.connect(dsn) as connection:
        row = connection.execute("SELECT id, updated FROM orders ORDER BY updated DESC, id DESC LIMIT 1").fetchone()
        assert row is not None
        last_id, updated = row
        if mode == "incrementing":
            last_id = connection.execute("SELECT max(id) FROM orders").fetchone()[0]  # type: ignore[index]
    millis = (updated - EPOCH) // dt.timedelta(milliseconds=1)
    nanos = updated.microsecond * 1000
    return {"incrementing": b'{"incrementing":%d}' % last_id,
            "timestamp": b'{"timestamp_nanos":%d,"timestamp":%d}' % (nanos, millis),
            "timestamp+incrementing": b'{"timestamp_nanos":%d,"incrementing":%d,"timestamp":%d}' % (
                nanos, last_id, millis)}[mode]
