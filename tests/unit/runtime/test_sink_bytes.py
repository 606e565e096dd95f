"""`payload_bytes`: the key and value bytes a sink batch carries, as metrics count them."""

from __future__ import annotations

import pyarrow as pa

from reconciler.connectors.api import sink_schema
from reconciler.runtime.sink.task import payload_bytes


def batch(keys: list[bytes | None], values: list[bytes | None]) -> pa.RecordBatch:
    n = len(keys)
    schema = sink_schema()
    return pa.RecordBatch.from_arrays(
        [
            pa.array(["t"] * n),
            pa.array([0] * n, pa.int32()),
            pa.array(range(n), pa.int64()),
            pa.array([0] * n, pa.int64()),
            pa.array(keys, pa.binary()),
            pa.array(values, pa.binary()),
            pa.array([None] * n, schema.field("headers").type),
        ],
        schema=schema,
    )


def test_keys_and_values_are_counted_and_nulls_are_nothing() -> None:
    assert payload_bytes(batch([b"ab", None, b"c"], [b"xyz", b"", None])) == 2 + 1 + 3


def test_a_slice_counts_only_its_own_rows() -> None:
    whole = batch([b"ab", None, b"c"], [b"xyz", b"", None])
    assert payload_bytes(whole.slice(1, 2)) == 1
    assert payload_bytes(whole.slice(0, 0)) == 0
