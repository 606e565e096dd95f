"""jdbc-sink's pure parts: Confluent's keys and their checks, the connection URL, the type
mapping of PostgreSqlDatabaseDialect, the SQL text (identifiers always quoted), the columns a
batch's schemas give, and the folding of a partition's records into rows and deletes."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from reconciler.cli.main import main
from reconciler.connectors.api import ConnectorError
from reconciler.connectors.converters.schema import Schema, decimal, struct
from reconciler.connectors.jdbc import sql as q
from reconciler.connectors.jdbc.config import JdbcSinkSettings, parse_url
from reconciler.connectors.jdbc.connector import JdbcSinkConnector
from reconciler.connectors.jdbc.rows import Record, layout, plan, to_pg

JSON = "org.apache.kafka.connect.json.JsonConverter"
BASE = {"name": "sink", "topics": "orders", "connection.url": "jdbc:postgresql://db.example:5433/shop",
        "connection.user": "app", "connection.password": "s3cret", "value.converter": JSON}
UTC = dt.UTC


def settings(**extra: str) -> JdbcSinkSettings:
    return JdbcSinkSettings.parse({**BASE, **extra})


def problems(**extra: str) -> dict[str, str]:
    return {p.key: p.message for p in JdbcSinkConnector().validate({**BASE, **extra})}


def text(statement: sql.Composable) -> str:
    return statement.as_string(None)


# --- config ---------------------------------------------------------------------------------


def test_confluent_defaults() -> None:
    s = settings()
    assert (s.insert_mode, s.pk_mode, s.batch_size, s.table_format, s.timezone) == ("insert", "none", 3000, "${topic}", "UTC")
    assert not (s.auto_create or s.auto_evolve or s.delete_enabled) and s.quote
    assert s.offsets_table == "__connect_offsets" and s.table_for("orders") == "orders"


def test_the_checks_confluent_makes_at_start() -> None:
    assert problems(**{"delete.enabled": "true"})["delete.enabled"].startswith("Primary key mode must be 'record_key'")
    assert "needs a primary key" in problems(**{"insert.mode": "upsert"})["pk.mode"]
    assert "exactly 3" in problems(**{"pk.mode": "kafka", "pk.fields": "a,b"})["pk.fields"]
    assert "must be one of" in problems(**{"insert.mode": "merge"})["insert.mode"]
    assert "time zone" in problems(**{"db.timezone": "Mars/Olympus"})["db.timezone"]
    assert "PostgreSqlDatabaseDialect" in problems(**{"dialect.name": "MySqlDatabaseDialect"})["dialect.name"]
    assert "typed values" in problems(**{"value.converter": ""})["value.converter"]
    assert "cannot create a table" in problems(**{"value.converter.schemas.enable": "false",
                                                  "auto.create": "true"})["auto.create"]
    assert problems(**{"insert.mode": "UPSERT", "pk.mode": "RECORD_VALUE"}) == {}  # Java's enums take both cases


def test_unknown_keys_are_known_to_the_config_def() -> None:
    assert JdbcSinkConnector.config_def is not None
    assert JdbcSinkConnector.config_def.unknown(["batch.size", "max.retries", "pk.feilds"]) == ["pk.feilds"]


@pytest.mark.parametrize(("url", "expected"), [
    ("jdbc:postgresql://db.example:5433/shop", ("db.example", 5433, "shop", "app", "s3cret")),
    ("jdbc:postgresql://db.example/shop?user=u&password=p", ("db.example", 5432, "shop", "app", "s3cret")),
    ("postgresql://u:p%40ss@db.example:6543/shop", ("db.example", 6543, "shop", "app", "s3cret")),
])
def test_connection_urls(url: str, expected: tuple[Any, ...]) -> None:
    target, why = parse_url(url, "app", "s3cret")
    assert why is None and target is not None
    assert (target.host, target.port, target.database, target.user, target.password) == expected
    assert "s3cret" not in target.describe() and "s3cret" not in repr(target)


def test_url_credentials_when_the_keys_are_unset() -> None:
    target, _ = parse_url("postgresql://u:p%40ss@db/shop?sslmode=require&currentSchema=sales", None, None)
    assert target is not None and (target.user, target.password) == ("u", "p@ss")
    assert target.connect_args()["sslmode"] == "require"
    assert target.connect_args()["options"] == "-c search_path=sales"


@pytest.mark.parametrize("url", ["jdbc:mysql://db/shop", "jdbc:postgresql://db", "jdbc:postgresql://db/x?foo=1",
                                 "jdbc:postgresql://db:port/x"])
def test_bad_urls_are_config_problems(url: str) -> None:
    assert "connection.url" in problems(**{"connection.url": url})


# --- types and SQL --------------------------------------------------------------------------


@pytest.mark.parametrize(("schema", "expected"), [
    (Schema("int8"), "SMALLINT"), (Schema("int16"), "SMALLINT"), (Schema("int32"), "INT"),
    (Schema("int64"), "BIGINT"), (Schema("float"), "REAL"), (Schema("double"), "DOUBLE PRECISION"),
    (Schema("boolean"), "BOOLEAN"), (Schema("string"), "TEXT"), (Schema("bytes"), "BYTEA"),
    (decimal(2), "DECIMAL"), (Schema("int32", name="org.apache.kafka.connect.data.Date"), "DATE"),
    (Schema("int32", name="org.apache.kafka.connect.data.Time"), "TIME"),
    (Schema("int64", name="org.apache.kafka.connect.data.Timestamp"), "TIMESTAMP"),
    (Schema("array", items=Schema("int32")), "INT[]"),
    (Schema("int64", name="com.example.Millis"), "BIGINT"),  # another name: its underlying type
    # Debezium's time types, as Debezium's JDBC sink creates them
    (Schema("int64", name="io.debezium.time.MicroTimestamp"), "TIMESTAMP"),
    (Schema("int32", name="io.debezium.time.Date"), "DATE"),
    (Schema("int64", name="io.debezium.time.MicroTime"), "TIME"),
    (Schema("string", name="io.debezium.time.ZonedTimestamp"), "TIMESTAMPTZ"),
    (Schema("string", name="io.debezium.data.Uuid"), "UUID"),
])
def test_types_as_confluents_postgresql_dialect(schema: Schema, expected: str) -> None:
    assert q.pg_type(schema) == expected


def test_structs_and_maps_have_no_column_type() -> None:
    for schema in (struct(("a", Schema("int32"))), Schema("map", keys=Schema("string"), items=Schema("string"))):
        with pytest.raises(q.UnsupportedType):
            q.pg_type(schema)


HOSTILE = 'x"; DROP TABLE t; --'


def test_identifiers_are_always_quoted() -> None:
    table = q.TableName.parse(HOSTILE, quote=True)
    statement = text(q.create_table(table, [q.Column("id", "BIGINT", False), q.Column(HOSTILE, "TEXT")], ["id"]))
    assert statement == ('CREATE TABLE IF NOT EXISTS "x""; DROP TABLE t; --" ("id" BIGINT NOT NULL, '
                         '"x""; DROP TABLE t; --" TEXT, PRIMARY KEY ("id"))')
    assert text(q.copy_into(table.ident(), ["id", HOSTILE])) == 'COPY "x""; DROP TABLE t; --" ("id", "x""; DROP TABLE t; --") FROM STDIN'


def test_never_quoting_lower_cases_as_postgresql_folds_but_still_quotes() -> None:
    assert text(q.TableName.parse("Sales.Orders", quote=False).ident()) == '"sales"."orders"'
    assert text(q.TableName.parse("Sales.Orders", quote=True).ident()) == '"Sales"."Orders"'
    assert text(q.TableName.parse("db.sales.orders", quote=True).ident()) == '"sales"."orders"'


def test_upsert_update_and_delete_statements() -> None:
    table = q.TableName(None, "orders")
    assert text(q.upsert_from(table, ["id"], ["a", "b"])) == (
        'INSERT INTO "orders" ("id", "a", "b") SELECT "id", "a", "b" FROM "__connect_batch" ON CONFLICT ("id") '
        'DO UPDATE SET "a" = EXCLUDED."a", "b" = EXCLUDED."b"')
    assert text(q.upsert_from(table, ["id"], [])).endswith('ON CONFLICT ("id") DO NOTHING')
    assert text(q.update_from(table, ["id", "k"], ["a"])) == (
        'UPDATE "orders" AS "__t" SET "a" = "__connect_batch"."a" FROM "__connect_batch" '
        'WHERE "__t"."id" = "__connect_batch"."id" AND "__t"."k" = "__connect_batch"."k"')
    assert text(q.delete_using(table, ["id"])) == (
        'DELETE FROM "orders" AS "__t" USING "__connect_deletes" WHERE "__t"."id" = "__connect_deletes"."id"')


# --- columns and rows -----------------------------------------------------------------------

VALUE = struct(("id", Schema("int64")), ("name", Schema("string", optional=True)), ("note", Schema("string", True)))


def test_columns_per_pk_mode() -> None:
    kafka = layout(settings(**{"pk.mode": "kafka"}), "t", None, VALUE)
    assert kafka.keys == ("__connect_topic", "__connect_partition", "__connect_offset")
    assert [c.type for c in kafka.columns[:3]] == ["TEXT", "INT", "BIGINT"]
    keyed = layout(settings(**{"pk.mode": "record_key", "pk.fields": "k"}), "t", Schema("string", True), VALUE)
    assert keyed.keys == ("k",) and keyed.names == ["k", "id", "name", "note"]
    valued = layout(settings(**{"pk.mode": "record_value", "pk.fields": "id", "fields.whitelist": "name"}), "t", None, VALUE)
    assert valued.names == ["id", "name"] and valued.keys == ("id",)
    assert [c.nullable for c in valued.columns] == [False, True]


def test_columns_confluent_refuses() -> None:
    with pytest.raises(ConnectorError, match="exactly one"):
        layout(settings(**{"pk.mode": "record_key"}), "t", Schema("string"), VALUE)
    with pytest.raises(ConnectorError, match="lacks"):
        layout(settings(**{"pk.mode": "record_value", "pk.fields": "nope"}), "t", None, VALUE)
    with pytest.raises(ConnectorError, match="Struct values"):
        layout(settings(), "t", None, Schema("string"))
    with pytest.raises(ConnectorError, match="column nested"):
        layout(settings(), "t", None, struct(("nested", struct(("a", Schema("int32"))))))


def test_values_for_postgresql() -> None:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    timestamp = Schema("int64", name="org.apache.kafka.connect.data.Timestamp")
    assert to_pg(timestamp, 0, paris) == dt.datetime(1970, 1, 1, 1, 0)
    assert to_pg(Schema("int32", name="org.apache.kafka.connect.data.Date"), 365, UTC) == dt.date(1971, 1, 1)
    assert to_pg(Schema("int32", name="org.apache.kafka.connect.data.Time"), 3_600_000, UTC) == dt.time(1, 0)
    assert to_pg(Schema("string"), "a\x00b", UTC) == "ab"
    assert to_pg(decimal(2), Decimal("1.50"), UTC) == Decimal("1.50")
    assert to_pg(None, {"a": [1]}, UTC) == '{"a": [1]}'


def records(*pairs: tuple[str, dict[str, Any] | None]) -> list[Record]:
    return [Record("orders", 0, i, key, value) for i, (key, value) in enumerate(pairs)]


def row(i: int) -> dict[str, Any]:
    return {"id": i, "name": f"n{i}", "note": None}


def test_upsert_keeps_each_keys_last_value_after_its_last_tombstone() -> None:
    s = settings(**{"insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "k", "delete.enabled": "true"})
    lay = layout(s, "t", Schema("string", True), VALUE)
    planned = plan(records(("a", row(1)), ("b", row(2)), ("a", row(3)), ("b", None), ("c", None), ("c", row(4))),
                   lay, s, UTC)
    assert planned.puts == [("a", 3, "n3", None), ("c", 4, "n4", None)]
    assert planned.deletes == [("b",), ("c",)]


def test_insert_keeps_every_record_and_refuses_tombstones_without_deletes() -> None:
    s = settings(**{"pk.mode": "kafka"})
    lay = layout(s, "t", None, VALUE)
    assert len(plan(records(("a", row(1)), ("a", row(1))), lay, s, UTC).puts) == 2
    with pytest.raises(ConnectorError, match="delete.enabled=false"):
        plan(records(("a", None)), lay, s, UTC)


MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: orders-db
spec:
  class: reconciler.connectors.jdbc.connector:JdbcSinkConnector
  config:
    topics: orders
    connection.url: jdbc:postgresql://db:5432/shop
    value.converter: org.apache.kafka.connect.json.JsonConverter
    pk.feilds: id
    insert.mode: merge
"""


def test_validate_reports_unknown_and_malformed_keys_at_their_position(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "orders-db.yaml"
    path.write_text(MANIFEST)
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert f'{path}:11:5: spec.config["pk.feilds"]: unknown key' in err and "did you mean `pk.fields`?" in err
    assert f"{path}:12:18: spec.config[\"insert.mode\"]: must be one of insert, upsert, update; got 'merge'" in err
