"""parquet-sink with converters, on a real directory: typed columns (JsonConverter with and
without schemas, StringConverter), Connect's fields beside them, records that do not decode
handled by `errors.tolerance` (none: the file is not written; all: skipped, to the DLQ before
the file exists), and the untyped files unchanged with ByteArrayConverter."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from reconciler.connectors.api import SinkRecord, records_to_batch
from reconciler.connectors.converters.columns import typed_rows
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import DATE, TIME, TIMESTAMP, Schema, decimal, struct
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.errant import ErrantReporter, ErrorHandling, RecordFailed
from reconciler.connectors.parquet_sink import ParquetSinkConnector, ParquetSinkTask
from reconciler.connectors.range_files import partition_dir
from reconciler.kafka.formats.dead_letter import DeadLetter

TOPIC = "orders"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
ORDER = struct(
    ("id", Schema("int64")),
    ("price", decimal(2, 10)),
    ("day", Schema("int32", True, DATE, 1)),
    ("at", Schema("int32", True, TIME, 1)),
    ("placed", Schema("int64", True, TIMESTAMP, 1)),
    ("timestamp", Schema("string", True)),  # a value field named as one of Connect's
    ("tags", Schema("array", True, items=Schema("string"))),
)


class Kept:
    def __init__(self) -> None:
        self.sent: list[DeadLetter] = []

    def send(self, letters: Sequence[DeadLetter]) -> None:
        self.sent += letters


def order(i: int) -> bytes:
    value = {"id": i, "price": Decimal(i) / 4, "day": dt.date(2026, 1, 1) + dt.timedelta(days=i),
             "at": dt.time(0, 0, i % 60), "placed": 1_700_000_000_000 + i, "timestamp": f"t{i}", "tags": ["a", "b"]}
    raw = envelope(ORDER, value)
    assert raw is not None
    return raw


def write(root: Path, values: list[bytes | None], kept: Kept | None = None, key: bytes | None = b"k",
          **config: str) -> ParquetSinkTask:
    task = ParquetSinkTask()
    task_config = ParquetSinkConnector().task_configs({"name": "archive", "topics": TOPIC, "path": str(root),
                                                       **config}, 1)[0]
    task.errant_reporter = ErrantReporter(ErrorHandling.parse(task_config), connector="archive", task_id=0,
                                          dead_letters=kept)
    task.start(task_config)
    task.open([(TOPIC, 0)])
    records = [SinkRecord(TOPIC, 0, o, key, v, 1_700_000_000_000 + o, (("h", b"1"),)) for o, v in enumerate(values)]
    task.write(records_to_batch(records))
    task.pre_commit({(TOPIC, 0): len(values)}, closing=True)
    return task


def table(root: Path) -> pa.Table:
    directory = root / partition_dir(TOPIC, 0)
    [name] = [n for n in os.listdir(directory) if n.endswith(".parquet")]
    return pq.read_table(directory / name)


def test_json_with_schemas_becomes_typed_columns_beside_connects_fields(tmp_path: Path) -> None:
    write(tmp_path, [order(i) for i in range(3)], **{"value.converter": JSON})
    got = table(tmp_path)
    assert got.schema.names == ["offset", "timestamp", "key", "headers", "id", "price", "day", "at", "placed",
                                "value_timestamp", "tags"]
    types = dict(zip(got.schema.names, got.schema.types, strict=True))
    assert types["timestamp"] == pa.timestamp("ms", tz="UTC") and types["key"] == pa.binary()
    assert (types["id"], types["price"], types["day"]) == (pa.int64(), pa.decimal128(10, 2), pa.date32())
    assert (types["at"], types["placed"]) == (pa.time32("ms"), pa.timestamp("ms", tz="UTC"))
    assert types["tags"] == pa.list_(pa.field("element", pa.string(), nullable=False))
    row = got.slice(1, 1).to_pylist()[0]
    assert row["offset"] == 1 and row["id"] == 1 and row["price"] == Decimal("0.25")
    assert row["day"] == dt.date(2026, 1, 2) and row["at"] == dt.time(0, 0, 1)
    assert row["value_timestamp"] == "t1" and row["headers"] == [{"key": "h", "value": b"1"}]


def test_schemaless_json_gets_a_schema_inferred_per_file(tmp_path: Path) -> None:
    values = [b'{"id":1,"name":"a"}', b'{"id":2.5,"extra":true}', None]
    write(tmp_path, values, **{"value.converter": JSON, "value.converter.schemas.enable": "false",
                               "key.converter": STRING})
    got = table(tmp_path)
    assert got.schema.field("id").type == pa.float64() and got.schema.field("key").type == pa.string()
    assert got.column("name").to_pylist() == ["a", None, None]
    assert got.column("extra").to_pylist() == [None, True, None]
    assert got.column("key").to_pylist() == ["k", "k", "k"]


def test_a_struct_key_is_one_column(tmp_path: Path) -> None:
    key = envelope(struct(("tenant", Schema("string")), ("n", Schema("int32"))), {"tenant": "x", "n": 7})
    write(tmp_path, [b'"v"'], key=key, **{"value.converter": JSON, "key.converter": JSON,
                                         "value.converter.schemas.enable": "false"})
    got = table(tmp_path)
    assert got.column("key").to_pylist() == [{"tenant": "x", "n": 7}]
    assert got.column("value").to_pylist() == ["v"]


def test_with_tolerance_none_a_bad_record_fails_the_task_and_no_file_is_written(tmp_path: Path) -> None:
    with pytest.raises(RecordFailed, match=r"the value of record orders-0@1 cannot be read by .*JsonConverter"):
        write(tmp_path, [order(0), b"{not json", order(2)], **{"value.converter": JSON})
    directory = tmp_path / partition_dir(TOPIC, 0)
    assert [n for n in os.listdir(directory) if not n.startswith(".")] == []


def test_with_tolerance_all_bad_records_are_skipped_and_sent_before_the_file(tmp_path: Path) -> None:
    kept = Kept()
    values = [order(0), b"{not json", order(2), b'{"schema":{"type":"int64"},"payload":1}']
    write(tmp_path, values, kept, **{"value.converter": JSON, "errors.tolerance": "all",
                                     "errors.deadletterqueue.topic.name": "dlq"})
    assert table(tmp_path).column("offset").to_pylist() == [0, 2]
    assert [(d.offset, d.value) for d in kept.sent] == [(1, b"{not json"), (3, values[3])]


def test_the_default_converter_keeps_the_untyped_files(tmp_path: Path) -> None:
    write(tmp_path, [b"x", None])
    got = table(tmp_path)
    assert got.schema.names == ["offset", "timestamp", "key", "value"]
    assert got.column("value").to_pylist() == [b"x", None]


def test_a_clean_batch_gives_the_rows_a_batch_with_failures_keeps() -> None:
    """`typed_rows` of a batch where every record decodes (no take: the batch's own columns)
    equals what is kept of the same records with undecodable ones among them (taken)."""
    key = envelope(struct(("tenant", Schema("string")),), {"tenant": "x"})
    keys = [key, None, key, key]
    values = [order(0), order(1), b'"no"', order(3)]
    converters = (converter({"key.converter": JSON}, "key"), converter({"value.converter": JSON}, "value"))

    def batch(indexes: list[int]) -> pa.Table:
        return pa.Table.from_batches([records_to_batch([SinkRecord(TOPIC, 0, i, keys[i], values[i], 1_000 + i, None)
                                                        for i in indexes])])

    mixed, clean = typed_rows(batch([0, 1, 2, 3]), *converters), typed_rows(batch([0, 1, 3]), *converters)
    assert [f.index for f in mixed.failures] == [2] and not clean.failures
    assert mixed.table.to_pylist() == clean.table.to_pylist() and mixed.table.schema == clean.table.schema
    assert clean.table.column("key").to_pylist() == [{"tenant": "x"}, None, {"tenant": "x"}]
