"""iceberg-sink's records that do not fit the table (real broker, the session's Spark, an SQLite
catalog, the table read back by pyiceberg): with `errors.tolerance=none` the task fails naming the
record's offset and the column; switched to `all` with a dead letter queue, the same batch goes
on and the DLQ gets exactly the misfits with Connect's error headers."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
from pyiceberg.catalog.sql import SqlCatalog

from iceberg_support import ICEBERG_SINK, read_table, sink_config, sqlite_catalog
from java_read_support import produce_raw
from reconciler.kafka.io.consume import raw_to_end
from run_support import Pipeline, committed_everything, pipeline

__all__ = ["pipeline"]  # the fixture

BAD = {5, 17, 40}


def test_a_value_the_table_cannot_hold_fails_the_task_then_goes_to_the_dead_letter_queue(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    topic, dlq = pipeline.topic("misfits", 1), pipeline.topic("dlq")
    values = [{"id": i, "amount": "lots" if i in BAD else i / 4} for i in range(60)]
    produce_raw(pipeline.settings, topic, [(b"%d" % v["id"], json.dumps(v).encode()) for v in values])
    catalog = sqlite_catalog(tmp_path)
    _create_table(catalog)  # amount is a double: "lots" does not fit
    config = sink_config(topic, catalog, **{"iceberg.tables.evolve-schema-enabled": False})
    pipeline.connector("ice", ICEBERG_SINK, config)

    pipeline.tick()
    assert pipeline.states("ice") == ("RUNNING", {0: "FAILED"})
    trace = pipeline.state("ice").task_statuses[0].trace
    assert trace is not None
    last = trace.strip().splitlines()[-1]
    assert f"record {topic}-0@5 cannot be written: table db.events: column amount (double) cannot hold" in last
    assert read_table(catalog).num_rows == 0 and not committed_everything(pipeline.settings, "connect-ice", topic)

    pipeline.set("ice", config={**config, "errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                                "errors.deadletterqueue.topic.replication.factor": 1,
                                "errors.deadletterqueue.context.headers.enable": True},
                 restart={"id": "after-tolerance", "includeTasks": True, "onlyFailed": True})
    pipeline.tick()
    assert pipeline.states("ice") == ("RUNNING", {0: "RUNNING"})
    assert sorted(read_table(catalog).column("id").to_pylist()) == [i for i in range(60) if i not in BAD]
    letters = list(raw_to_end(pipeline.settings, [dlq]))
    assert sorted(int(m.key()) for m in letters) == sorted(BAD)
    headers = dict(letters[0].headers())
    assert headers["__connect.errors.topic"] == topic.encode() and headers["__connect.errors.offset"] == b"5"
    assert headers["__connect.errors.stage"] == b"TASK_PUT"
    assert b"column amount" in headers["__connect.errors.exception.message"]
    assert committed_everything(pipeline.settings, "connect-ice", topic)


def _create_table(catalog: dict[str, str]) -> None:
    opened = SqlCatalog("iceberg", uri="sqlite:///" + catalog["iceberg.catalog.uri"][len("jdbc:sqlite:"):],
                        warehouse=catalog["iceberg.catalog.warehouse"])
    try:
        opened.create_namespace("db")
        opened.create_table("db.events", pa.schema([("id", pa.int64()), ("amount", pa.float64())]))
    finally:
        opened.engine.dispose()
