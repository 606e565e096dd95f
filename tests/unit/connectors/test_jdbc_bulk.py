"""jdbc-sink's columnar batch (`jdbc.bulk`): what each transaction of a flush writes, read once
for the whole flush. Pure (Arrow only): the database's side is tests/integration/stores/test_jdbc_sink_task.py."""

from __future__ import annotations

import pyarrow as pa

from reconciler.connectors.api import SinkRecord, records_to_batch
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.jdbc.bulk import columnar, to_csv, transaction_rows
from reconciler.connectors.jdbc.config import JdbcSinkSettings

JSON = "org.apache.kafka.connect.json.JsonConverter"
VALUE = struct(("id", Schema("int64")), ("name", Schema("string", optional=True)))
BASE = {"name": "sink", "topics": "orders", "connection.url": "jdbc:postgresql://db.example/shop", "value.converter": JSON}


def flush(ids: list[int]) -> pa.Table:
    """A flush of one record per id, the record at offset i named `v<i>`."""
    values = [envelope(VALUE, {"id": id_, "name": f"v{i}"}) for i, id_ in enumerate(ids)]
    return pa.Table.from_batches([records_to_batch([SinkRecord("orders", 0, i, None, v, 0) for i, v in enumerate(values)])])


def read(rows: pa.Table, **extra: str) -> tuple[JdbcSinkSettings, list[list[dict[str, object]]]]:
    config = {**BASE, **extra}
    settings = JdbcSinkSettings.parse(config)
    found = columnar(rows, converter(config, "key"), converter(config, "value"), settings, "orders")
    assert found is not None
    size = settings.batch_size
    return settings, [transaction_rows(found, start, size).to_pylist() for start in range(0, rows.num_rows, size)]


def test_upsert_writes_each_keys_last_value_of_each_transaction_in_record_order() -> None:
    rows = flush([1, 2, 1, 3, 2, 2, 4, 1])
    _, transactions = read(rows, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
                                    "batch.size": "5"})
    assert transactions == [
        [{"id": 1, "name": "v2"}, {"id": 3, "name": "v3"}, {"id": 2, "name": "v4"}],
        [{"id": 2, "name": "v5"}, {"id": 4, "name": "v6"}, {"id": 1, "name": "v7"}],
    ]


def test_insert_writes_every_record_once_in_its_transaction() -> None:
    _, transactions = read(flush([1, 1, 2, 2, 2]), **{"batch.size": "3"})
    assert [[r["name"] for r in t] for t in transactions] == [["v0", "v1", "v2"], ["v3", "v4"]]
    assert to_csv(pa.Table.from_pylist(transactions[0])).to_pybytes().splitlines() == [b'1,"v0"', b'1,"v1"', b'2,"v2"']
