"""jdbc-sink's task against the real PostgreSQL (no Kafka, no Spark: the runtime's part is in
test_jdbc_sink_run.py): each mode's end state, re-delivery written once, hostile names quoted,
and every failure one line that names the place and never the password, with nothing committed."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from jdbc_support import order, sink_config, table_rows
from reconciler.connectors.api import ConnectorError, SinkRecord, records_to_batch
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.jdbc.bulk import columnar
from reconciler.connectors.jdbc.config import JdbcSinkSettings
from reconciler.connectors.jdbc.connector import JdbcSinkConnector
from reconciler.connectors.jdbc.task import JdbcSinkTask
from reconciler.devtools.postgres import RunningPostgres

COLUMNS = ["id", "customer", "amount", "quantity", "paid"]


@pytest.fixture
def database(postgres: RunningPostgres) -> Iterator[tuple[str, str]]:
    """(name, dsn) of a database of its own for the test."""
    name = f"jdbc_{uuid.uuid4().hex[:10]}"
    yield name, postgres.create_database(name)


def records(values: list[tuple[bytes | None, bytes | None]], partition: int = 0, start: int = 0,
            topic: str = "orders") -> list[SinkRecord]:
    return [SinkRecord(topic, partition, start + i, key, value, 1_700_000_000_000) for i, (key, value) in enumerate(values)]


def run_task(config: dict[str, str], batches: list[list[SinkRecord]]) -> dict[tuple[str, int], int]:
    """A task's life over the batches' partitions; the offsets it says are safe to commit."""
    assert JdbcSinkConnector().validate(config) == []
    task = JdbcSinkTask()
    task.start(config)
    try:
        partitions = sorted({(r.topic, r.partition) for batch in batches for r in batch})
        task.open(partitions)
        ends: dict[tuple[str, int], int] = {}
        for batch in batches:
            task.write(records_to_batch(batch))
            for r in batch:
                ends[(r.topic, r.partition)] = r.offset + 1
        return task.pre_commit(ends, closing=True)
    finally:
        task.stop()


def offsets(dsn: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute("SELECT topic, kafka_partition, next_offset FROM __connect_offsets "
                                  "ORDER BY topic, kafka_partition").fetchall()


def test_insert_creates_the_table_and_redelivery_writes_nothing_twice(postgres: RunningPostgres,
                                                                      database: tuple[str, str]) -> None:
    name, dsn = database
    config = sink_config(postgres, name, **{"auto.create": True, "batch.size": 4})
    first = records([(None, order(i)) for i in range(10)], partition=0)
    second = records([(None, order(i)) for i in range(10, 15)], partition=1)
    assert run_task(config, [first, second]) == {("orders", 0): 10, ("orders", 1): 5}
    assert run_task(config, [first + records([(None, order(20))], start=10), second]) == {
        ("orders", 0): 11, ("orders", 1): 5}
    rows = table_rows(dsn, "orders", COLUMNS)
    assert [r[0] for r in rows] == [*range(15), 20]
    assert rows[3] == (3, "customer 3", Decimal("0.03"), 3, False)
    assert offsets(dsn) == [("orders", 0, 11), ("orders", 1, 5)]


def test_upsert_and_delete_by_record_key(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    name, dsn = database
    config = sink_config(postgres, name, **{"auto.create": True, "insert.mode": "upsert", "pk.mode": "record_key",
                                            "pk.fields": "order_key", "delete.enabled": True})
    batch = records([(b"a", order(1)), (b"b", order(2)), (b"a", order(3, "again")), (b"b", None),
                     (b"c", order(4)), (b"c", None), (b"c", order(5, "back"))])
    run_task(config, [batch])
    run_task(config, [records([(b"d", order(6))], start=7)])
    assert table_rows(dsn, "orders", ["order_key", "id", "customer"], "order_key") == [
        ("a", 3, "again"), ("c", 5, "back"), ("d", 6, "customer 6")]


def test_update_changes_existing_rows_only(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    name, dsn = database
    with psycopg.connect(dsn) as connection:
        connection.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, customer TEXT, amount DECIMAL, "
                           "quantity INT, paid BOOLEAN)")
        connection.execute("INSERT INTO orders VALUES (1, 'old', 0, 0, false), (2, 'old', 0, 0, false)")
    config = sink_config(postgres, name, **{"insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id"})
    run_task(config, [records([(None, order(1, "new")), (None, order(3, "absent"))])])
    assert table_rows(dsn, "orders", ["id", "customer"]) == [(1, "new"), (2, "old")]


def test_kafka_coordinates_as_the_key_and_logical_types(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    name, dsn = database
    schema = struct(("at", Schema("int64", name="org.apache.kafka.connect.data.Timestamp")),
                    ("day", Schema("int32", name="org.apache.kafka.connect.data.Date")),
                    ("tags", Schema("array", items=Schema("string"))), ("raw", Schema("bytes")),
                    ("ratio", Schema("float")))
    value = envelope(schema, {"at": 86_400_000 + 3_600_000, "day": 2, "tags": ["x", "y"], "raw": b"\x00\xff",
                              "ratio": 0.5})
    config = sink_config(postgres, name, **{"auto.create": True, "pk.mode": "kafka", "db.timezone": "Europe/Paris"})
    run_task(config, [records([(None, value)], start=41)])
    assert table_rows(dsn, "orders", ["__connect_topic", "__connect_partition", "__connect_offset", "at", "day",
                                      "tags", "raw", "ratio"], "__connect_offset") == [
        ("orders", 0, 41, dt.datetime(1970, 1, 2, 2, 0), dt.date(1970, 1, 3), ["x", "y"], b"\x00\xff", 0.5)]
    with psycopg.connect(dsn) as connection:
        types = dict(connection.execute("SELECT column_name, data_type FROM information_schema.columns "
                                        "WHERE table_name = 'orders'").fetchall())
    assert types == {"__connect_topic": "text", "__connect_partition": "integer", "__connect_offset": "bigint",
                     "at": "timestamp without time zone", "day": "date", "tags": "ARRAY", "raw": "bytea",
                     "ratio": "real"}


PRIMITIVES = struct(("id", Schema("int64")), ("s", Schema("string", optional=True)), ("small", Schema("int8")),
                    ("f", Schema("float", optional=True)), ("d", Schema("double", optional=True)),
                    ("b", Schema("boolean", optional=True)))
TEXTS = ["", None, 'a"b,c', "x\ny\r\n", "\\.", "nul\x00here", "\u00e9\U0001f600", " lead ", "\\N", "NULL"]
FLOATS = [0.1, 3.4028234663852886e38, 1e-45, None, 1.5, -2.0]
DOUBLES = [0.1, 5e-324, 1e300, -2.5, None, 1.7976931348623157e308, 123456789.123]


def primitive_values(count: int, ids: int) -> list[bytes | None]:
    return [envelope(PRIMITIVES, {"id": (i % ids) * 1_000_003 - 9_223_372_036_854_775_807 // 2, "s": TEXTS[i % 10],
                                  "small": i % 256 - 128, "f": FLOATS[i % 6], "d": DOUBLES[i % 7], "b": [True, False, None][i % 3]})
            for i in range(count)]


@pytest.mark.parametrize("mode", ["insert", "upsert"])
def test_the_columnar_batch_writes_what_the_per_record_path_writes(postgres: RunningPostgres,
                                                                  database: tuple[str, str], mode: str) -> None:
    """A batch with one schema of primitives goes the columnar way (bulk.columnar: C++ read, CSV
    COPY); the same batch, its first envelope spaced so the fast read leaves it, the per-record way."""
    name, dsn = database
    values = primitive_values(70, 70 if mode == "insert" else 23)
    spaced = [values[0].replace(b'{"schema":', b'{ "schema":', 1), *values[1:]]  # type: ignore[union-attr]
    tables = {}
    for label, batch in (("fast", values), ("slow", spaced)):
        config = sink_config(postgres, name, **{"auto.create": True, "insert.mode": mode, "name": f"jdbc_{label}",
                                                "table.name.format": f"{label}_${{topic}}", "batch.size": 40,
                                                **({"pk.mode": "record_value", "pk.fields": "id"} if mode == "upsert" else {})})
        rows = pa.Table.from_batches([records_to_batch(records([(None, v) for v in batch]))])
        taken = columnar(rows, *(converter(config, part) for part in ("key", "value")), JdbcSinkSettings.parse(config),
                         f"{label}_orders")
        assert (taken is not None) == (label == "fast")
        assert run_task(config, [records([(None, v) for v in batch])]) == {("orders", 0): 70}
        tables[label] = table_rows(dsn, f"{label}_orders", ["id", "s", "small", "f", "d", "b"])
    assert tables["fast"] == tables["slow"]
    assert len(tables["fast"]) == (70 if mode == "insert" else 23)
    if mode == "upsert":  # each id's last record: i % 23 == k for the largest i below 70
        assert sorted(r[2] for r in tables["fast"]) == sorted(max(range(k, 70, 23)) % 256 - 128 for k in range(23))
    assert {r[1] for r in tables["fast"]} == {None if t is None else t.replace("\x00", "") for t in TEXTS}


HOSTILE = 'x"; DROP TABLE victim; --'


def test_hostile_table_and_column_names_are_quoted(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    name, dsn = database
    with psycopg.connect(dsn) as connection:
        connection.execute("CREATE TABLE victim (id INT)")
    schema = struct(("id", Schema("int64")), (HOSTILE, Schema("string", optional=True)))
    config = sink_config(postgres, name, **{"auto.create": True, "table.name.format": "t_${topic}",
                                            "topics": "orders", "insert.mode": "upsert", "pk.mode": "record_value",
                                            "pk.fields": "id"})
    run_task(config, [records([(None, envelope(schema, {"id": 1, HOSTILE: "'); DROP TABLE victim; --"}))],
                              topic="orders")])
    config["table.name.format"] = HOSTILE
    config["offsets.table.name"] = "offsets 100%s %(x)s"  # psycopg's placeholders, in a name
    run_task(config, [records([(None, envelope(schema, {"id": 2, HOSTILE: "two"}))], start=1, topic="orders")])
    assert table_rows(dsn, "t_orders", ["id", HOSTILE]) == [(1, "'); DROP TABLE victim; --")]
    assert table_rows(dsn, HOSTILE, ["id", HOSTILE]) == [(2, "two")]
    assert table_rows(dsn, "victim", ["id"]) == []  # still there
    assert table_rows(dsn, "offsets 100%s %(x)s", ["topic", "next_offset"], "topic") == [("orders", 2)]
    assert JdbcSinkConnector().alter_offsets(config, {("orders", 0): None}) is True
    assert table_rows(dsn, "offsets 100%s %(x)s", ["topic"], "topic") == []


def test_schemaless_values_go_into_an_existing_table(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    name, dsn = database
    config = sink_config(postgres, name, **{"value.converter.schemas.enable": False})
    batch = records([(None, b'{"id": 1, "customer": "one", "amount": 1.5}'), (None, b'{"id": 2, "paid": true}')])
    with pytest.raises(ConnectorError, match="does not exist: records without schemas"):
        run_task(config, [batch])
    with psycopg.connect(dsn) as connection:
        connection.execute("CREATE TABLE orders (id BIGINT, customer TEXT, amount DECIMAL, quantity INT, paid BOOLEAN)")
    run_task(config, [batch])
    assert table_rows(dsn, "orders", COLUMNS) == [(1, "one", Decimal("1.5"), None, None), (2, None, None, None, True)]
    assert "auto.create" in {p.key for p in JdbcSinkConnector().validate({**config, "auto.create": "true"})}


def failure(config: dict[str, str], batch: list[SinkRecord]) -> str:
    with pytest.raises(ConnectorError) as raised:
        run_task(config, [batch])
    message = str(raised.value)
    assert "\n" not in message and config["connection.password"] not in message
    return message


def test_failures_name_the_place_in_one_line_and_commit_nothing(postgres: RunningPostgres,
                                                                  database: tuple[str, str]) -> None:
    name, dsn = database
    batch = records([(None, order(1)), (None, order(2))])
    config = sink_config(postgres, name)
    place = f"{postgres.host}:{postgres.port}/{name}"
    assert place in failure({**config, "connection.password": "not-the-password"}, batch)
    unreachable = sink_config(postgres, name) | {"connection.url": f"jdbc:postgresql://127.0.0.1:1/{name}"}
    assert f"127.0.0.1:1/{name}" in failure(unreachable, batch)
    assert f"table orders in {place} does not exist and auto.create is false" in failure(config, batch)
    with psycopg.connect(dsn) as connection:
        connection.execute("CREATE TABLE orders (id BIGINT, customer VARCHAR(3), amount DECIMAL, quantity INT, "
                           "paid BOOLEAN)")
    message = failure(config, batch)
    assert "table orders, column customer" in message and place in message, message
    assert table_rows(dsn, "orders", ["id"]) == [] and offsets(dsn) == []


def test_an_offsets_request_moves_the_offsets_table(postgres: RunningPostgres, database: tuple[str, str]) -> None:
    """KIP-875: the tasks resume from the offsets table, so an alter or reset must move it too."""
    name, dsn = database
    config = sink_config(postgres, name, **{"auto.create": True})
    run_task(config, [records([(None, order(i)) for i in range(3)]) + records([(None, order(9))], partition=1)])
    assert offsets(dsn) == [("orders", 0, 3), ("orders", 1, 1)]
    assert JdbcSinkConnector().alter_offsets(config, {("orders", 0): 1, ("orders", 1): None}) is True
    assert offsets(dsn) == [("orders", 0, 1)]
    task = JdbcSinkTask()
    task.start(config)
    try:
        assert task.open([("orders", 0), ("orders", 1)]) == {("orders", 0): 1}
    finally:
        task.stop()
