"""jdbc-source's pure parts: Confluent's keys and their checks, the offsets' bytes (against
what Confluent's Java writes: `OffsetProtocols`, `TimestampIncrementingOffset.toMap`, both
HashMaps serialised by JsonConverter in their iteration order), the task configs' table lists,
the SELECTs (identifiers always quoted), and the column types as Connect fields."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from psycopg import sql

from reconciler.cli.main import main
from reconciler.connectors.api import OffsetsRefused, partition_key
from reconciler.connectors.converters.encode import encode
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.jdbc import source_sql as q
from reconciler.connectors.jdbc.source import JdbcSourceConnector
from reconciler.connectors.jdbc.source_config import JdbcSourceSettings
from reconciler.connectors.jdbc.source_offsets import Position, lookup_keys, table_partition
from reconciler.connectors.jdbc.source_tables import TableRef, group_tables, parse_tables, render_tables, select_tables
from reconciler.connectors.jdbc.source_records import encode_rows
from reconciler.connectors.jdbc.source_types import ColumnInfo, row_shape
from reconciler.kafka.formats.records import encode_offset_key, encode_offset_value

BASE = {"name": "src", "connection.url": "jdbc:postgresql://db.example:5433/shop", "connection.user": "app",
        "connection.password": "s3cret", "mode": "incrementing", "incrementing.column.name": "id",
        "table.whitelist": "orders", "topic.prefix": "pg-"}
UTC = dt.UTC


def problems(**extra: str) -> dict[str, str]:
    return {p.key: p.message for p in JdbcSourceConnector().validate({**BASE, **extra})}


def java_hash_map_order(keys: list[str], capacity: int) -> list[str]:
    """The iteration order of a java.util.HashMap of `capacity` buckets filled with `keys` in
    order: by bucket (`(h ^ h >>> 16) & (n - 1)` of `String.hashCode`), then insertion."""
    def bucket(key: str) -> int:
        h = 0
        for char in key:
            h = (31 * h + ord(char)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (capacity - 1)
    return sorted(keys, key=lambda k: (bucket(k), keys.index(k)))


# --- offsets: what Confluent's source writes ------------------------------------------------


def test_partition_bytes_are_confluents() -> None:
    # OffsetProtocols.sourcePartitionForProtocolV1: new HashMap<>() (16 buckets), "table" put first.
    assert java_hash_map_order(["table", "protocol"], 16) == ["protocol", "table"]
    partition = table_partition(TableRef("public", "orders"))
    assert encode_offset_key("src", partition) == b'["src",{"protocol":"1","table":"public.orders"}]'


@pytest.mark.parametrize(("position", "expected"), [
    (Position(incrementing=42), b'{"incrementing":42}'),
    (Position.at(dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), None),
     b'{"timestamp_nanos":678901000,"timestamp":1704164645678}'),
    (Position.at(dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), 42),
     b'{"timestamp_nanos":678901000,"incrementing":42,"timestamp":1704164645678}'),
    # java.sql.Timestamp before the epoch: getTime() -500, getNanos() 500000000
    (Position.at(dt.datetime(1969, 12, 31, 23, 59, 59, 500000, tzinfo=UTC), None),
     b'{"timestamp_nanos":500000000,"timestamp":-500}'),
])
def test_offset_bytes_are_confluents(position: Position, expected: bytes) -> None:
    # TimestampIncrementingOffset.toMap: new HashMap<>(3) (4 buckets), put incrementing,
    # timestamp, timestamp_nanos in that order.
    assert java_hash_map_order(["incrementing", "timestamp", "timestamp_nanos"], 4) == [
        "timestamp_nanos", "incrementing", "timestamp"]
    assert encode_offset_value(position.to_offset()) == expected
    assert Position.from_offset(position.to_offset()) == position


def test_offsets_written_by_java_are_read_back() -> None:
    # timestamp.initial's map (timestamp only) and a Java offset with nanoseconds PostgreSQL lacks
    assert Position.from_offset({"timestamp": 1500}).timestamp == dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=UTC)
    read = Position.from_offset({"timestamp_nanos": 123456789, "timestamp": 1123})
    assert read.nanos == 123456789 and read.to_offset() == {"timestamp_nanos": 123456789, "timestamp": 1123}


def test_offsets_are_looked_up_under_every_protocol_newest_first() -> None:
    keys = lookup_keys(TableRef("public", "orders"), "shop")
    assert keys == [partition_key({"protocol": "1", "table": "public.orders"}),
                    partition_key({"protocol": "1", "table": "shop.public.orders"}),
                    partition_key({"table": "orders"})]
    assert lookup_keys(None, "shop") == [partition_key({"query": "query"})]


def test_alter_requests_are_checked_against_confluents_shapes() -> None:
    connector, config = JdbcSourceConnector(), dict(BASE)
    good = partition_key({"protocol": "1", "table": "public.orders"})
    connector.validate_offsets(config, {good: {"incrementing": 7}, partition_key({"table": "x"}): None})
    for partition, offset, words in [
        (good, {"incrementing": "7"}, "Long value"),
        (good, {"timestamp": 5}, "incrementing is missing"),
        (good, {"incrementing": 7, "position": 3}, "only the keys"),
        (partition_key({"protocol": "2", "table": "public.orders"}), {"incrementing": 7}, "protocol"),
        (partition_key({"query": "query"}), {"incrementing": 7}, "protocol"),
    ]:
        with pytest.raises(OffsetsRefused, match=words):
            connector.validate_offsets(config, {partition: offset})
    with pytest.raises(OffsetsRefused, match="keeps no offset"):
        connector.validate_offsets({**config, "mode": "bulk"}, {good: {"incrementing": 7}})
    with pytest.raises(OffsetsRefused, match="timestamp_nanos must be"):
        connector.validate_offsets({**config, "mode": "timestamp", "timestamp.column.name": "t"},
                                   {good: {"timestamp": 5, "timestamp_nanos": 10**9}})


# --- config ---------------------------------------------------------------------------------


def test_confluent_defaults() -> None:
    s = JdbcSourceSettings.parse(BASE)
    assert (s.batch_max_rows, s.delay_ms, s.timezone, s.numeric_mapping, s.validate_non_null) == (
        1000, 0, "UTC", "none", True)
    assert s.table_types == ("TABLE",) and s.topic_prefix == "pg-"


def test_the_checks_confluent_makes() -> None:
    assert problems(mode="")["mode"] == "is required"
    assert "must be one of" in problems(mode="changes")["mode"]
    assert "needs a timestamp column" in problems(mode="timestamp")["timestamp.column.name"]
    assert "Cannot mix legacy" in problems(**{"table.include.list": "public\\..*"})["table.include.list"]
    assert "without table.include.list" in problems(**{"table.whitelist": "", "table.exclude.list": "x"})[
        "table.exclude.list"]
    assert "table filtering" in problems(query="SELECT * FROM orders")["query"]
    assert "must be provided" in problems(**{"table.whitelist": "", "query": "SELECT 1 AS id",
                                             "incrementing.column.name": ""})["incrementing.column.name"]
    assert "only connect_logical" in problems(**{"timestamp.granularity": "nanos_long"})["timestamp.granularity"]
    assert problems(**{"poll.interval.ms": "100", "numeric.mapping": "BEST_FIT", "table.types": "TABLE,VIEW"}) == {}


def test_timestamp_initial_now_is_refused_rather_than_read_from_the_start() -> None:
    timestamp = {"mode": "timestamp", "timestamp.column.name": "updated_at", "incrementing.column.name": ""}
    assert "is not supported" in problems(**timestamp, **{"timestamp.initial": "-1"})["timestamp.initial"]
    assert problems(**timestamp, **{"timestamp.initial": "1700000000000"}) == {}


MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: orders-src
spec:
  class: jdbc-source
  config:
    connection.url: jdbc:postgresql://db:5432/shop
    mode: incrementing
    table.whitelist: orders
    incrementing.colum.name: id
    batch.max.rows: many
"""


def test_validate_reports_unknown_and_malformed_keys_at_their_position(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "orders-src.yaml"
    path.write_text(MANIFEST)
    assert main(["validate", str(path)]) != 0
    err = capsys.readouterr().err
    assert f'{path}:11:5: spec.config["incrementing.colum.name"]: unknown key' in err
    assert f'{path}:12:21: spec.config["batch.max.rows"]' in err


# --- tables and tasks -----------------------------------------------------------------------


def test_tables_selected_as_confluents_table_monitor() -> None:
    tables = [TableRef("public", "orders"), TableRef("public", "items"), TableRef("audit", "log")]
    settings = JdbcSourceSettings.parse({**BASE, "table.whitelist": 'orders,"audit"."log"'})
    assert select_tables(tables, settings) == [TableRef("public", "orders"), TableRef("audit", "log")]
    blacklist = JdbcSourceSettings.parse({**BASE, "table.whitelist": "", "table.blacklist": "public.items"})
    assert select_tables(tables, blacklist) == [TableRef("public", "orders"), TableRef("audit", "log")]
    include = JdbcSourceSettings.parse({**BASE, "table.whitelist": "", "incrementing.column.name": "",
                                        "table.include.list": "public\\..*", "table.exclude.list": ".*items"})
    assert select_tables(tables, include) == [TableRef("public", "orders")]
    missing = JdbcSourceSettings.parse({**BASE, "table.whitelist": "orders,nope"})
    with pytest.raises(Exception, match="no table nope in db.example:5433/shop"):
        select_tables(tables, missing)
    with pytest.raises(Exception, match="duplicate unqualified table names"):
        select_tables([*tables, TableRef("audit", "orders")], JdbcSourceSettings.parse({**BASE, "table.whitelist": ""}))


def test_tables_spread_over_tasks_as_group_partitions_and_survive_hostile_names() -> None:
    assert group_tables(list("abcde"), 3) == [["a", "b"], ["c", "d"], ["e"]]
    assert group_tables(list("ab"), 5) == [["a"], ["b"]]
    tables = [TableRef("public", 'we"ird,name'), TableRef("s.x", "t")]
    assert render_tables(tables) == '"public"."we""ird,name","s.x"."t"'
    assert parse_tables(render_tables(tables)) == tables


# --- SQL ------------------------------------------------------------------------------------


def text(statement: sql.Composable) -> str:
    return statement.as_string(None)


def test_the_selects_are_confluents_criteria_with_every_name_quoted() -> None:
    base = q.source(TableRef("public", 'or"ders'), "")
    criteria = q.Criteria("id", ("updated", "created"))
    assert text(q.incrementing(base, criteria, "")).startswith(
        'SELECT * FROM (SELECT * FROM "public"."or""ders") AS "__connect_rows" WHERE "id" > %s ORDER BY "id" ASC LIMIT %s')
    both = text(q.timestamp_incrementing(base, criteria, ""))
    assert ('WHERE COALESCE("updated","created") < %s AND ((COALESCE("updated","created") = %s AND "id" > %s) '
            'OR COALESCE("updated","created") > %s) ORDER BY COALESCE("updated","created"),"id" ASC LIMIT %s') in both
    ts = text(q.timestamp(base, q.Criteria(None, ("updated",)), ""))
    assert '"updated" > %s AND "updated" < %s AND "updated" <= COALESCE((SELECT "updated" FROM' in ts
    assert ts.endswith('ORDER BY "updated" ASC ')


# --- types ----------------------------------------------------------------------------------


def test_columns_become_connect_fields_as_confluents_dialect_maps_them() -> None:
    columns = [ColumnInfo("id", 20, not_null=True), ColumnInfo("amount", 1700, 10, 2), ColumnInfo("r", 700),
               ColumnInfo("at", 1114), ColumnInfo("d", 1082), ColumnInfo("doc", 3802), ColumnInfo("tags", 1009)]
    shape = row_shape(columns, "orders", "none", dt.UTC)
    assert shape.skipped == ("tags",)
    row = (7, Decimal("1.5"), 1.1, dt.datetime(2024, 1, 1, 0, 0, 1), dt.date(1970, 1, 3), '{"a": 1}', ["x"])
    value = encode(Converter("json", schemas_enable=True), shape.schema, shape.value(row))
    for converter in (Converter("json", schemas_enable=True), Converter("json", schemas_enable=False),
                      Converter("json", decimal_format="NUMERIC")):
        assert encode_rows(converter, shape, [row]) == [encode(converter, shape.schema, shape.value(row))]
    assert value == (
        b'{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},'
        b'{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
        b'"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"amount"},'
        b'{"type":"float","optional":true,"field":"r"},'
        b'{"type":"int64","optional":true,"name":"org.apache.kafka.connect.data.Timestamp","version":1,"field":"at"},'
        b'{"type":"int32","optional":true,"name":"org.apache.kafka.connect.data.Date","version":1,"field":"d"},'
        b'{"type":"string","optional":true,"field":"doc"}],"optional":false,"name":"orders"},'
        b'"payload":{"id":7,"amount":"AJY=","r":1.1,"at":1704067201000,"d":2,"doc":"{\\"a\\": 1}"}}')
    best_fit = row_shape([ColumnInfo("n", 1700, 5, 0), ColumnInfo("x", 1700, 5, 2)], None, "best_fit", dt.UTC)
    assert [(f.schema.type, f.schema.name) for f in best_fit.schema.fields] == [("int32", None), ("double", None)]
