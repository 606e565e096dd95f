"""jdbc-source under `reconciler run --once` SIGKILLed around the Kafka commit of a source batch
(records and offsets produced, transaction open; committed, nothing recorded after): the next
runs leave every row in the topic exactly once, none skipped, and the offset Confluent's."""

from __future__ import annotations

from pathlib import Path

import pytest

from crash_support import run_once
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
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline

MODE = "timestamp+incrementing"

# Three `run --once` subprocesses, each starting Spark (the last two also wait out the killed
# producer's transaction): more than the default 300 s on a loaded machine.


@pytest.fixture
def manifests(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    """Manifests only: every run here is a `reconciler run --once` subprocess."""
    return Pipeline(kafka_settings, tmp_path)


@pytest.mark.timeout(900)
def test_killed_before_and_after_the_kafka_commit_no_row_is_produced_twice_or_skipped(
        manifests: Pipeline, postgres: RunningPostgres) -> None:
    pipeline = manifests
    database, dsn = new_database(postgres)
    create_orders(dsn)
    insert_orders(dsn, 1, 300)
    topic = pipeline.topic("orders", 1)
    config = source_config(postgres, database, topic.removesuffix("orders"), mode=MODE,
                           **{"timestamp.column.name": "updated", "incrementing.column.name": "id",
                              "batch.max.rows": 50})
    pipeline.connector("pg", JDBC_SOURCE, config)

    run_once(pipeline, "source.before_commit")  # rows and offsets produced, the transaction open
    run_once(pipeline, "source.after_commit")  # the open one aborted; the same rows committed, then killed
    assert topic_payloads(pipeline.settings, topic) == expected_payloads(dsn)
    assert offset_records(pipeline.settings, "pg")[-1][1] == last_row_offset(dsn, MODE)

    insert_orders(dsn, 301, 100)
    pipeline.converge()
    assert topic_payloads(pipeline.settings, topic) == expected_payloads(dsn)  # 400 rows, each once
    assert offset_records(pipeline.settings, "pg")[-1][1] == last_row_offset(dsn, MODE)
