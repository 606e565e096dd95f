"""Hypothesis strategies for Connect schemas and values that fit them (the converters' tests,
unit and against Java's JsonConverter)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from reconciler.connectors.converters import schema as S

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_NAMES = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=6)


def _primitive() -> st.SearchStrategy[S.Schema]:
    plain = st.sampled_from([*_INTS, "float", "double", "boolean", "string", "bytes"]).map(S.Schema)
    logical = st.one_of(
        st.integers(0, 6).map(S.decimal),
        st.just(S.Schema("int32", name=S.DATE, version=1)),
        st.just(S.Schema("int32", name=S.TIME, version=1)),
        st.just(S.Schema("int64", name=S.TIMESTAMP, version=1)),
    )
    return st.one_of(plain, logical)


def _optional(schema: S.Schema, flag: bool) -> S.Schema:
    return S.optional(schema) if flag else schema


def schemas(depth: int = 2) -> st.SearchStrategy[S.Schema]:
    """Any Connect schema JsonConverter reads and writes, nested up to `depth`."""
    leaf = st.builds(_optional, _primitive(), st.booleans())
    if depth == 0:
        return leaf
    inner = schemas(depth - 1)
    array = st.builds(lambda items, o: S.Schema("array", o, items=items), inner, st.booleans())
    keys = st.sampled_from([S.Schema("string"), S.Schema("int32")])
    mapped = st.builds(lambda k, items, o: S.Schema("map", o, keys=k, items=items), keys, inner, st.booleans())
    struct = st.builds(
        lambda fields, o: S.Schema("struct", o, fields=tuple(S.Field(n, s) for n, s in fields)),
        st.lists(st.tuples(_NAMES, inner), max_size=4, unique_by=lambda f: f[0]), st.booleans())
    return st.one_of(leaf, array, mapped, struct)


def values(schema: S.Schema) -> st.SearchStrategy[Any]:
    """Values for `schema` in the shape `encode` takes and `values.to_connect` gives back (a
    map as (key, value) pairs; logical types as their numbers)."""
    value = _value(schema)
    return st.one_of(st.none(), value) if schema.optional else value


def _value(schema: S.Schema) -> st.SearchStrategy[Any]:  # noqa: PLR0911 (one case per type)
    if schema.name == S.DECIMAL:
        scale = schema.scale()
        return st.integers(-(10**20), 10**20).map(lambda n: Decimal(f"{n}E{-scale}"))
    if schema.name == S.DATE:
        return st.integers(-100_000, 100_000)
    if schema.name == S.TIME:
        return st.integers(0, 86_400_000)
    if schema.type in _INTS:
        bits = _INTS[schema.type]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    simple = {
        "float": st.floats(width=32, allow_nan=False, allow_infinity=False),
        "double": st.floats(allow_nan=False, allow_infinity=False),
        "boolean": st.booleans(), "string": st.text(max_size=8), "bytes": st.binary(max_size=8),
    }
    if schema.type in simple:
        return simple[schema.type]
    if schema.type == "array":
        assert schema.items is not None
        return st.lists(values(schema.items), max_size=3)
    if schema.type == "map":
        assert schema.keys is not None and schema.items is not None
        return st.lists(st.tuples(_value(schema.keys), values(schema.items)), max_size=3, unique_by=lambda p: p[0])
    return st.fixed_dictionaries({f.name: values(f.schema) for f in schema.fields})


@st.composite
def schema_and_value(draw: st.DrawFn) -> tuple[S.Schema, Any]:
    schema = draw(schemas())
    return schema, draw(values(schema))
