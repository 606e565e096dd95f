"""Helpers for the delta-sink tests (no tests here): a config, JsonConverter orders, and a
`DeltaSinkTask` (or another table sink's task) run over records in process (start, write,
closing pre-commit, committable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reconciler.connectors.api import SinkRecord, SinkTask, Written, records_to_batch
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.connectors.delta.connector import DeltaSinkTask

JSON = "org.apache.kafka.connect.json.JsonConverter"
ORDER = struct(("id", Schema("int64")), ("name", Schema("string", optional=True)), name="order")


def config(table: Path, **extra: str) -> dict[str, str]:
    return {"name": "lake", "topics": "orders", "delta.table.uri": str(table), "value.converter": JSON,
            "key.converter": "org.apache.kafka.connect.storage.StringConverter", **extra}


def record(offset: int, value: bytes | None, partition: int = 0) -> SinkRecord:
    return SinkRecord(topic="orders", partition=partition, offset=offset, timestamp_ms=1_700_000_000_000 + offset,
                      key=b"k%d" % offset, value=value)


def order(i: int, **more: Any) -> bytes:
    schema = struct(("id", Schema("int64")), ("name", Schema("string", optional=True)),
                    *[(k, Schema("string", optional=True)) for k in more], name="order")
    encoded = envelope(schema, {"id": i, "name": f"n{i}", **more})
    assert encoded is not None
    return encoded


def run_task(cfg: dict[str, str], records: list[SinkRecord], start: int | None = None,
             task: SinkTask | None = None) -> Written:
    """`records` (one partition's range) through a table sink's task (delta-sink's unless given):
    what its driver commits."""
    task = task if task is not None else DeltaSinkTask()
    task.start(cfg)
    task.open([("orders", records[0].partition)])
    task.write(records_to_batch(records))
    tp = ("orders", records[0].partition)
    offset = task.pre_commit({tp: records[-1].offset + 1}, closing=True)[tp]
    text = task.committable()
    assert text is not None
    return Written(topic="orders", partition=tp[1], offset=offset, committable=text,
                   start=records[0].offset if start is None else start)
