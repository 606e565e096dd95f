"""iceberg-sink under `reconciler run --once` (real broker, Spark, SQL catalogs on SQLite and
PostgreSQL, a warehouse on disk; on object stores: test_iceberg_sink_clouds.py), every table
read back by pyiceberg:
the rows are the topic's; records fan out by a route field; tables are created and evolved;
SIGKILLed at each step of a batch (between two data files of a task; data files written, not
committed; the table committed, the group not), the next run converges with no row lost and
none twice; in upsert mode with a CDC field, to the last value per key."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from crash_support import run_once
from iceberg_support import (
    ICEBERG_SINK,
    event,
    id_counts,
    postgres_catalog,
    read_table,
    sink_config,
    sqlite_catalog,
    typed_event,
)
from java_read_support import produce_raw
from reconciler.devtools.postgres import RunningPostgres
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything

COUNT = 2000


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    """Manifests only: every run here is a `reconciler run --once` subprocess."""
    return Pipeline(kafka_settings, tmp_path)


def test_sqlite_catalog_table_is_the_topic_and_evolves(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("events", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, event(i)) for i in range(COUNT)])
    catalog = sqlite_catalog(tmp_path)
    pipeline.connector("ice", ICEBERG_SINK, sink_config(topic, catalog), tasks_max=2)

    pipeline.converge()
    table = read_table(catalog)
    assert id_counts(table)[:2] == (COUNT, COUNT)
    assert sorted(table.column_names) == ["amount", "id", "kind"]
    first = sorted(table.to_pylist(), key=lambda row: row["id"])[:2]
    assert first == [{"id": 0, "kind": "view", "amount": 0.0}, {"id": 1, "kind": "click", "amount": 0.25}]
    assert committed_everything(pipeline.settings, "connect-ice", topic)

    produce_raw(pipeline.settings, topic, [(b"%d" % i, event(i, country="fr")) for i in range(COUNT, COUNT + 10)])
    pipeline.converge()
    table = read_table(catalog)
    assert id_counts(table)[:2] == (COUNT + 10, COUNT + 10)
    countries = {row["id"]: row["country"] for row in table.select(["id", "country"]).to_pylist()}
    assert countries[COUNT + 3] == "fr" and countries[3] is None


def test_postgresql_catalog_with_schemas(pipeline: Pipeline, postgres: RunningPostgres, tmp_path: Path) -> None:
    topic = pipeline.topic("typed", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, typed_event(i)) for i in range(COUNT)])
    database = f"ice_{uuid.uuid4().hex[:8]}"
    postgres.create_database(database)
    catalog = postgres_catalog(postgres, database, tmp_path)
    config = sink_config(topic, catalog, **{"value.converter.schemas.enable": "true",
                                            "iceberg.tables.default-partition-by": "kind"})
    pipeline.connector("ice", ICEBERG_SINK, config, tasks_max=2)

    output = run_once(pipeline, None)
    assert "FAILED" not in output and postgres.password not in output
    table = read_table(catalog)
    assert id_counts(table)[:2] == (COUNT, COUNT)
    assert table.schema.field("id").type == "int64" and table.schema.field("amount").type == "double"
    assert committed_everything(pipeline.settings, "connect-ice", topic)


def test_records_fan_out_by_route_field(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("mixed", 2)
    targets = ["DB.Clicks", "db.views", None]  # lower-cased as Java does; a null goes nowhere
    produce_raw(pipeline.settings, topic, [(b"%d" % i, event(i, target=targets[i % 3])) for i in range(600)])
    catalog = sqlite_catalog(tmp_path)
    config = sink_config(topic, catalog, **{"iceberg.tables": "", "iceberg.tables.dynamic-enabled": True,
                                            "iceberg.tables.route-field": "target"})
    pipeline.connector("fan", ICEBERG_SINK, config, tasks_max=2)

    pipeline.converge()
    clicks, views = read_table(catalog, "db.clicks"), read_table(catalog, "db.views")
    assert sorted(clicks.column("id").to_pylist()) == list(range(0, 600, 3))
    assert sorted(views.column("id").to_pylist()) == list(range(1, 600, 3))
    assert committed_everything(pipeline.settings, "connect-fan", topic)


def test_killed_at_each_step_converges_to_the_topic(pipeline: Pipeline, tmp_path: Path) -> None:
    """One chain: killed between two data files, then after the data files (the first run's
    strays still there), then after the table commit; the last run converges."""
    topic = pipeline.topic("crash", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, event(i)) for i in range(COUNT)])
    catalog = sqlite_catalog(tmp_path)
    # Partitioned, so each flush writes several files: `iceberg.mid_files` falls between two.
    config = sink_config(topic, catalog, **{"iceberg.tables.default-partition-by": "kind"})
    pipeline.connector("ice", ICEBERG_SINK, config, tasks_max=2)

    for point in ("iceberg.mid_files", "sink.after_files", "sink.after_table_commit"):
        run_once(pipeline, point)
        assert not committed_everything(pipeline.settings, "connect-ice", topic), point
    # The table holds the batch once (no stray file of the earlier kills in it); the group does not know.
    assert id_counts(read_table(catalog))[:2] == (COUNT, COUNT)

    pipeline.converge()
    rows, distinct, twice = id_counts(read_table(catalog))
    assert (rows, distinct, twice) == (COUNT, COUNT, {})
    assert committed_everything(pipeline.settings, "connect-ice", topic)


def change(i: int, version: int, op: str) -> bytes:
    """A CDC record of row `i` (Debezium's op letter in `op`)."""
    return json.dumps({"id": i, "kind": "click" if i % 2 else "view", "version": version, "op": op}).encode()


def test_upsert_killed_at_each_step_keeps_the_last_value_per_key(pipeline: Pipeline, tmp_path: Path) -> None:
    """One chain: killed after the table commit; then a second wave of updates and deletes (its
    rows rewrite the committed files) killed after its files; the last run converges to the last
    value per key. (A kill between two data files: the parametrized test above.)"""
    topic = pipeline.topic("cdc", 2)
    first = [(i, v, "u" if v else "c") for v in range(3) for i in range(300)] + [(i, 3, "d") for i in range(0, 300, 10)]
    produce_raw(pipeline.settings, topic, [(b"%d" % i, change(i, v, op)) for i, v, op in first])
    catalog = sqlite_catalog(tmp_path)
    config = sink_config(topic, catalog, **{"iceberg.tables.upsert-mode-enabled": True, "iceberg.tables.cdc-field": "op",
                                            "iceberg.tables.default-id-columns": "id",
                                            "iceberg.tables.default-partition-by": "kind"})
    pipeline.connector("up", ICEBERG_SINK, config, tasks_max=2)

    run_once(pipeline, "sink.after_table_commit")  # the table has wave one, the group does not
    second = [(i, 4, "u") for i in range(0, 300, 3)] + [(i, 5, "d") for i in range(1, 300, 7)] + [(0, 6, "c")]
    produce_raw(pipeline.settings, topic, [(b"%d" % i, change(i, v, op)) for i, v, op in second])
    run_once(pipeline, "sink.after_files")  # wave two's files written, not committed
    pipeline.converge()

    expected: dict[int, int] = {}
    for i, version, op in first + second:
        if op == "d":
            expected.pop(i, None)
        else:
            expected[i] = version
    table = read_table(catalog)
    rows, distinct, twice = id_counts(table)
    assert (rows, distinct, twice) == (len(expected), len(expected), {})
    assert {row["id"]: row["version"] for row in table.select(["id", "version"]).to_pylist()} == expected
    assert committed_everything(pipeline.settings, "connect-up", topic)
