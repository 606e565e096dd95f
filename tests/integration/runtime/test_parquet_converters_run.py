"""parquet-sink with Connect's converters on a real broker and Spark: JsonConverter values (with
and without schemas) become typed columns read back by pyarrow; a record that does not decode
fails the task in one line with `errors.tolerance=none`, and goes to the dead letter queue with
Java's context headers with `all`, once, even when the run is SIGKILLed after the dead letters
are committed and before the file is written."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
from confluent_kafka import Producer

from crash_support import run_once
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import DATE, TIMESTAMP, Schema, decimal, struct
from reconciler.kafka.io.consume import raw_to_end
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything, parquet_keys, pipeline

__all__ = ["pipeline"]  # the fixture

JSON = "org.apache.kafka.connect.json.JsonConverter"
ORDER = struct(("id", Schema("int64")), ("price", decimal(2, 12)), ("day", Schema("int32", False, DATE, 1)),
               ("placed", Schema("int64", True, TIMESTAMP, 1)), ("customer", Schema("string", True)))


def order(i: int) -> bytes:
    value = {"id": i, "price": Decimal(i) / 100, "day": dt.date(2026, 1, 1) + dt.timedelta(days=i % 300),
             "placed": 1_700_000_000_000 + i, "customer": f"c{i % 7}"}
    raw = envelope(ORDER, value)
    assert raw is not None
    return raw


def produce(settings: KafkaSettings, topic: str, records: list[tuple[bytes, bytes | None, int]]) -> None:
    """Keyed records, each with a header of its own, to the given partitions."""
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "linger.ms": 20})
    for key, value, partition in records:
        producer.produce(topic, key=key, value=value, partition=partition, headers=[("source", b"test-" + key)])
    assert producer.flush(settings.timeout_s) == 0


def dataset(root: Path) -> pa.Table:
    return ds.dataset(root, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table()


def test_json_values_with_and_without_schemas_become_typed_columns(pipeline: Pipeline, tmp_path: Path) -> None:
    typed, plain = pipeline.topic("typed", 2), pipeline.topic("plain", 1)
    produce(pipeline.settings, typed, [(b"%d" % i, order(i), i % 2) for i in range(200)])
    produce(pipeline.settings, plain, [(b"%d" % i, b'{"id":%d,"tags":["x"],"score":%d.5}' % (i, i), 0)
                                       for i in range(50)])
    out_typed, out_plain = tmp_path / "typed", tmp_path / "plain"
    pipeline.connector("typed", "parquet-sink", {"topics": typed, "path": str(out_typed), "value.converter": JSON},
                       tasks_max=2)
    pipeline.connector("plain", "parquet-sink", {
        "topics": plain, "path": str(out_plain), "value.converter": JSON, "value.converter.schemas.enable": "false",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"})
    pipeline.tick()

    table = dataset(out_typed)
    assert table.num_rows == 200
    types = {f.name: f.type for f in table.schema}
    assert types["id"] == pa.int64() and types["price"] == pa.decimal128(12, 2) and types["day"] == pa.date32()
    assert types["placed"] == pa.timestamp("ms", tz="UTC") and types["timestamp"] == pa.timestamp("ms", tz="UTC")
    assert types["key"] == pa.binary() and types["customer"] == pa.string()
    rows = {row["id"]: row for row in table.to_pylist()}
    assert sorted(rows) == list(range(200))
    assert rows[123]["price"] == Decimal("1.23") and rows[123]["day"] == dt.date(2026, 5, 4)
    assert rows[123]["partition"] == 1 and rows[123]["headers"] == [{"key": "source", "value": b"test-123"}]
    assert committed_everything(pipeline.settings, "connect-typed", typed)

    table = dataset(out_plain)
    assert {f.name: f.type for f in table.schema}["score"] == pa.float64()
    assert sorted(table.column("id").to_pylist()) == list(range(50))
    assert table.column("tags").to_pylist()[0] == ["x"] and table.schema.field("key").type == pa.string()
    assert pipeline.states("plain") == ("RUNNING", {0: "RUNNING"})


def test_a_record_that_does_not_decode_fails_the_task_in_one_line(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("orders", 1)
    produce(pipeline.settings, topic, [(b"%d" % i, b"{broken" if i == 5 else order(i), 0) for i in range(10)])
    out = tmp_path / "out"
    pipeline.connector("strict", "parquet-sink", {"topics": topic, "path": str(out), "value.converter": JSON})
    pipeline.tick()

    assert pipeline.states("strict") == ("RUNNING", {0: "FAILED"})
    trace = pipeline.state("strict").task_statuses[0].trace
    assert trace is not None
    last = trace.strip().splitlines()[-1]
    assert f"the value of record {topic}-0@5 cannot be read by {JSON}: Converting byte[] to Kafka Connect" in last
    assert parquet_keys(out) == Counter()  # nothing written, nothing committed past it
    assert not committed_everything(pipeline.settings, "connect-strict", topic)


def test_tolerance_all_sends_bad_records_to_the_dead_letter_queue_once_across_a_kill(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    topic, dlq = pipeline.topic("mixed", 2), pipeline.topic("dlq")
    bad = {7, 8, 30, 61, 90, 133}  # in both partitions
    records = [(b"%d" % i, (b'{"schema":{"type":"int64"},"payload":"x"}' if i == 90 else b"not json")
                if i in bad else order(i), i % 2) for i in range(150)]
    produce(pipeline.settings, topic, records)
    out = tmp_path / "out"
    config = {"topics": topic, "path": str(out), "value.converter": JSON, "errors.tolerance": "all",
              "errors.deadletterqueue.topic.name": dlq, "errors.deadletterqueue.topic.replication.factor": 1,
              "errors.deadletterqueue.context.headers.enable": True, "errors.log.enable": True}
    pipeline.connector("lenient", "parquet-sink", config, tasks_max=2)

    run_once(pipeline, "sink.after_dead_letters")  # a partition's dead letters committed, its file not written
    assert 0 < len(list(raw_to_end(pipeline.settings, [dlq]))) <= len(bad)
    pipeline.tick()  # recovery: the file is written, the dead letters are not produced again

    assert parquet_keys(out) == Counter(b"%d" % i for i in range(150) if i not in bad)
    letters = list(raw_to_end(pipeline.settings, [dlq]))
    assert sorted(int(m.key()) for m in letters) == sorted(bad)
    by_key = {int(m.key()): m for m in letters}
    headers = dict(by_key[61].headers())
    assert by_key[61].value() == b"not json" and headers["source"] == b"test-61"
    assert headers["__connect.errors.topic"] == topic.encode()
    assert (headers["__connect.errors.partition"], headers["__connect.errors.offset"]) == (b"1", b"30")
    assert headers["__connect.errors.connector.name"] == b"lenient" and headers["__connect.errors.task.id"] == b"1"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER"
    assert headers["__connect.errors.class.name"] == JSON.encode()
    assert headers["__connect.errors.exception.class.name"] == b"org.apache.kafka.connect.errors.DataException"
    assert headers["__connect.errors.exception.message"].startswith(b"Converting byte[] to Kafka Connect data")
    assert headers["__connect.errors.exception.stacktrace"].startswith(b"org.apache.kafka.connect.errors.DataExc")
    assert b"type" in dict(by_key[90].headers())["__connect.errors.exception.message"]
    assert pipeline.states("lenient") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert committed_everything(pipeline.settings, "connect-lenient", topic)
