"""The C++ read of a batch with one schema (converters.uniform) against the per-record reader:
the same table, rows and failures for every batch, lenient and malformed payloads included, and
the fast path taken for the batches it is for."""

from __future__ import annotations

import json
import math
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reconciler.connectors.converters import encode
from reconciler.connectors.converters import schema as S
from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.encode import to_json
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.converters.uniform import read_uniform

JSON = Converter("json")
FAST_TYPES = ("boolean", "int8", "int16", "int32", "int64", "float", "double", "string")
# Payload texts per type: what Java reads (and Arrow may refuse) and what nobody reads.
_INTS = st.integers(-(2**65), 2**65).map(str)
_TEXTS = {
    "number": _INTS | st.floats(allow_nan=False).map(repr).filter(lambda t: "inf" not in t)
    | st.sampled_from(["1.5", "-0", "1e2", "1E-400", "1e400", "007", "NaN", "Infinity", "-0.0", "4.9e-324",
                       "3.4028235677973366E38", "123456789012345678901234567890"]),
    "string": st.text(max_size=4).map(json.dumps)
    | st.sampled_from(['"\\ud800"', '"a\\u0000b"', '"\\ud83d\\ude00"', '"\\/"', '"\xe9"', '"\\.'"'"]),
    "other": st.sampled_from(["null", "true", "false", '"7"', "[1]", '{"a":1}', "1"]),
}
_VALUE_TEXT = _TEXTS["number"] | _TEXTS["string"] | _TEXTS["other"]
_BITS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


def clean(kind: str) -> st.SearchStrategy[str]:
    """A value of `kind` as Java writes it, which the fast read takes."""
    if kind in _BITS:
        return st.integers(-(2 ** (_BITS[kind] - 1)), 2 ** (_BITS[kind] - 1) - 1).map(str)
    if kind in ("float", "double"):
        numbers = st.floats(allow_nan=False, allow_infinity=False, width=32 if kind == "float" else 64)
        return numbers.filter(lambda x: math.copysign(1, x) > 0 or x != 0).map(repr)  # -0.0: per record
    if kind == "boolean":
        return st.sampled_from(["true", "false"])
    return st.text(max_size=4).map(json.dumps)


@st.composite
def schemas(draw: st.DrawFn) -> S.Schema:
    names = draw(st.lists(st.sampled_from(["id", "name", "x", "pad", "é", "a b"]), min_size=1, max_size=4, unique=True))
    return S.struct(*[(n, S.Schema(draw(st.sampled_from(FAST_TYPES)), optional=draw(st.booleans()))) for n in names])


@st.composite
def payload(draw: st.DrawFn, schema: S.Schema, lenient: bool) -> str:
    parts = []
    for f in schema.fields:
        if lenient and draw(st.integers(0, 9)) == 0:
            continue  # missing
        if not lenient:
            parts.append(f"{json.dumps(f.name)}:{draw(clean(f.schema.type))}")
            continue
        kind = "string" if f.schema.type == "string" else "other" if f.schema.type == "boolean" else "number"
        text = draw(_VALUE_TEXT if draw(st.integers(0, 4)) == 0 else _TEXTS[kind])
        parts.append(f"{json.dumps(f.name)}:{text}")
    if lenient and draw(st.integers(0, 9)) == 0:
        parts.append('"extra":{"x":[1,2]}')
    return "{" + ",".join(parts) + "}"


def envelopes(schema: S.Schema, payloads: list[str]) -> list[bytes]:
    head, tail = encode.envelope_template(schema)
    return [head + p.encode() + tail for p in payloads]


def same(values: list[bytes | None]) -> None:
    fast, reference = decode(values, JSON), decode(values, JSON, fast=False)
    assert fast.rows == reference.rows and fast.failures == reference.failures and fast.struct == reference.struct
    assert fast.table.schema == reference.table.schema
    for a, b in zip(fast.table.to_pylist(), reference.table.to_pylist(), strict=True):
        assert a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)


def _equal(a: Any, b: Any) -> bool:
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or (
        a == b and (not isinstance(a, float) or math.copysign(1, a) == math.copysign(1, b)))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_the_fast_read_gives_what_the_per_record_reader_gives(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    lenient = data.draw(st.booleans())
    texts = data.draw(st.lists(payload(schema, lenient), min_size=1, max_size=8))
    same(envelopes(schema, texts))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_clean_batch_takes_the_fast_read(data: st.DataObject) -> None:
    schema = data.draw(schemas())
    texts = data.draw(st.lists(payload(schema, False), min_size=1, max_size=8))
    values = envelopes(schema, texts)
    uniform = read_uniform(values, JSON)
    assert uniform is not None and uniform.schema == schema
    same(values)


ROW = S.struct(("id", S.Schema("int64")), ("name", S.Schema("string", optional=True)), ("f", S.Schema("float")))


@pytest.mark.parametrize("values", [
    [encode.envelope(ROW, {"id": 1, "name": "a", "f": 0.1}), None],  # a tombstone
    [b'{"payload":{"id":1,"f":1},"schema":' + json.dumps(to_json(ROW)).encode() + b"}"],
    [encode.envelope(ROW, {"id": 1, "name": "a", "f": 0.1}), encode.envelope(S.struct(("id", S.Schema("int64"))), {"id": 2})],
    [encode.envelope(ROW, {"id": 1, "name": "a", "f": 0.1})[:-1] + b" }"],  # whitespace the prefix check leaves out
    envelopes(ROW, ['{"id":1,"f":1}\n', '{"id":2,\n"f":1}']),  # line breaks inside a payload
    envelopes(ROW, ['{"id":1,"f":1} {"id":3,"f":1}']),  # two objects in one payload
    envelopes(ROW, ['{"id":1,"f":1}', "null"]),  # a null payload (Arrow's reader crashes on a `null` line)
    envelopes(ROW, ['{"id":1,"f":1,"name":"\xff"}']),  # invalid UTF-8
    envelopes(ROW, ['{"id":1,"f":NaN}', '{"id":1,"f":1e39}']),
    envelopes(ROW, ['{"id":1,"f":1,"id":2}']),  # a duplicate key: Jackson keeps the last
    envelopes(S.struct(("payload", S.Schema("string")), name=',"payload":'), ['{"payload":"x"}']),
])
def test_batches_the_fast_read_leaves_to_the_per_record_reader(values: list[bytes | None]) -> None:
    same(values)


def test_the_fast_read_types() -> None:
    values = envelopes(ROW, ['{"id":9223372036854775807,"name":null,"f":3.4028235677973366E38}', '{"id":-1,"f":0.1}'])
    uniform = read_uniform(values, JSON)
    large = read_uniform(pa.chunked_array([pa.array(values[:1], pa.large_binary()), pa.array(values[1:], pa.large_binary())]), JSON)
    assert uniform is not None and large is not None and large.table.equals(uniform.table)
    assert uniform.table.schema == pa.schema([("id", pa.int64()), ("name", pa.string()), ("f", pa.float32())])
    assert uniform.table.column("f").to_pylist() == [math.inf, pytest.approx(0.1)]
    same(values)
