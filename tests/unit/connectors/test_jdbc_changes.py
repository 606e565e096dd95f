"""jdbc-sink's reading of Debezium change events (found by the value schema's name, or by the
fields with schemas off) into rows and deletes, and of Connect's and Debezium's time types
(db.timezone, db.timezone.date) into PostgreSQL values."""

from __future__ import annotations

import datetime as dt
import zoneinfo
from typing import Any

from reconciler.connectors.converters.schema import Schema, optional, struct
from reconciler.connectors.jdbc.changes import is_envelope, unwrap
from reconciler.connectors.jdbc.config import JdbcSinkSettings
from reconciler.connectors.jdbc.decode import Decoded
from reconciler.connectors.jdbc.rows import Record, layout, plan, to_pg

BASE = {"name": "sink", "topics": "db.public.t", "connection.url": "jdbc:postgresql://db:5432/shop",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "insert.mode": "upsert",
        "pk.mode": "record_key", "delete.enabled": "true"}
ROW = optional(struct(("id", Schema("int32")), ("name", Schema("string", optional=True)), name="db.public.t.Value"))
KEY = struct(("id", Schema("int32")), name="db.public.t.Key")
ENVELOPE = struct(("before", ROW), ("after", ROW), ("source", struct(("db", Schema("string")))),
                  ("op", Schema("string")), ("ts_ms", Schema("int64", optional=True)), name="db.public.t.Envelope")


def settings(**extra: str) -> JdbcSinkSettings:
    return JdbcSinkSettings.parse({**BASE, **extra})


def event(op: str, before: dict[str, Any] | None, after: dict[str, Any] | None) -> dict[str, Any]:
    return {"before": before, "after": after, "source": {"db": "shop"}, "op": op, "ts_ms": 1}


def decoded(values: list[tuple[int, dict[str, Any] | None]], schemaless: bool = False) -> Decoded:
    records = [Record("db.public.t", 0, i, {"id": key}, value) for i, (key, value) in enumerate(values)]
    return Decoded(records, KEY, ENVELOPE, schemaless)


def applied(batch: Decoded, s: JdbcSinkSettings) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    read = unwrap(batch, s.delete_enabled)
    planned = plan(read.records, layout(s, "t", read.key_schema, read.value_schema), s, dt.UTC)
    return planned.puts, planned.deletes


def test_the_envelope_is_found_by_its_schema_name_or_its_fields() -> None:
    assert is_envelope(ENVELOPE, schemaless=False)
    assert not is_envelope(ROW, schemaless=False)
    renamed = struct(*((f.name, f.schema) for f in ENVELOPE.fields), name="db.public.t.Value")
    assert not is_envelope(renamed, schemaless=False)  # Debezium's sink asks the name, too
    inferred = struct(*((f.name, f.schema) for f in ENVELOPE.fields))
    assert is_envelope(inferred, schemaless=True)
    assert not is_envelope(struct(("op", Schema("string")), ("after", ROW)), schemaless=True)


def test_creates_reads_updates_and_deletes_reach_debeziums_end_state() -> None:
    batch = decoded([
        (1, event("r", None, {"id": 1, "name": "snapshot"})),
        (2, event("c", None, {"id": 2, "name": "two"})),
        (1, event("u", {"id": 1, "name": "snapshot"}, {"id": 1, "name": "one"})),
        (2, event("d", {"id": 2, "name": "two"}, None)),
        (2, None),  # the source's tombstone after a delete
        (3, event("c", None, {"id": 3, "name": "three"})),
        (3, event("t", None, None)),  # a truncate: skipped, as Debezium's truncate.enabled=false
    ])
    puts, deletes = applied(batch, settings())
    assert puts == [(1, "one"), (3, "three")]
    assert deletes == [(2,)]


def test_without_delete_enabled_a_delete_event_is_skipped() -> None:
    batch = decoded([(1, event("c", None, {"id": 1, "name": "one"})), (1, event("d", {"id": 1, "name": "one"}, None))])
    puts, deletes = applied(batch, settings(**{"delete.enabled": "false"}))
    assert puts == [(1, "one")] and deletes == []


def test_schemaless_change_events_are_read_alike() -> None:
    inferred = struct(("before", ROW), ("after", ROW), ("source", struct(("db", Schema("string")))),
                      ("op", Schema("string")))
    batch = Decoded(decoded([(1, event("c", None, {"id": 1, "name": "one"})), (2, event("d", {"id": 2}, None))]).records,
                    KEY, inferred, True)
    read = unwrap(batch, delete_enabled=True)
    assert read.value_schema == ROW and [r.value for r in read.records] == [{"id": 1, "name": "one"}, None]


def test_values_that_are_no_envelope_are_left_alone() -> None:
    plain = Decoded([Record("t", 0, 0, {"id": 1}, {"id": 1, "name": "x"})], KEY, ROW, False)
    assert unwrap(plain, delete_enabled=True) is plain


def test_time_types_in_db_timezone_as_confluents_sink_binds_them() -> None:
    new_york = zoneinfo.ZoneInfo("America/New_York")
    date = Schema("int32", name="org.apache.kafka.connect.data.Date")
    assert to_pg(date, 365, new_york) == dt.date(1971, 1, 1)  # db.timezone.date=UTC: as it is
    assert to_pg(date, 365, new_york, new_york) == dt.date(1970, 12, 31)  # NONE, Confluent's default
    assert to_pg(date, 365, dt.UTC, zoneinfo.ZoneInfo("Asia/Tokyo")) == dt.date(1971, 1, 1)
    micros = Schema("int64", name="io.debezium.time.MicroTimestamp")
    assert to_pg(micros, 1_500_000, dt.UTC) == dt.datetime(1970, 1, 1, 0, 0, 1, 500_000)
    assert to_pg(Schema("int64", name="io.debezium.time.NanoTimestamp"), 2_000_000_001, dt.UTC) == dt.datetime(
        1970, 1, 1, 0, 0, 2)
    assert to_pg(Schema("int64", name="io.debezium.time.MicroTime"), 3_600_000_001, dt.UTC) == dt.time(1, 0, 0, 1)
    assert to_pg(Schema("int32", name="io.debezium.time.Date"), 1, dt.UTC) == dt.date(1970, 1, 2)


def test_db_timezone_date_is_confluents_key() -> None:
    assert settings().date_in_db_zone
    assert not settings(**{"db.timezone.date": "utc"}).date_in_db_zone
