"""iceberg-sink's pure parts: Apache Iceberg's sink's keys and checks, the catalog properties
mapped to pyiceberg's, the snapshot summary's offsets, routing, partition fields, and a data
file's metadata through JSON."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from reconciler.connectors.api import ConnectorError
from reconciler.connectors.iceberg import offsets
from reconciler.connectors.iceberg.catalog import (
    catalog_properties,
    close_catalog,
    describe,
    open_catalog,
    sqlalchemy_url,
)
from reconciler.connectors.iceberg.config import IcebergSinkSettings
from reconciler.connectors.iceberg.connector import IcebergSinkConnector
from reconciler.connectors.iceberg.routing import route
from reconciler.connectors.iceberg.storage import FILE_IO
from reconciler.connectors.iceberg.tables import iceberg_arrow, partition_field

CATALOG = {"iceberg.catalog.type": "jdbc", "iceberg.catalog.uri": "jdbc:sqlite:/tmp/c.db",
           "iceberg.catalog.warehouse": "file:///tmp/wh"}


def settings(**config: str) -> IcebergSinkSettings:
    return IcebergSinkSettings.parse({"name": "ice", **CATALOG, **config})


def problems(**config: str) -> list[str]:
    return [p.render() for p in IcebergSinkConnector().validate({"name": "ice", **CATALOG, **config})]


def test_javas_defaults_and_the_coordinators_keys_are_accepted() -> None:
    config = {"iceberg.tables": "db.events", "iceberg.control.topic": "ctl", "iceberg.control.commit.interval-ms": "1000",
              "iceberg.kafka.bootstrap.servers": "x:9092", "iceberg.hadoop.fs.s3a.endpoint": "http://x"}
    assert problems(**config) == []
    read = settings(**config)
    assert (read.auto_create, read.evolve_schema, read.dynamic, read.catalog_name) == (False, False, False, "iceberg")
    assert not IcebergSinkConnector.config_def.unknown(config)  # type: ignore[union-attr]


@pytest.mark.parametrize(("config", "expected"), [
    ({}, "`iceberg.tables`: must name the destination table(s)"),
    ({"iceberg.tables": "db.a", "iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "t"},
     "`iceberg.tables`: cannot be set with iceberg.tables.dynamic-enabled=true"),
    ({"iceberg.tables.dynamic-enabled": "true"}, "`iceberg.tables.route-field`: is required with dynamic tables"),
    ({"iceberg.tables": "events"}, "`iceberg.tables`: 'events' needs a namespace (namespace.table)"),
    ({"iceberg.tables": "db.a", "iceberg.tables.route-field": "kind"},
     "`iceberg.table.db.a.route-regex`: is required: iceberg.tables.route-field routes by each table's regex"),
    ({"iceberg.tables": "db.a", "iceberg.tables.auto-create-enabled": "yes"},
     "`iceberg.tables.auto-create-enabled`: must be"),
    ({"iceberg.tables": "db.a", "iceberg.catalog.type": "hadoop"}, "`iceberg.catalog.type`: type hadoop is not supported"),
    ({"iceberg.tables": "db.a", "iceberg.catalog.uri": "jdbc:mysql://h/db"},
     "`iceberg.catalog.uri`: a JDBC catalog here is jdbc:sqlite:/path or jdbc:postgresql://host:port/db"),
    ({"iceberg.tables": "db.a", "iceberg.catalog.warehouse": "hdfs://nn:8020/wh"},
     "`iceberg.catalog.warehouse`: hdfs:// is not supported: pyiceberg reaches HDFS only through pyarrow's libhdfs"),
])
def test_bad_configs_name_their_key(config: dict[str, str], expected: str) -> None:
    found = problems(**config)
    assert any(p.startswith(expected) for p in found), found


def test_no_catalog_properties_is_refused() -> None:
    found = [p.render() for p in IcebergSinkConnector().validate({"name": "ice", "iceberg.tables": "db.a"})]
    assert found and found[0].startswith("`iceberg.catalog.*`: must be set")


def test_table_configs_take_their_own_keys_else_the_defaults() -> None:
    read = settings(**{"iceberg.tables": "db.a,db.b", "iceberg.tables.default-partition-by": "day(ts), bucket(id, 8)",
                       "iceberg.table.db.b.partition-by": "kind", "iceberg.tables.default-id-columns": "id",
                       "iceberg.table.db.a.commit-branch": "audit"})
    a, b = read.table_config("db.a"), read.table_config("db.b")
    assert a.partition_by == ("day(ts)", "bucket(id, 8)") and b.partition_by == ("kind",)
    assert a.id_columns == b.id_columns == ("id",)
    assert (a.commit_branch, b.commit_branch) == ("audit", None)


def test_partition_fields_are_javas_transforms_and_names() -> None:
    assert partition_field("kind") == ("kind", "identity", "kind")
    assert partition_field("days(ts)") == ("ts", "day", "ts_day")
    assert partition_field("hours(ts)") == ("ts", "hour", "ts_hour")
    assert partition_field("bucket(id, 8)") == ("id", "bucket[8]", "id_bucket")
    assert partition_field("truncate(name, 3)") == ("name", "truncate[3]", "name_trunc")
    with pytest.raises(ConnectorError, match="unsupported transform void"):
        partition_field("void(x)")


def test_jdbc_catalogs_become_sqlalchemy_urls_and_the_password_stays_out_of_descriptions() -> None:
    assert sqlalchemy_url("jdbc:sqlite:/var/c.db", None, None) == ("sqlite:////var/c.db", None)
    assert sqlalchemy_url("jdbc:sqlite:file:/var/c.db", None, None) == ("sqlite:////var/c.db", None)
    assert sqlalchemy_url("jdbc:postgresql://db:5433/cat?sslmode=require", "u", "p@ss") == (
        "postgresql+psycopg://u:p%40ss@db:5433/cat?sslmode=require", None)
    assert sqlalchemy_url("jdbc:postgresql://db/cat?user=u&password=pw", None, None)[0] == \
        "postgresql+psycopg://u:pw@db/cat"
    props, problem = catalog_properties({"catalog-impl": "org.apache.iceberg.jdbc.JdbcCatalog", "uri": "jdbc:sqlite:/c",
                                         "jdbc.user": "u", "client.region": "eu-west-1", "io-impl": "S3FileIO"})
    assert problem is None and props == {"type": "sql", "uri": "sqlite:////c", "client.region": "eu-west-1",
                                         "s3.region": "eu-west-1", "py-io-impl": FILE_IO}
    assert describe({"uri": "jdbc:postgresql://db:5433/cat?password=secret"}) == "catalog at jdbc:postgresql://db:5433/cat"
    assert catalog_properties({"type": "rest", "uri": "http://r"})[0] == {"type": "rest", "uri": "http://r",
                                                                        "py-io-impl": FILE_IO}


def test_a_relative_sqlite_catalog_in_a_missing_directory_is_opened(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    catalog = open_catalog("c", {"type": "jdbc", "uri": "jdbc:sqlite:lake/catalog.db", "warehouse": "lake/wh"})
    try:
        catalog.create_namespace("shop")
        assert (tmp_path / "lake" / "catalog.db").is_file()
    finally:
        close_catalog(catalog)


def test_offsets_are_kept_as_javas_summary_key_and_json() -> None:
    assert offsets.key("orders", "connect-ice") == "kafka.connect.offsets.orders.connect-ice"
    assert offsets.to_json({1: 77, 0: 120}) == '{"0":120,"1":77}'
    assert offsets.from_json('{"0":120,"1":77}') == {0: 120, 1: 77}
    held = {("orders", 0): 5, ("orders", 1): 9, ("other", 0): 3}
    assert offsets.summary_update(held, {("orders", 0): 7, ("orders", 2): 1}, "g") == {
        "kafka.connect.offsets.orders.g": '{"0":7,"1":9,"2":1}'}
    assert offsets.summary_update(held, {("orders", 1): None}, "g") == {"kafka.connect.offsets.orders.g": '{"0":5}'}


def test_routing_follows_javas_three_modes() -> None:
    rows = pa.table({"kind": ["Click", "view", None, "click"], "n": [1, 2, 3, 4]})
    everywhere = route(rows, settings(**{"iceberg.tables": "db.a,db.b"}))
    assert {name: t.num_rows for name, t in everywhere.items()} == {"db.a": 4, "db.b": 4}
    regex = route(rows, settings(**{"iceberg.tables": "db.a,db.b", "iceberg.tables.route-field": "kind",
                                    "iceberg.table.db.a.route-regex": "[Cc]lick", "iceberg.table.db.b.route-regex": "vi"}))
    assert {name: t.column("n").to_pylist() for name, t in regex.items()} == {"db.a": [1, 4]}  # matches() is whole
    dynamic = route(rows, settings(**{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "kind"}))
    assert {name: t.column("n").to_pylist() for name, t in dynamic.items()} == {"click": [1, 4], "view": [2]}


def test_nested_route_fields_and_booleans_read_as_java_prints_them() -> None:
    rows = pa.table({"meta": [{"db": "Sales", "ok": True}, {"db": None, "ok": False}]})
    dynamic = route(rows, settings(**{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "meta.db"}))
    assert list(dynamic) == ["sales"]
    flags = route(rows, settings(**{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "meta.ok"}))
    assert sorted(flags) == ["false", "true"]


def test_batch_types_become_icebergs() -> None:
    schema = pa.schema([("a", pa.int8()), ("b", pa.null()), ("c", pa.time32("ms")), ("d", pa.timestamp("ms", "UTC")),
                        ("e", pa.struct([("x", pa.int16()), ("y", pa.null())]))])
    assert iceberg_arrow(schema) == pa.schema([("a", pa.int32()), ("c", pa.time64("us")),
                                               ("d", pa.timestamp("us", "UTC")), ("e", pa.struct([("x", pa.int32())]))])


def test_upsert_mode_and_the_cdc_field_need_id_columns() -> None:
    assert problems(**{"iceberg.tables": "db.a,db.b", "iceberg.tables.upsert-mode-enabled": "true",
                       "iceberg.table.db.a.id-columns": "id"}) == [
        "`iceberg.table.db.b.id-columns`: is required with iceberg.tables.upsert-mode-enabled=true (or "
        "iceberg.tables.default-id-columns): the columns that identify a row"]
    assert problems(**{"iceberg.tables.dynamic-enabled": "true", "iceberg.tables.route-field": "t",
                       "iceberg.tables.cdc-field": "op"}) == [
        "`iceberg.tables.default-id-columns`: is required with iceberg.tables.cdc-field and dynamic tables: "
        "the columns that identify a row"]
    keyed = settings(**{"iceberg.tables": "db.a", "iceberg.tables.cdc-field": "_cdc.op",
                        "iceberg.tables.default-id-columns": "id, region"})
    assert keyed.keyed and keyed.cdc_field == "_cdc.op" and keyed.table_config("db.a").id_columns == ("id", "region")
    assert not settings(**{"iceberg.tables": "db.a"}).keyed


def test_the_offsets_key_names_connects_group() -> None:
    read = settings(**{"iceberg.tables": "db.a"})
    assert read.offsets_group({"name": "ice"}) == "connect-ice"
    assert read.offsets_group({"consumer.override.group.id": "g"}) == "g"
    assert settings(**{"iceberg.tables": "db.a", "iceberg.connect.group-id": "mine"}).offsets_group({}) == "mine"
