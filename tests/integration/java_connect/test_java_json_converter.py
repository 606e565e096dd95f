"""Java's own JsonConverter (4.3.1, the pinned jars) reads the envelopes we write and writes them
again: the bytes must come back the same (docs/converters.md#writing). One JVM per batch of
Hypothesis-drawn schemas and values; `java/JsonConverterProbe.java` is the Java side."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from converter_strategies import schema_and_value
from reconciler.connectors.converters import encode
from reconciler.connectors.converters import schema as S
from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.records import read_json
from reconciler.connectors.converters.settings import Converter
from reconciler.devtools.jvm import java_binary, kafka_classpath

pytestmark = pytest.mark.integration
PROBE = Path(__file__).resolve().parent / "java" / "JsonConverterProbe.java"


def java_rewrites(records: list[tuple[bool, str, bytes]]) -> list[str]:
    """What Java's JsonConverter (schemas.enable, decimal.format) writes after reading each
    record (base64), or `ERR <reason>`: one JVM for them all."""
    lines = "".join(f"{str(schemas).lower()} {fmt} {base64.b64encode(raw).decode()}\n" for schemas, fmt, raw in records)
    done = subprocess.run([str(java_binary()), "-cp", kafka_classpath().argument(), str(PROBE)],
                          input=lines, capture_output=True, text=True, timeout=120, check=True)
    return done.stdout.split("\n")[: len(records)]


@settings(max_examples=1, deadline=None, phases=(Phase.generate,), suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(schema_and_value(), st.sampled_from(["BASE64", "NUMERIC"])), min_size=200, max_size=200))
def test_java_reads_our_envelopes_and_writes_the_same_bytes(drawn: list[tuple[tuple[S.Schema, Any], str]]) -> None:
    records = [(True, fmt, encode.envelope(schema, value, fmt) or b"") for (schema, value), fmt in drawn]
    java = java_rewrites(records)
    assert [line for line in java if line.startswith("ERR")] == []
    mismatched = [(raw.decode(), base64.b64decode(line).decode()) for ((schema, _), _), (_, _, raw), line
                  in zip(drawn, records, java, strict=True) if not _same(schema, raw, base64.b64decode(line))]
    assert mismatched[:3] == []


def _same(schema: S.Schema, ours: bytes, java: bytes) -> bool:
    """The same bytes; or, where a map is (Java writes its HashMap in hash order), the same values."""
    if not _has_map(schema):
        return ours == java
    read_ours, read_java = (read_json([raw], Converter("json")) for raw in (ours, java))
    return _unordered(schema, read_ours.values[0]) == _unordered(schema, read_java.values[0])


def _has_map(schema: S.Schema | None) -> bool:
    if schema is None:
        return False
    return schema.type == "map" or any(_has_map(s) for s in (schema.items, *(f.schema for f in schema.fields)))


def _unordered(schema: S.Schema, value: Any) -> Any:
    if value is None or not _has_map(schema):
        return value
    if schema.type == "map":
        assert schema.items is not None
        return sorted((repr(k), repr(_unordered(schema.items, v))) for k, v in value)
    if schema.type == "array":
        assert schema.items is not None
        return [_unordered(schema.items, v) for v in value]
    return {f.name: _unordered(f.schema, value[f.name]) for f in schema.fields}


def test_java_schemaless_json_is_read_as_columns_and_what_java_refuses_is_a_failure() -> None:
    plain = [b'{"id":1,"tags":["a"],"price":1.5}', b'{"id":2,"extra":{"x":true}}']
    refused = [b'{"schema":{"type":"int32"},"payload":null}', b'{"payload":1}', b'{"schema":{"type":"x"},"payload":1}']
    java = java_rewrites([(False, "BASE64", raw) for raw in plain] + [(True, "BASE64", raw) for raw in refused])

    decoded = decode([base64.b64decode(line) for line in java[:2]], Converter("json", schemas_enable=False))
    assert decoded.failures == []
    assert decoded.table.to_pylist() == [
        {"id": 1, "tags": ["a"], "price": 1.5, "extra": None},
        {"id": 2, "tags": None, "price": None, "extra": {"x": True}},
    ]
    assert all(line.startswith("ERR") for line in java[2:])
    assert [f.index for f in decode(refused, Converter("json")).failures] == [0, 1, 2]
