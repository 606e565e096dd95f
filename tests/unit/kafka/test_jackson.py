"""`jackson`: JSON read as Java's `JsonDeserializer` reads it, and written as it writes it."""

from __future__ import annotations

import pytest

from reconciler.kafka.formats import jackson
from reconciler.kafka.formats import records as rec


@pytest.mark.parametrize("data", [b"", b"   ", b"\n\t\r ", "\ufeff".encode()])
def test_no_value_reads_as_null(data: bytes) -> None:
    """`readTree` gives a MissingNode, which the converter turns into null."""
    assert jackson.loads(data) is None


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b'{"tasks":007}', {"tasks": 7}),  # ALLOW_LEADING_ZEROS_FOR_NUMBERS
        (b'{"a":-007,"b":00.5,"c":000,"d":1e05,"e":10,"f":1.05}', {"a": -7, "b": 0.5, "c": 0, "d": 1e5, "e": 10, "f": 1.05}),
        (b'{"s":"007","n":[01, 0]}', {"s": "007", "n": [1, 0]}),  # zeros inside strings stay
        (b'{"tasks":2}garbage', {"tasks": 2}),  # FAIL_ON_TRAILING_TOKENS is off
        (b'{"tasks":2}}', {"tasks": 2}),
        (b'["c",{"p":1}] ["d"]', ["c", {"p": 1}]),
        (b'  {"a":1}  ', {"a": 1}),
        ("\ufeff{\"a\":1}".encode(), {"a": 1}),  # a UTF-8 byte-order mark is skipped
        (b'"x"y', "x"),
        (b"5 6", 5),
        (b"true]", True),
        (b'{"e":"\\ud800"}', {"e": "\ud800"}),  # an escaped lone surrogate
    ],
)
def test_what_jackson_accepts_beyond_json(data: bytes, expected: object) -> None:
    assert jackson.loads(data) == expected


@pytest.mark.parametrize(
    "data",
    [b'{"a":NaN}', b'{"a":Infinity}', b"-Infinity", b"5x", b"truex", b"nul", b'{"a":', b"\xff\xfe{}", b"{'a':1}"],
)
def test_what_jackson_refuses(data: bytes) -> None:
    with pytest.raises(jackson.JsonError):
        jackson.loads(data)
    assert isinstance(rec.loads(data), rec.Invalid)


def test_offsets_key_bytes_equal_what_java_wrote() -> None:
    """Bytes a Java 4.3.1 worker wrote for `PATCH /connectors/fs/offsets` with this partition:
    fields in its HashMap's order, the emoji as two escaped surrogates."""
    partition = {"filename": "f😀.txt", "zone": "eu", "shard": "x", "a": 1, "table": "t"}
    java = b'["fs",{"a":1,"filename":"f\\uD83D\\uDE00.txt","zone":"eu","shard":"x","table":"t"}]'
    assert rec.encode_offset_key("fs", partition) == java
    decoded = rec.decode_offset_key(java)
    assert not isinstance(decoded, rec.Invalid)
    name, read = decoded
    assert (name, read) == ("fs", partition)
    assert rec.encode_offset_key(name, read) == java
