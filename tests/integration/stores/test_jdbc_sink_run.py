"""jdbc-sink under `reconciler run --once` (real broker, Spark and PostgreSQL): JsonConverter
records moved into a table in insert and upsert modes, SIGKILLed at each step of a sink batch
(rows copied in an open transaction, offset written and COMMIT not sent, after the database
commit, before the group commit): the next run leaves the table exactly the topic (insert: no
row lost, none twice; upsert: each key's last value, tombstoned keys gone); and a wrong
password fails the task with one line naming the database, never the password."""

from __future__ import annotations

import uuid
from pathlib import Path

import psycopg
import pytest

from java_read_support import produce_raw
from jdbc_support import JDBC_SINK, order, sink_config, table_rows
from reconciler.devtools.postgres import RunningPostgres
from reconciler.kafka.settings import KafkaSettings
from crash_support import run_once
from run_support import Pipeline, committed_everything

TABLE = "kafka_orders"
COUNT = 3000


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    """Manifests only: every run here is a `reconciler run --once` subprocess."""
    return Pipeline(kafka_settings, tmp_path)


def manifest_config(postgres: RunningPostgres, database: str, **extra: object) -> dict[str, str]:
    """The connector's config in a manifest: `name` is the manifest's `metadata.name`."""
    config = sink_config(postgres, database, **extra)
    del config["name"]
    return config


def database(postgres: RunningPostgres) -> tuple[str, str]:
    name = f"jdbc_{uuid.uuid4().hex[:10]}"
    return name, postgres.create_database(name)


def id_counts(dsn: str) -> tuple[int, int, int]:
    """(rows, distinct ids, largest id + 1) of the table; zeros while it does not exist (auto.create's
    CREATE TABLE is in the first transaction)."""
    with psycopg.connect(dsn) as connection:
        if connection.execute("SELECT to_regclass(%s)", [TABLE]).fetchone() == (None,):
            return 0, 0, 0
        found = connection.execute(f"SELECT count(*), count(DISTINCT id), coalesce(max(id) + 1, 0) FROM {TABLE}")
        row = found.fetchone()
    assert row is not None
    return row[0], row[1], row[2]


@pytest.mark.timeout(900)  # four `reconciler run --once` processes, each starting Spark
def test_insert_mode_killed_at_each_step_converges_to_the_topic(pipeline: Pipeline, postgres: RunningPostgres) -> None:
    topic = pipeline.topic("orders", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(COUNT)])
    name, dsn = database(postgres)
    config = manifest_config(postgres, name, **{"topics": topic, "table.name.format": TABLE, "auto.create": True,
                                            "batch.size": 300})
    pipeline.connector("jdbc", JDBC_SINK, config, tasks_max=2)

    run_once(pipeline, "jdbc.after_rows")  # a transaction's rows copied, not committed
    run_once(pipeline, "jdbc.before_commit")  # its offset written too, COMMIT not sent
    rows, distinct, _ = id_counts(dsn)  # the other partition's task may have committed before the kill
    assert rows == distinct < COUNT
    run_once(pipeline, "jdbc.after_commit")  # rows and offset committed, the task killed before it returns
    rows, distinct, _ = id_counts(dsn)
    assert 0 < rows == distinct < COUNT
    run_once(pipeline, "sink.after_files")  # a partition's rows all in, the group's offsets not committed
    rows, distinct, _ = id_counts(dsn)
    assert rows == distinct
    assert not committed_everything(pipeline.settings, "connect-jdbc", topic)

    pipeline.converge()
    assert id_counts(dsn) == (COUNT, COUNT, COUNT)
    assert committed_everything(pipeline.settings, "connect-jdbc", topic)
    assert table_rows(dsn, TABLE, ["id", "customer", "quantity", "paid"])[:2] == [
        (0, "customer 0", 0, True), (1, "customer 1", 1, False)]


@pytest.mark.timeout(900)  # four `reconciler run --once` processes, each starting Spark
def test_upsert_mode_killed_at_each_step_keeps_each_keys_last_value_and_deletes_tombstones(
        pipeline: Pipeline, postgres: RunningPostgres) -> None:
    topic = pipeline.topic("customers", 2)
    keys = 200
    versions = [(b"k%d" % i, order(i * 10 + v, f"v{v}")) for v in range(3) for i in range(keys)]
    tombstones: list[tuple[bytes, bytes | None]] = [(b"k%d" % i, None) for i in range(0, keys, 10)]
    produce_raw(pipeline.settings, topic, versions + tombstones)
    name, dsn = database(postgres)
    config = manifest_config(postgres, name, **{"topics": topic, "table.name.format": TABLE, "auto.create": True,
                                            "insert.mode": "upsert", "pk.mode": "record_key", "pk.fields": "key",
                                            "delete.enabled": True, "batch.size": 100})
    pipeline.connector("jdbc", JDBC_SINK, config, tasks_max=2)

    for point in ("jdbc.after_rows", "jdbc.before_commit", "jdbc.after_commit", "sink.after_files"):
        run_once(pipeline, point)  # each run resumes from the last one's committed transactions
    assert not committed_everything(pipeline.settings, "connect-jdbc", topic)
    pipeline.converge()
    rows = table_rows(dsn, TABLE, ["key", "id", "customer"], "key")
    assert rows == sorted((f"k{i}", i * 10 + 2, "v2") for i in range(keys) if i % 10)
    assert committed_everything(pipeline.settings, "connect-jdbc", topic)


def test_a_wrong_password_fails_the_task_in_one_line_without_the_password(pipeline: Pipeline,
                                                                          postgres: RunningPostgres) -> None:
    topic = pipeline.topic("orders", 1)
    produce_raw(pipeline.settings, topic, [(b"1", order(1))])
    name, dsn = database(postgres)
    config = manifest_config(postgres, name, **{"topics": topic, "table.name.format": TABLE, "auto.create": True})
    config["connection.password"] = "wrong-password-xyzzy"
    pipeline.connector("jdbc", JDBC_SINK, config)

    output = run_once(pipeline, None, expected=1)
    assert "wrong-password-xyzzy" not in output
    task = pipeline.state("jdbc").task_statuses[0]
    assert task.state.value == "FAILED"
    assert task.trace is not None and "wrong-password-xyzzy" not in task.trace
    last = task.trace.strip().splitlines()[-1]
    assert f"cannot connect to PostgreSQL at {postgres.host}:{postgres.port}/{name} as postgres" in last, task.trace
    assert not committed_everything(pipeline.settings, "connect-jdbc", topic)
