"""A JSON payload read against a Connect schema, as `JsonConverter.convertToConnect` reads it.

Pure. The input is parsed JSON as Jackson's tree holds it (`jackson.loads_exact`: integers as
`int`, other numbers as exact `Decimal`); the output is a Connect value in the shape pyarrow
takes for the schema's Arrow type (`converters.arrow`): a struct as a dict, a map as a list of
(key, value) pairs, a Decimal as `decimal.Decimal`, a Date as days, a Time as milliseconds of
the day, a Timestamp as epoch milliseconds, bytes as `bytes`.

Java's leniency is kept where it decides a value (docs/converters.md#reading-with-a-schema):
an integer schema takes any number and truncates and wraps it as Java's casts do, and a number
schema given a string, a boolean given a number, read as Java's Jackson accessors read them
(0, 0.0, false). Where Java would hand a sink a null for a required value (a string schema given
a number), the record fails, as Java fails it inside a struct (`Struct.put` validates).
"""

from __future__ import annotations

import base64
import binascii
import struct
from decimal import Decimal
from typing import Any, Final

from reconciler.connectors.converters.schema import DATE, DECIMAL, TIME, TIMESTAMP, DataError, Schema

MILLIS_PER_DAY: Final = 24 * 60 * 60 * 1000
_INT_BITS: Final = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_F32: Final = struct.Struct("<f")


def node_type(node: Any) -> str:
    """Jackson's `JsonNodeType` name of a parsed JSON value, for messages."""
    if node is None:
        return "NULL"
    if isinstance(node, bool):
        return "BOOLEAN"
    if isinstance(node, (int, Decimal)):
        return "NUMBER"
    names: dict[type, str] = {str: "STRING", list: "ARRAY", dict: "OBJECT"}
    return names.get(type(node), "POJO")


def to_connect(schema: Schema, node: Any, *, replace_null_with_default: bool = True,
               where: str = "value") -> Any:
    """The Connect value of JSON `node` for `schema`; raises `DataError` as Java does."""
    if node is None:
        if schema.default is not None and replace_null_with_default:
            return schema.default
        if schema.optional:
            return None
        raise DataError(f"Invalid null value for required {schema.describe()} field")
    logical = schema.logical
    value = _logical(schema, logical, node) if logical else _convert(schema, node, replace_null_with_default)
    if value is None and not schema.optional:
        # Java's `Struct.put` check (ConnectSchema.validateValue), made for every place.
        raise DataError(f"Invalid value: null used for required {where}, schema type: {schema.describe()}")
    return value


def _convert(schema: Schema, node: Any, replace: bool) -> Any:
    kind = schema.type
    if kind in _INT_BITS:
        return _wrap(_integral(node), _INT_BITS[kind] if kind == "int64" else 32, _INT_BITS[kind])
    if kind in ("float", "double"):
        number = float(node) if isinstance(node, (int, Decimal)) and not isinstance(node, bool) else 0.0
        return _float32(number) if kind == "float" else number
    if kind == "boolean":
        return node is True
    if kind == "string":
        return node if isinstance(node, str) else None
    if kind == "bytes":
        return _base64(node, "Invalid bytes field") if isinstance(node, str) else None
    if kind == "array":
        assert schema.items is not None
        elements = node if isinstance(node, list) else list(node.values()) if isinstance(node, dict) else []
        return [to_connect(schema.items, e, replace_null_with_default=replace, where="element of array")
                for e in elements]
    if kind == "map":
        return _map(schema, node, replace)
    return _struct(schema, node, replace)


def _integral(node: Any) -> int:
    """Jackson's `intValue()`/`longValue()` before the cast: the number truncated; 0 for any
    node that is not a number."""
    if isinstance(node, bool) or not isinstance(node, (int, Decimal)):
        return 0
    if isinstance(node, Decimal) and isinstance(exponent := node.as_tuple().exponent, int) and exponent > 64:
        # 1e100000000 is short text: only its low 64 bits count, and 10^k mod 2^64 gives them.
        sign, digits, _ = node.as_tuple()
        magnitude: int = int("".join(map(str, digits))) * pow(10, exponent, 2**64)
        return -magnitude if sign else magnitude
    return int(node)


def _wrap(number: int, first: int, bits: int) -> int:
    """Java's narrowing casts: to `first` bits (int or long), then to `bits` ((byte), (short))."""
    for width in (first, bits):
        number &= (1 << width) - 1
        if number >= 1 << (width - 1):
            number -= 1 << width
    return number


def _float32(number: float) -> float:
    try:
        return float(_F32.unpack(_F32.pack(number))[0])
    except OverflowError:  # Java's (float) of a larger double is infinite
        return float("inf") if number > 0 else float("-inf")


def _base64(text: str, message: str) -> bytes:
    """Jackson's base64 (the MIME variant without line feeds: standard alphabet, padded)."""
    try:
        return base64.b64decode("".join(text.split()), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DataError(f"{message}: {exc}") from None


def _map(schema: Schema, node: Any, replace: bool) -> list[tuple[Any, Any]]:
    assert schema.keys is not None and schema.items is not None
    if schema.keys.type == "string":
        if not isinstance(node, dict):
            raise DataError(f"Maps with string fields should be encoded as JSON objects, but found {node_type(node)}")
        return [(key, to_connect(schema.items, value, replace_null_with_default=replace, where="value of map"))
                for key, value in node.items()]
    if not isinstance(node, list):
        raise DataError(f"Maps with non-string fields should be encoded as JSON array of tuples, but found {node_type(node)}")
    pairs: dict[Any, Any] = {}
    for entry in node:
        if not isinstance(entry, list):
            raise DataError(f"Found invalid map entry instead of array tuple: {node_type(entry)}")
        if len(entry) != 2:
            raise DataError(f"Found invalid map entry, expected length 2 but found :{len(entry)}")
        key = to_connect(schema.keys, entry[0], replace_null_with_default=replace, where="key of map")
        if key is None:
            raise DataError("Invalid map key: null (an Arrow map's keys are never null)")
        pairs[_hashable(key)] = (key, to_connect(schema.items, entry[1], replace_null_with_default=replace,
                                                 where="value of map"))
    return list(pairs.values())  # Java's HashMap: one entry per key, the last value


def _hashable(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    return value


def _struct(schema: Schema, node: Any, replace: bool) -> dict[str, Any]:
    if not isinstance(node, dict):
        raise DataError(f"Structs should be encoded as JSON objects, but found {node_type(node)}")
    return {f.name: to_connect(f.schema, node.get(f.name), replace_null_with_default=replace,
                               where=f'field: "{f.name}"')
            for f in schema.fields}


# --- logical types (JsonConverter.LOGICAL_CONVERTERS) -----------------------------------------


def _logical(schema: Schema, logical: str, node: Any) -> Any:
    if logical == DECIMAL:
        return _decimal(schema, node)
    if logical == TIMESTAMP:
        if isinstance(node, bool) or not isinstance(node, int):
            raise DataError(f"Invalid type for Timestamp, underlying representation should be integral but was {node_type(node)}")
        return _wrap(node, 64, 64)
    name = "Date" if logical == DATE else "Time"
    if isinstance(node, bool) or not isinstance(node, int) or not -(2**31) <= node < 2**31:
        raise DataError(f"Invalid type for {name}, underlying representation should be integer but was {node_type(node)}")
    if logical == TIME and not 0 <= node <= MILLIS_PER_DAY:
        raise DataError("Time values must use number of milliseconds greater than 0 and less than 86400000")
    return node


def _decimal(schema: Schema, node: Any) -> Decimal:
    if isinstance(node, (int, Decimal)) and not isinstance(node, bool):
        return Decimal(node)
    if isinstance(node, str):
        raw = _base64(node, "Invalid bytes for Decimal field")
        scale = schema.scale()
        return Decimal(f"{int.from_bytes(raw, 'big', signed=True)}E{-scale}") if raw else _no_bytes()
    raise DataError(f"Invalid type for Decimal, underlying representation should be numeric or bytes but was {node_type(node)}")


def _no_bytes() -> Decimal:
    raise DataError("Invalid bytes for Decimal field: no bytes (Java's BigInteger needs at least one)")
