"""JsonConverter's bytes read into typed columns and written back as Java writes them
(`reconciler.connectors.converters`, docs/converters.md)."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from converter_strategies import schema_and_value
from reconciler.connectors.converters import encode, infer
from reconciler.connectors.converters import schema as S
from reconciler.connectors.converters.arrow import _utf8, arrow_type, decode
from reconciler.connectors.converters.records import read_json
from reconciler.connectors.converters.settings import Converter

JSON = Converter("json")
PLAIN = Converter("json", schemas_enable=False)
# Written by Java's JsonConverter 4.3.1 (tests/integration/java_connect/java/JsonConverterProbe.java).
JAVA = Path(__file__).resolve().parents[2] / "fixtures" / "converters" / "java_envelopes.txt"
ROW = S.struct(
    ("id", S.Schema("int32")), ("name", S.Schema("string", optional=True)), ("price", S.decimal(2)),
    ("tags", S.Schema("array", items=S.Schema("string"))),
    ("attrs", S.Schema("map", optional=True, keys=S.Schema("string"), items=S.Schema("int64"))),
    ("ts", S.Schema("int64", name=S.TIMESTAMP, version=1)), ("day", S.Schema("int32", name=S.DATE, version=1)),
    ("f", S.Schema("float")), ("d", S.Schema("double")), ("raw", S.Schema("bytes", optional=True)),
)
VALUE = {"id": 1, "name": "a\u00e9\U0001f600", "price": Decimal("12.30"), "tags": ["x"], "attrs": {"k": 5},
         "ts": 1_700_000_000_000, "day": 19_000, "f": 0.1, "d": 1e-7, "raw": b"\x00\xff"}


def java_lines() -> list[bytes]:
    return [base64.b64decode(line) for line in JAVA.read_text().split()]


def test_java_bytes_decode_into_typed_columns() -> None:
    decoded = decode(java_lines()[:1], JSON)
    assert decoded.failures == [] and decoded.rows == [0]
    assert decoded.table.schema.field("price").type == pa.decimal128(38, 2)
    assert decoded.table.schema.field("ts").type == pa.timestamp("ms", tz="UTC")
    (row,) = decoded.table.to_pylist()
    assert row["price"] == Decimal("12.30") and row["name"] == "a\u00e9\U0001f600"
    assert row["ts"] == dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.timezone.utc)
    assert row["day"] == dt.date(2022, 1, 8) and row["attrs"] == [("k", 5)] and row["raw"] == b"\x00\xff"
    assert row["f"] == pytest.approx(0.1) and row["d"] == 1e-7


def test_our_envelope_is_the_bytes_java_wrote() -> None:
    assert encode.envelope(ROW, VALUE) == java_lines()[0]
    assert encode.envelope(ROW, VALUE, "NUMERIC") == java_lines()[1]


def test_the_envelope_keeps_javas_key_order_and_number_formats() -> None:
    schema = S.struct(("x", S.Schema("double")), ("y", S.Schema("float")), ("n", S.decimal(3, optional=True)))
    text = encode.envelope(schema, {"x": 100.0, "y": 3.4028234663852886e38, "n": Decimal("-0.000")}, "NUMERIC")
    assert text == (b'{"schema":{"type":"struct","fields":[{"type":"double","optional":false,"field":"x"},'
                    b'{"type":"float","optional":false,"field":"y"},{"type":"bytes","optional":true,'
                    b'"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"3"},'
                    b'"field":"n"}],"optional":false},"payload":{"x":100.0,"y":3.4028235E38,"n":0.000}}')


@pytest.mark.parametrize(("schema", "payload", "value"), [
    ({"type": "int8"}, "300", 44), ({"type": "int32"}, "1.9", 1), ({"type": "int64"}, '"7"', 0),
    ({"type": "boolean"}, "1", False), ({"type": "array", "items": {"type": "int32"}}, '{"a":1}', [1]),
    ({"type": "bytes", "name": S.DECIMAL, "parameters": {"scale": "2"}}, '"BM4="', Decimal("12.30")),
    ({"type": "bytes", "name": S.DECIMAL, "parameters": {"scale": "2"}}, "12.3", Decimal("12.3")),
    ({"type": "map", "keys": {"type": "int32"}, "values": {"type": "string"}}, '[[1,"a"],[1,"b"]]', [(1, "b")]),
])
def test_javas_leniency_is_kept(schema: dict[str, Any], payload: str, value: Any) -> None:
    raw = f'{{"schema":{_json(schema)},"payload":{payload}}}'.encode()
    read = read_json([raw], JSON)
    assert read.failures == [] and read.values == [value]


def _json(node: dict[str, Any]) -> str:
    return json.dumps(node)


@pytest.mark.parametrize(("raw", "reason"), [
    (b"{not json", "serialization error"),
    (b'{"a":1}', 'requires "schema" and "payload" fields'),
    (b'{"schema":{"type":"int32"},"payload":null}', "Invalid null value for required INT32 field"),
    (b'{"schema":{"type":"nope"},"payload":1}', "Unknown schema type: nope"),
    (b'{"schema":{"type":"struct","fields":[{"type":"string","field":"s"}]},"payload":{"s":1}}',
     'null used for required field: "s"'),
    (b'{"schema":{"type":"int32","name":"org.apache.kafka.connect.data.Time"},"payload":86400001}', "Time values"),
])
def test_a_record_java_refuses_is_a_failure_not_an_exception(raw: bytes, reason: str) -> None:
    good = encode.envelope(S.Schema("int32"), 5)
    decoded = decode([good, raw, None], JSON)
    assert [f.index for f in decoded.failures] == [1] and reason in decoded.failures[0].reason
    assert decoded.rows == [0, 2] and decoded.table.column("value").to_pylist() == [5, None]


def test_a_decimal_arrow_cannot_hold_fails() -> None:
    raw = b'{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"1"}},'
    decoded = decode([raw + b'"payload":1.25}', raw + b'"payload":1.5}'], JSON)
    assert [f.index for f in decoded.failures] == [0] and "more than the 1 fraction digits" in decoded.failures[0].reason
    assert decoded.table.column("value").to_pylist() == [Decimal("1.5")]


def test_what_arrow_cannot_hold_fails_its_records_only() -> None:
    text = b'{"schema":{"type":"string"},"payload":%s}'
    decoded = decode([text % b'"a"', text % b'"\\ud800"'], JSON)  # Java's strings may hold a lone surrogate
    assert decoded.rows == [0] and [f.index for f in decoded.failures] == [1]
    no_scale = b'{"schema":{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal"},"payload":1.5}'
    decoded = decode([no_scale], JSON)
    assert decoded.rows == [] and "scale parameter not found" in decoded.failures[0].reason


def test_schemaless_json_gets_a_schema_inferred_per_batch() -> None:
    raws = [b'{"a":1,"b":{"c":[1,2.5]},"s":"x"}', b'{"a":2.5,"s":3,"z":null}', None, b'{"big":123456789012345678901}']
    decoded = decode(raws, PLAIN)
    assert decoded.table.schema == pa.schema([
        ("a", pa.float64()), ("b", pa.struct([("c", pa.list_(pa.field("element", pa.float64())))])),
        ("s", pa.string()), ("z", pa.null()), ("big", pa.int64())])
    assert decoded.table.column("s").to_pylist() == ["x", "3", None]
    assert [f.index for f in decoded.failures] == [3] and "outside int64's range" in decoded.failures[0].reason


def test_merged_struct_schemas_and_a_conflicting_one() -> None:
    first = encode.envelope(S.struct(("a", S.Schema("int32"))), {"a": 1})
    second = encode.envelope(S.struct(("a", S.Schema("int32")), ("b", S.Schema("string"))), {"a": 2, "b": "x"})
    clash = encode.envelope(S.struct(("a", S.Schema("string"))), {"a": "no"})
    decoded = decode([first, second, clash], JSON)
    assert decoded.table.to_pylist() == [{"a": 1, "b": None}, {"a": 2, "b": "x"}]
    assert [f.index for f in decoded.failures] == [2]


def test_string_and_bytes_converters() -> None:
    assert decode([b"caf\xc3\xa9", b"\xff", None], Converter("string")).table.column("value").to_pylist() == [
        "café", "\ufffd", None]
    assert decode([b"\x00\xfe"], Converter("string", encoding="utf-16")).table.column("value").to_pylist() == ["\u00fe"]
    assert encode.encode(Converter("string", encoding="utf-16"), None, "é") == b"\xfe\xff\x00\xe9"
    assert decode([b"\x01", None], Converter(), name="key").table.column("key").to_pylist() == [b"\x01", None]


# Well-formed UTF-8 at its edges, and what is not: a surrogate, overlong forms, past U+10FFFF,
# a cut sequence, a 5-byte form (Java's decoder replaces each malformed sequence with U+FFFD).
UTF8_EDGES = [b"\xf4\x8f\xbf\xbf", b"\xef\xbb\xbfx", b"\xef\xbf\xbe", b"\xf0\x9f\x98\x80", b"\xed\x9f\xbf",
              b"\xee\x80\x80", b"", b"\x00", b"\xed\xa0\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80",
              b"\xe2\x82", b"\xf8\x88\x80\x80\x80", b"\xff"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.none() | st.binary(max_size=6) | st.text(max_size=4).map(str.encode) | st.sampled_from(UTF8_EDGES),
                max_size=6))
def test_utf8_strings_cast_in_arrow_read_as_each_record_is(values: list[bytes | None]) -> None:
    """A StringConverter batch cast by Arrow (every value well-formed UTF-8) gives what the
    per-record reading gives, and a batch with one malformed value goes that way (U+FFFD)."""
    string = Converter("string")
    for column in (pa.array(values, pa.binary()), pa.chunked_array([pa.array(values, pa.large_binary())])):
        fast, slow = decode(column, string, "key"), decode(column, string, "key", fast=False)
        assert fast.table.to_pylist() == slow.table.to_pylist() and fast.table.schema == slow.table.schema
        assert fast.rows == slow.rows == list(range(len(values))) and fast.complete(len(values))


def test_utf8_strings_take_the_arrow_cast_only_when_every_value_is_well_formed() -> None:
    assert _utf8(pa.array([b"caf\xc3\xa9", None, *UTF8_EDGES[:6]], pa.binary())) is not None
    for malformed in UTF8_EDGES[8:]:
        assert _utf8(pa.array([b"a", malformed], pa.binary())) is None


def test_java_number_text() -> None:
    node = [1e7, 1e-3, 1.5e-4, 5e-324, encode.Float32(1.4e-45), encode.Float32(16777217.0), Decimal("1E+3"),
            Decimal("0.0000001")]
    assert encode.dumps(node) == b"[1.0E7,0.001,1.5E-4,4.9E-324,1.4E-45,1.6777216E7,1E+3,1E-7]"


def test_inference_rules() -> None:
    assert infer.infer([1, Decimal("1.5")]) == S.Schema("double", optional=True)
    assert infer.infer([1, "x"]) is infer.JSON_TEXT
    assert infer.infer([None, []]).type == "array"


def _expected(schema: S.Schema, value: Any) -> Any:
    """`value` (as the strategies give it) as `to_connect` reads it back."""
    if value is None or schema.logical:
        return value
    if schema.type == "array":
        assert schema.items is not None
        return [_expected(schema.items, v) for v in value]
    if schema.type == "map":
        assert schema.items is not None
        return [(k, _expected(schema.items, v)) for k, v in value]
    if schema.type == "struct":
        return {f.name: _expected(f.schema, value[f.name]) for f in schema.fields}
    return value


@settings(max_examples=120, deadline=None)
@given(schema_and_value())
def test_decode_reads_back_what_encode_wrote(pair: tuple[S.Schema, Any]) -> None:
    schema, value = pair
    for fmt in ("BASE64", "NUMERIC"):
        raw = encode.encode(Converter("json", decimal_format=fmt), schema, value)
        read = read_json([raw], JSON)
        assert read.failures == [] and read.values == [_expected(schema, value)]
        decoded = decode([raw], JSON)
        assert decoded.rows == [0] and decoded.table.num_rows == 1
        if schema.type != "struct":
            assert decoded.table.schema.field("value").type == arrow_type(schema)
    plain = decode([encode.encode(PLAIN, schema, value)], PLAIN)
    assert plain.rows == [0] or plain.failures


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=3)
    | st.decimals(allow_nan=False, allow_infinity=False, places=2),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_JSON, max_size=6))
def test_inference_skips_records_like_the_others_without_changing_the_result(nodes: list[Any]) -> None:
    reference = infer.NULL
    for node in nodes:
        reference = infer.merge(reference, infer.schema_of(node))
    assert infer.infer(nodes) == reference
