"""jdbc-source under the runtime (real broker, Spark and PostgreSQL): each mode moves the table's
rows to the topic, the records equal to the rows and the offsets in the offsets topic equal to
the bytes Confluent's source writes; rows inserted between batches are picked up, once; an
alter request moves the offset; and an unreachable database, a wrong password, a missing table or
column fail in one line naming them, never the password, with nothing produced."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jdbc_source_support import (
    JDBC_SOURCE,
    create_orders,
    expected_payloads,
    insert_orders,
    last_row_offset,
    new_database,
    offset_records,
    source_config,
    topic_payloads,
)
from reconciler.devtools.postgres import RunningPostgres
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.store import read_view
from run_support import Pipeline, pipeline

__all__ = ["pipeline"]  # the fixture

MODES = {
    "incrementing": {"incrementing.column.name": "id"},
    "timestamp": {"timestamp.column.name": "updated"},
    "timestamp+incrementing": {"timestamp.column.name": "updated", "incrementing.column.name": "id"},
}


def drain(pipeline: Pipeline, topic: str, count: int, ticks: int = 6) -> None:
    for _ in range(ticks):
        if sum(topic_payloads(pipeline.settings, topic).values()) >= count:
            return
        pipeline.tick()


@pytest.mark.parametrize("mode", list(MODES))
def test_each_mode_moves_the_rows_once_with_confluents_offsets(mode: str, pipeline: Pipeline,
                                                               postgres: RunningPostgres) -> None:
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 200)
    topic = pipeline.topic("orders", 1)
    prefix = topic.removesuffix("orders")
    pipeline.connector("pg", JDBC_SOURCE, source_config(postgres, database, prefix, mode=mode,
                                                         **{"batch.max.rows": 40}, **MODES[mode]))
    drain(pipeline, topic, 200)  # 150 records per task per batch: two batches
    assert topic_payloads(pipeline.settings, topic) == expected_payloads(dsn)
    offsets = offset_records(pipeline.settings, "pg")
    assert len(offsets) == 2  # one per batch
    assert {key for key, _ in offsets} == {b'["pg",{"protocol":"1","table":"public.orders"}]'}
    assert offsets[-1][1] == last_row_offset(dsn, mode)

    insert_orders(dsn, 201, 50)
    pipeline.tick()
    assert topic_payloads(pipeline.settings, topic) == expected_payloads(dsn)  # the new rows, once
    assert offset_records(pipeline.settings, "pg")[-1][1] == last_row_offset(dsn, mode)
    pipeline.tick()  # nothing new: no record, no offset
    assert sum(topic_payloads(pipeline.settings, topic).values()) == 250
    assert len(offset_records(pipeline.settings, "pg")) == 3


def test_bulk_reads_the_whole_table_each_batch_without_offsets(pipeline: Pipeline, postgres: RunningPostgres) -> None:
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 100)
    prefix = pipeline.topic("orders", 1).removesuffix("orders")
    pipeline.connector("pg", JDBC_SOURCE, source_config(postgres, database, prefix, mode="bulk"))
    pipeline.tick()
    pipeline.tick()
    assert topic_payloads(pipeline.settings, prefix + "orders") == Counter(
        {payload: 2 for payload in expected_payloads(dsn)})
    assert offset_records(pipeline.settings, "pg") == []


def test_an_alter_request_moves_the_offset(pipeline: Pipeline, postgres: RunningPostgres) -> None:
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 100)
    prefix = pipeline.topic("orders", 1).removesuffix("orders")
    config = source_config(postgres, database, prefix, mode="incrementing", **{"incrementing.column.name": "id"})
    pipeline.connector("pg", JDBC_SOURCE, config)
    pipeline.tick()
    skip = {"id": "skip-1", "action": "alter", "offsets": [
        {"partition": {"protocol": "1", "table": "public.orders"}, "offset": {"incrementing": 180}}]}
    pipeline.set("pg", offsets=skip)
    insert_orders(dsn, 101, 100)
    pipeline.tick()
    pipeline.tick()
    ids = sorted(json.loads(p)["id"] for p in topic_payloads(pipeline.settings, prefix + "orders"))
    assert ids == [*range(1, 101), *range(181, 201)]
    assert read_view(pipeline.settings).live.is_applied("pg", "offsets", "skip-1")
    assert offset_records(pipeline.settings, "pg")[-1][1] == b'{"incrementing":200}'


def test_a_percent_sign_in_the_query_and_a_column_name_is_sql_not_a_placeholder(
        pipeline: Pipeline, postgres: RunningPostgres) -> None:
    """psycopg reads every `%` of a statement with parameters as a placeholder's: a LIKE in the
    user's query, or a column named with one, once failed every batch ("only '%s', '%b', '%t'
    are allowed")."""
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 200)
    topic = pipeline.topic("like", 1)
    config = source_config(postgres, database, topic, mode="incrementing", **{
        "query": """SELECT id AS "n%o", customer FROM orders WHERE customer LIKE 'customer 1%'""",
        "incrementing.column.name": "n%o"})
    del config["table.whitelist"]
    pipeline.connector("pg", JDBC_SOURCE, config)
    pipeline.converge()
    pipeline.converge()  # nothing new: still each row once
    ids = Counter(json.loads(m.value or b"null")["payload"]["n%o"] for m in read_to_end(pipeline.settings, topic))
    assert ids == Counter([1, *range(10, 20), *range(100, 200)])
    assert offset_records(pipeline.settings, "pg")[-1][1] == b'{"incrementing":199}'


@pytest.mark.parametrize(("change", "words"), [
    ({"connection.password": "wrong-password-xyzzy"}, "cannot connect to PostgreSQL at {host}:{port}/{db} as"),
    ({"connection.url": "jdbc:postgresql://127.0.0.1:1/{db}"}, "cannot connect to PostgreSQL at 127.0.0.1:1/{db}"),
    ({"table.whitelist": "orders,nowhere"}, "no table nowhere in {host}:{port}/{db}"),
    ({"incrementing.column.name": "serial_no"}, "table public.orders in {host}:{port}/{db} has no column serial_no"),
    ({"mode": "timestamp", "timestamp.column.name": "customer"}, "column customer (timestamp.column.name) may be NULL"),
])
def test_bad_input_fails_in_one_line_naming_it_and_produces_nothing(change: dict[str, str], words: str,
                                                                   pipeline: Pipeline,
                                                                   postgres: RunningPostgres) -> None:
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 10)
    prefix = pipeline.topic("orders", 1).removesuffix("orders")
    config = source_config(postgres, database, prefix, mode="incrementing", **{"incrementing.column.name": "id"})
    config.update({k: v.format(db=database) for k, v in change.items()})
    pipeline.connector("pg", JDBC_SOURCE, config)
    pipeline.tick()
    state = pipeline.state("pg")
    traces = [state.connector_status.trace if state.connector_status else None,
              *(t.trace for t in state.task_statuses.values())]
    failed = [t for t in traces if t]
    assert failed, (state.connector_status, state.task_statuses)
    last = failed[0].strip().splitlines()[-1]
    assert words.format(host=postgres.host, port=postgres.port, db=database) in last, failed[0]
    assert all(postgres.password not in t and "wrong-password-xyzzy" not in t for t in failed)
    assert offset_records(pipeline.settings, "pg") == []
    assert sum(topic_payloads(pipeline.settings, prefix + "orders").values()) == 0
