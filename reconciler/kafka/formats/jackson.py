"""JSON as Connect's internal converter writes and reads it: Jackson 2.21 behind `JsonConverter`.

Pure. `records` builds Connect's records with these; the replays read with `loads`.

Writing (`dumps`) matches `UTF8JsonGenerator` byte for byte: compact, UTF-8, `/` not escaped,
control characters as `\\n`-style or upper-case `\\u00XX` escapes, and every UTF-16 surrogate
as an upper-case `\\uXXXX` escape. So a character outside the Basic Multilingual Plane (an
emoji) is written as its two surrogates, `"\\uD83D\\uDE00"`, never as its four UTF-8 bytes, and
a lone surrogate (a Java string may hold one) as its own escape.

Reading (`loads`) accepts what `JsonDeserializer` accepts, which is more than JSON:
- empty or whitespace-only bytes read as null (`readTree` gives a MissingNode, which the
  converter turns into null): a `connector-` record with such a value deletes the connector;
- leading zeros in numbers (`ALLOW_LEADING_ZEROS_FOR_NUMBERS`): `007` is 7;
- anything after the first complete value is never read (`FAIL_ON_TRAILING_TOKENS` is off);
and refuses what Jackson refuses and Python would take: `NaN`, `Infinity`.
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Mapping
from decimal import Decimal
from typing import Final

import msgspec
from pydantic_core import from_json

_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)
# Python escapes control characters as \u00xx, Jackson as \u00XX. An escaped backslash is matched
# first so that the text `\u001b` inside a string (written `\\u001b`) is left alone.
_HEX_ESCAPE: Final = re.compile(r"(\\\\)|\\u00([0-9a-f]{2})")
# Surrogates (lone ones) and characters outside the BMP (pairs in Java): Jackson escapes both.
_SURROGATES: Final = re.compile("[\ud800-\udfff\U00010000-\U0010ffff]")
_F32: Final = struct.Struct("<f")
_JSON_SPACE: Final = " \t\n\r"
_BOM: Final = "\ufeff"
# A number's leading zeros, outside strings: `(-)00…0` followed by another digit.
_LEADING_ZEROS: Final = re.compile(r'"(?:[^"\\]|\\.)*"|(?<![\w.+-])(-?)0+(?=\d)', re.DOTALL)


class JsonError(ValueError):
    """Bytes Jackson would not read as a JSON value."""


def _upper_hex(match: re.Match[str]) -> str:
    return match.group(0) if match.group(1) else "\\u00" + match.group(2).upper()


def _surrogate_escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x10000:
        return f"\\u{code:04X}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"


def jackson_text(text: str) -> bytes:
    """JSON text from Python's encoder, made into Jackson's bytes (escapes as above)."""
    if "\\u00" in text:
        text = _HEX_ESCAPE.sub(_upper_hex, text)
    if text.isascii():
        return text.encode()
    return _SURROGATES.sub(_surrogate_escape, text).encode("utf-8")


def dumps(obj: object) -> bytes:
    """Compact JSON bytes as Jackson writes them (raises ValueError for NaN and ∞)."""
    return jackson_text(_ENCODER.encode(obj))


def encode_string(text: str) -> str:
    """One JSON string literal, as Python writes it (`jackson_text` finishes it)."""
    return _ENCODER.encode(text)


def loads(data: bytes) -> object:
    """Parse bytes as Jackson reads them (see the module doc); raises `JsonError`."""
    try:
        return from_json(data, allow_inf_nan=False)  # strict JSON, the common case, fast
    except ValueError:
        pass
    return _lenient(data, _DECODER)


def loads_exact(data: bytes) -> object:
    """`loads`, with every number that has a fraction or an exponent as an exact `Decimal`, as
    `JsonConverter`'s reader keeps it (`USE_BIG_DECIMAL_FOR_FLOATS`); integers stay `int`."""
    try:
        return _EXACT_FAST.decode(data)  # strict JSON, the common case, fast
    except msgspec.DecodeError:
        pass
    return _lenient(data, _EXACT)


def _lenient(data: bytes, decoder: json.JSONDecoder) -> object:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JsonError(f"value is not UTF-8: {exc}") from None
    text = text.removeprefix(_BOM).lstrip(_JSON_SPACE)
    if not text:
        return None  # Jackson's MissingNode: the converter's null
    if "0" in text:
        text = _LEADING_ZEROS.sub(lambda m: m.group(1) if m.group(0)[0] != '"' else m.group(0), text)
    try:
        obj, end = decoder.raw_decode(text)
    except ValueError as exc:
        raise JsonError(f"value is not JSON: {exc}") from None
    _check_root_end(obj, text[end : end + 1])
    return obj


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number")


_DECODER: Final = json.JSONDecoder(parse_constant=_no_constant)
_EXACT: Final = json.JSONDecoder(parse_constant=_no_constant, parse_float=Decimal)
_EXACT_FAST: Final = msgspec.json.Decoder(float_hook=Decimal)


def _check_root_end(obj: object, following: str) -> None:
    """A root scalar must end where Jackson's parser sees its end (objects, arrays and strings
    end at their closing character, and whatever follows them is never read)."""
    if not following or isinstance(obj, (dict, list, str)):
        return
    if isinstance(obj, bool) or obj is None:
        if following.isalnum() or following in "_$":  # `truex` is one unknown token to Jackson
            raise JsonError("value is not JSON: unrecognised token")
    elif following not in _JSON_SPACE:  # a root number needs whitespace after it
        raise JsonError("value is not JSON: no space after a root-level number")


def java_double(value: float) -> str:
    """Java's `Double.toString`, which Jackson uses for doubles: `1.0E10`, `0.001`, `1.0E-4`.

    Digits are the shortest that round-trip (Java 19+; older JDKs occasionally print more).
    """
    if not math.isfinite(value):
        raise ValueError(f"{value!r} cannot be written as JSON")
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign = "-" if value < 0 else ""
    shortest = repr(abs(value))
    if len(shortest.replace(".", "").replace("0", "").split("e")[0]) == 1:
        # Java prints at least two digits, the closest pair: 4.9E-324, not 5.0E-324.
        shortest = f"{abs(value):.1e}"
    _, digit_tuple, exponent = Decimal(shortest).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    sci = len(digits) - 1 + exponent  # value = d.ddd × 10^sci
    if -3 <= sci < 7:
        if sci >= 0:
            whole = digits[: sci + 1].ljust(sci + 1, "0")
            return f"{sign}{whole}.{digits[sci + 1 :] or '0'}"
        return f"{sign}0.{'0' * (-sci - 1)}{digits}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{sci}"


def java_float(value: float) -> str:
    """Java's `Float.toString` of a float32 value: the shortest digits that read back as the same
    float32 (Java 19+), in `Double.toString`'s layout."""
    if not math.isfinite(value) or value == 0:
        return java_double(value)
    single = _F32.unpack(_F32.pack(value))[0]
    for digits in range(2, 10):  # Java prints at least two digits (1.4E-45)
        text = f"{single:.{digits}g}"
        try:
            if _F32.unpack(_F32.pack(float(text)))[0] == single:
                return java_double(float(text))
        except OverflowError:  # rounded past float32's largest value
            continue
    return java_double(single)


def primitive_json(value: object) -> str:
    """One offset-map value: null, boolean, string, long, or double as Java prints it."""
    if value is None or isinstance(value, (bool, str)):
        return _ENCODER.encode(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return java_double(value)
    raise ValueError(f"offset maps hold only primitive values, not {type(value).__name__}")


def primitive_map_json(mapping: Mapping[str, object]) -> str:
    """A flat map of primitives (Connect's `OffsetUtils.validateFormat`), in the given order."""
    parts = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise ValueError(f"offset map keys must be strings, not {type(key).__name__}")
        parts.append(f"{_ENCODER.encode(key)}:{primitive_json(value)}")
    return "{" + ",".join(parts) + "}"
