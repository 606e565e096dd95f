"""Connect values written as `JsonConverter.fromConnectData` writes them, byte for byte.

Pure. With `schemas.enable` the bytes are the envelope `{"schema":…,"payload":…}` a Java sink
reads; without it, the payload alone. Jackson's output is matched: compact UTF-8, keys in
JsonConverter's order (a struct's fields in schema order; a schema's keys `type`, then
`items`/`keys`,`values`/`fields`, `optional`, `name`, `version`, `doc`, `parameters`, `default`,
and a field's `field` last), doubles as Java's `Double.toString`, floats as `Float.toString`,
decimals as BASE64 of the unscaled value's two's-complement bytes or as `BigDecimal.toString`,
bytes as padded base64, non-finite numbers as the strings `"NaN"`, `"Infinity"`.

Values in Python: a struct or a string-keyed map as a mapping, any map also as (key, value)
pairs, an array as a list, a Decimal as `decimal.Decimal` (it must fit the schema's scale),
a Date as `datetime.date` or days, a Time as `datetime.time` or milliseconds, a Timestamp as
`datetime.datetime` (naive means UTC) or epoch milliseconds.
"""

from __future__ import annotations

import base64
import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from reconciler.connectors.converters.schema import DATE, DECIMAL, TIME, TIMESTAMP, DataError, Schema, to_json
from reconciler.connectors.converters.settings import Converter, DecimalFormat
from reconciler.kafka.formats.jackson import encode_string, jackson_text, java_double, java_float

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_BITS: Final = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}


_SIMPLE: Final[dict[str, type | tuple[type, ...]]] = {
    "boolean": bool, "string": str, "bytes": (bytes, bytearray, memoryview)}


STRING: Final = Schema("string")
# StringConverter charsets whose bytes of any text are its UTF-8 bytes.
_UTF8_CODECS: Final = ("utf-8",)


class Float32(float):
    """A float written as Java's `Float.toString` (a FLOAT32 value)."""


def encode(converter: Converter, schema: Schema | None, value: Any) -> bytes | None:
    """`converter`'s bytes for a Connect value (None for a tombstone: no schema, no value)."""
    if converter.kind == "json":
        if converter.schemas_enable:
            return envelope(schema, value, converter.decimal_format)
        return None if schema is None and value is None else dumps(to_node(schema, value, converter.decimal_format))
    if value is None:
        return None
    if converter.kind == "string":
        return _string_bytes(value if isinstance(value, str) else str(value), converter.encoding)
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise DataError(f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}")
    return bytes(value)


def envelope_template(schema: Schema) -> tuple[bytes, bytes]:
    """(head, tail) so that `head + payload + tail` is the envelope of a value of `schema` whose
    payload JSON is `payload` (for sources that build their values' bytes themselves)."""
    return b'{"schema":' + dumps(to_json(schema)) + b',"payload":', b"}"


def text_encoder(converter: Converter, as_is: Sequence[str] = _UTF8_CODECS) -> Callable[[bytes], bytes] | None:
    """How `converter` writes a STRING value (non-optional, as Java's FileStreamSource's records)
    given as its UTF-8 bytes: JsonConverter's envelope `{"schema":{"type":"string",…},"payload":"…"}`
    or, without schemas, the JSON string; StringConverter's charset. None: the bytes as they are
    (ByteArrayConverter, and StringConverter of a charset in `as_is`). Raises UnicodeDecodeError."""
    if converter.kind == "json":
        head, tail = envelope_template(STRING) if converter.schemas_enable else (b"", b"")
        return lambda raw: head + jackson_text(encode_string(raw.decode("utf-8"))) + tail
    if converter.kind == "string" and converter.encoding not in as_is:
        codec = converter.encoding
        return lambda raw: _string_bytes(raw.decode("utf-8"), codec)
    return None


def text_values(converter: Converter, raw: list[bytes | None],
                as_is: Sequence[str] = _UTF8_CODECS) -> list[bytes | None]:
    """`text_encoder`'s bytes of each UTF-8 text (None stays None)."""
    write = text_encoder(converter, as_is)
    return raw if write is None else [None if r is None else write(r) for r in raw]


def _string_bytes(text: str, codec: str) -> bytes:
    if codec == "utf-16":  # Java: a big-endian byte order mark, then big-endian
        return b"\xfe\xff" + text.encode("utf-16-be", errors="replace")
    return text.encode(codec, errors="replace")


def envelope(schema: Schema | None, value: Any, decimal_format: DecimalFormat = "BASE64") -> bytes | None:
    """`{"schema":…,"payload":…}` as JsonConverter with `schemas.enable=true` writes it."""
    if schema is None and value is None:
        return None
    schema_json = to_json(schema, lambda s, v: to_node(s, v, decimal_format))
    return dumps({"schema": schema_json, "payload": to_node(schema, value, decimal_format)})


def to_node(schema: Schema | None, value: Any, decimal_format: DecimalFormat = "BASE64",
            replace_null_with_default: bool = True) -> Any:
    """The JSON tree of a Connect value (`JsonConverter.convertToJson`); raises `DataError`."""
    if value is None:
        if schema is None:
            return None
        if schema.default is not None and replace_null_with_default:
            return to_node(schema, schema.default, decimal_format)
        if schema.optional:
            return None
        raise DataError("Conversion error: null value for field that is required and has no default value")
    if schema is not None and schema.logical:
        return _logical(schema, value, decimal_format)
    kind = schema.type if schema is not None else _schemaless_type(value)
    if kind in _BITS:
        return _integer(value, _BITS[kind])
    if kind in ("float", "double"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise DataError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
        return Float32(value) if kind == "float" else float(value)
    simple: type | tuple[type, ...] | None = _SIMPLE.get(kind)
    if simple is not None:
        if not isinstance(value, simple):
            raise DataError(f"Invalid type for {kind.upper()}: {type(value).__name__}")
        return bytes(value) if isinstance(value, (bytearray, memoryview)) else value
    if kind == "array":
        items = schema.items if schema is not None else None
        return [to_node(items, element, decimal_format) for element in value]
    if kind == "map":
        return _map(schema, value, decimal_format)
    return _struct(schema, value, decimal_format)


def _schemaless_type(value: Any) -> str:
    """`ConnectSchema.schemaType` of a Python value (a value written without a schema)."""
    for python, kind in ((bool, "boolean"), (int, "int64"), (float, "double"), (str, "string"),
                         ((bytes, bytearray, memoryview), "bytes"), ((list, tuple), "array"), (Mapping, "map")):
        if isinstance(value, python):
            return kind
    raise DataError(f"Java class {type(value).__name__} does not have corresponding schema type.")


def _integer(value: Any, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise DataError(f"Invalid type for INT{bits}: {type(value).__name__}")
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise DataError(f"{value} does not fit INT{bits}")
    return value


def _map(schema: Schema | None, value: Any, decimal_format: DecimalFormat) -> Any:
    pairs = list(value.items()) if isinstance(value, Mapping) else [tuple(pair) for pair in value]
    keys, items = (schema.keys, schema.items) if schema is not None else (None, None)
    string_keys = keys.type == "string" if keys is not None else all(isinstance(k, str) for k, _ in pairs)
    if string_keys:
        return {str(to_node(keys, k, decimal_format)): to_node(items, v, decimal_format) for k, v in pairs}
    return [[to_node(keys, k, decimal_format), to_node(items, v, decimal_format)] for k, v in pairs]


def _struct(schema: Schema | None, value: Any, decimal_format: DecimalFormat) -> dict[str, Any]:
    if schema is None or not isinstance(value, Mapping):
        raise DataError("Mismatching schema.")
    unknown = set(value) - {f.name for f in schema.fields}
    if unknown:
        raise DataError(f"{sorted(unknown)[0]} is not a valid field name")
    return {f.name: to_node(f.schema, value.get(f.name), decimal_format) for f in schema.fields}


def _logical(schema: Schema, value: Any, decimal_format: DecimalFormat) -> Any:
    if schema.name == DECIMAL:
        unscaled = _unscaled(schema, value)
        if decimal_format == "NUMERIC":
            return Decimal(f"{unscaled}E{-schema.scale()}")
        size = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1  # BigInteger.toByteArray
        return unscaled.to_bytes(size, "big", signed=True)
    if schema.name == DATE:
        if isinstance(value, dt.datetime) or not isinstance(value, (dt.date, int)) or isinstance(value, bool):
            raise DataError(f"Invalid type for Date, expected Date but was {type(value).__name__}")
        return _integer(value, 32) if isinstance(value, int) else (value - dt.date(1970, 1, 1)).days
    if schema.name == TIME:
        if isinstance(value, dt.time):
            return ((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000
        return _integer(value, 32)
    assert schema.name == TIMESTAMP
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=dt.timezone.utc)
        return (moment - _EPOCH) // dt.timedelta(milliseconds=1)
    return _integer(value, 64)


def _unscaled(schema: Schema, value: Any) -> int:
    """The decimal's unscaled value at the schema's scale (Java's `Decimal.fromLogical` refuses
    another scale; an exact rescale, `1.5` for scale 2, gives the bytes Java writes for `1.50`)."""
    if isinstance(value, bool) or not isinstance(value, (Decimal, int)):
        raise DataError(f"Invalid type for Decimal, expected BigDecimal but was {type(value).__name__}")
    scale = schema.scale()
    sign, digit_tuple, exponent = Decimal(value).as_tuple()
    if not isinstance(exponent, int):
        raise DataError(f"{value} is not a decimal number")
    digits: int = int("".join(map(str, digit_tuple))) * (-1 if sign else 1)
    if exponent >= -scale:
        scaled: int = digits * 10 ** (exponent + scale)
        return scaled
    divisor = 10 ** (-scale - exponent)
    if digits % divisor:
        raise DataError("Decimal value has mismatching scale for given Decimal schema. "
                        f"Schema has scale {scale}, value has scale {-exponent}.")
    unscaled: int = digits // divisor
    return unscaled


# --- Jackson's bytes --------------------------------------------------------------------------


def dumps(node: Any) -> bytes:
    """A JSON tree (as `to_node` builds it) as Jackson writes it."""
    return jackson_text("".join(_write(node)))


def _write(node: Any) -> Any:
    if node is None:
        yield "null"
    elif isinstance(node, bool):
        yield "true" if node else "false"
    elif isinstance(node, int):
        yield str(node)
    elif isinstance(node, float):
        yield _float(node)
    elif isinstance(node, Decimal):
        yield str(abs(node) if node.is_zero() else node)  # BigDecimal.toString: no negative zero
    elif isinstance(node, str):
        yield encode_string(node)
    elif isinstance(node, bytes):
        yield '"' + base64.b64encode(node).decode("ascii") + '"'
    elif isinstance(node, list):
        yield "["
        for i, element in enumerate(node):
            yield from ("," if i else "", *_write(element))
        yield "]"
    else:
        yield "{"
        for i, (key, element) in enumerate(node.items()):
            yield from ("," if i else "", encode_string(key), ":", *_write(element))
        yield "}"


def _float(value: float) -> str:
    if math.isnan(value):
        return '"NaN"'  # Jackson's WRITE_NAN_AS_STRINGS
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    return java_float(value) if isinstance(value, Float32) else java_double(value)
