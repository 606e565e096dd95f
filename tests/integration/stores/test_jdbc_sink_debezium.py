"""Debezium's PostgreSQL source (io.debezium:debezium-connector-postgres, in the Java Connect
worker, from its plugin directory) captures one database of the test server; our jdbc-sink
(`reconciler run --once`) applies its change events to another database: after a snapshot,
inserts, updates and deletes (and a key deleted then inserted again), in two rounds, the two
tables are equal, column types included. JsonConverter with schemas (Debezium's time types and
decimals) and without (into an existing table; decimals as text). docs/connectors.md#change-events.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from java_read_support import wait_until
from jdbc_support import JDBC_SINK, JSON
from reconciler.devtools.connect import RunningConnect, start_connect
from reconciler.devtools.connect_plugins import POSTGRES_SOURCE, debezium_plugin
from reconciler.devtools.postgres import RunningPostgres
from reconciler.kafka.io import admin
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything

DEBEZIUM = "io.debezium.connector.postgresql.PostgresConnector"
TYPED = ("CREATE TABLE {} (id INT PRIMARY KEY, name TEXT, amount NUMERIC(10,2), quantity INT, active BOOLEAN, "
         "created TIMESTAMP, birthday DATE)")
PLAIN = "CREATE TABLE {} (id INT PRIMARY KEY, name TEXT, amount NUMERIC(10,2), quantity INT, active BOOLEAN)"


@dataclass(frozen=True)
class Capture:
    """One table captured by a Debezium connector with one converter setting."""

    table: str
    ddl: str
    schemas: bool

    def values(self, i: int, version: int) -> str:
        base = f"({i}, 'name {i} v{version}', {i * 1.25 + version:.2f}, {i % 7 + version}, {str(i % 2 == 0).lower()}"
        if self.ddl is TYPED:
            base += f", TIMESTAMP '2024-03-{1 + i % 28:02d} 12:{i % 60:02d}:05.123456', DATE '1999-12-{1 + i % 31:02d}'"
        return base + ")"


CAPTURES = (Capture("typed", TYPED, True), Capture("plain", PLAIN, False))


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    return Pipeline(kafka_settings, tmp_path)


@pytest.fixture
def worker(kafka: Any, tmp_path: Path) -> Iterator[RunningConnect]:
    plugin = debezium_plugin(POSTGRES_SOURCE)
    with start_connect(kafka.bootstrap, f"dbz-{uuid.uuid4().hex[:8]}", tmp_path / "java", plugin_path=[plugin]) as running:
        yield running


def converters(schemas: bool) -> dict[str, str]:
    flag = str(schemas).lower()
    return {"key.converter": JSON, "value.converter": JSON, "key.converter.schemas.enable": flag,
            "value.converter.schemas.enable": flag}


def debezium_config(postgres: RunningPostgres, database: str, prefix: str, capture: Capture) -> dict[str, str]:
    slot = f"{prefix}_{capture.table}".replace("-", "_")
    return {"connector.class": DEBEZIUM, "tasks.max": "1", "database.hostname": postgres.host,
            "database.port": str(postgres.port), "database.user": postgres.user,
            "database.password": postgres.password, "database.dbname": database, "topic.prefix": slot,
            "plugin.name": "pgoutput", "slot.name": slot, "publication.name": slot,
            "publication.autocreate.mode": "filtered", "table.include.list": f"public.{capture.table}",
            "decimal.handling.mode": "precise" if capture.schemas else "string", **converters(capture.schemas)}


def execute(dsn: str, *statements: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in statements:
            connection.execute(statement)  # type: ignore[arg-type]  # fixed test SQL


def rows(dsn: str, table: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute(f"SELECT * FROM {table} ORDER BY id").fetchall()  # type: ignore[arg-type]


def column_types(dsn: str, table: str) -> list[tuple[str, str]]:
    with psycopg.connect(dsn) as connection:
        return connection.execute("SELECT column_name, data_type FROM information_schema.columns WHERE table_name = %s "
                                  "ORDER BY column_name", [table]).fetchall()


def round_of_changes(dsn: str, capture: Capture, round_: int) -> int:
    """Inserts, updates and deletes; the change events (and tombstones) they make."""
    base = 100 * round_
    table = capture.table
    execute(dsn, *(f"INSERT INTO {table} VALUES {capture.values(base + i, 0)}" for i in range(20)),
            *(f"UPDATE {table} SET name = 'renamed {i}', quantity = quantity + 1 WHERE id = {i}" for i in range(0, 10, 2)),
            f"DELETE FROM {table} WHERE id IN ({base + 3}, {base + 4}, {round_})",  # one of the snapshot's
            f"INSERT INTO {table} VALUES {capture.values(base + 4, 1)}",  # deleted, then back
            f"UPDATE {table} SET amount = NULL, active = NULL WHERE id = {base + 7}")
    return 20 + 5 + 3 * 2 + 1 + 1


def event_count(settings: KafkaSettings, topic: str) -> int:
    if topic not in admin.topic_partitions(settings):
        return 0  # Debezium's first record creates it
    return sum(1 for _ in read_to_end(settings, topic))


def wait_for_events(settings: KafkaSettings, topic: str, count: int) -> None:
    wait_until(f"{count} change events in {topic}", lambda: event_count(settings, topic) >= count, deadline_s=120)


@pytest.mark.timeout(900)  # a Java worker, two `reconciler run` processes, Debezium's snapshot and streaming
def test_debeziums_change_events_leave_the_table_equal_to_the_source(
        pipeline: Pipeline, postgres: RunningPostgres, worker: RunningConnect) -> None:
    suffix = uuid.uuid4().hex[:8]
    source, target = f"dbz_src_{suffix}", f"dbz_dst_{suffix}"
    source_dsn, target_dsn = postgres.create_database(source), postgres.create_database(target)
    topics, events = {}, {}
    for capture in CAPTURES:
        execute(source_dsn, capture.ddl.format(capture.table),
                *(f"INSERT INTO {capture.table} VALUES {capture.values(i, 0)}" for i in range(10)))
        config = debezium_config(postgres, source, f"dbz_{suffix}", capture)
        status, body = worker.rest("POST", "/connectors", {"name": f"{capture.table}-{suffix}", "config": config})
        assert status == 201, body
        topics[capture] = f"{config['topic.prefix']}.public.{capture.table}"
        events[capture] = 10  # the snapshot's reads
        if not capture.schemas:  # without schemas, the table must exist (auto.create needs them)
            execute(target_dsn, capture.ddl.format(capture.table))
        pipeline.connector(f"sink-{capture.table}", JDBC_SINK, {
            "topics": topics[capture], "table.name.format": capture.table, "connection.url": postgres.jdbc_url(target),
            "connection.user": postgres.user, "connection.password": postgres.password, "insert.mode": "upsert",
            "pk.mode": "record_key", "delete.enabled": "true", "auto.create": str(capture.schemas).lower(),
            **converters(capture.schemas)})
    for capture in CAPTURES:
        wait_for_events(pipeline.settings, topics[capture], events[capture])  # the snapshot is done: stream

    for round_ in (1, 2):
        for capture in CAPTURES:
            events[capture] += round_of_changes(source_dsn, capture, round_)
            wait_for_events(pipeline.settings, topics[capture], events[capture])
        pipeline.converge()
        for capture in CAPTURES:
            assert rows(target_dsn, capture.table) == rows(source_dsn, capture.table), (capture, round_)
    for capture in CAPTURES:
        assert column_types(target_dsn, capture.table) == column_types(source_dsn, capture.table)
        assert committed_everything(pipeline.settings, f"connect-sink-{capture.table}", topics[capture])
    worker.stop()
    execute(postgres.dsn_for(source), *(f"SELECT pg_drop_replication_slot('dbz_{suffix}_{c.table}')" for c in CAPTURES))
