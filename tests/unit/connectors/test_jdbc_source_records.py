"""jdbc-source's column-by-column records equal, byte for byte, what the per-record encoder
(`converters.encode.encode`, JsonConverter's bytes) writes for the same rows: every mapped
column type, nulls, strings Jackson escapes differently from Python, every converter; and the
same errors for a value that cannot be written."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest

from reconciler.connectors.converters.encode import encode
from reconciler.connectors.converters.schema import DataError
from reconciler.connectors.converters.settings import Converter
from reconciler.connectors.jdbc.source_records import encode_rows
from reconciler.connectors.jdbc.source_types import ColumnInfo, RowShape, row_shape

CONVERTERS = [Converter("json", schemas_enable=True), Converter("json", schemas_enable=False),
              Converter("json", decimal_format="NUMERIC"), Converter("string")]
COLUMNS = [ColumnInfo("id", 20, not_null=True), ColumnInfo("small", 21), ColumnInfo("n", 23),
           ColumnInfo("ok", 16), ColumnInfo("name", 25), ColumnInfo("amount", 1700, 10, 2),
           ColumnInfo("whole", 1700, 5, 0), ColumnInfo("r", 700), ColumnInfo("d", 701), ColumnInfo("raw", 17),
           ColumnInfo("at", 1114), ColumnInfo("at_tz", 1184), ColumnInfo("day", 1082), ColumnInfo("t", 1083),
           ColumnInfo("doc", 3802), ColumnInfo("wei%rd \"name\"", 25)]
BERLIN = ZoneInfo("Europe/Berlin")


def rows() -> list[tuple[object, ...]]:
    return [
        (1, 3, -7, True, "plain", Decimal("1.5"), Decimal("12"), 1.1, 2.5e-7, b"\x00\xff", dt.datetime(2024, 3, 31, 2, 30),
         dt.datetime(2024, 1, 1, 1, tzinfo=BERLIN), dt.date(1970, 1, 3), dt.time(1, 2, 3, 4000), '{"a": 1}', "x%sy"),
        (2, None, None, None, None, None, None, None, None, None, None, None, None, None, None, None),
        (3, -32768, 2**31 - 1, False, "caf\u00e9 \U0001f600 \x1b\t\ud800 \\u001b /", Decimal("-0.01"), Decimal("-99999"),
         float("nan"), float("-inf"), b"", dt.datetime(1969, 12, 31, 23, 59, 59, 999999),
         dt.datetime(1900, 6, 1, tzinfo=dt.UTC), dt.date(1600, 2, 29), dt.time(23, 59, 59), "[]", ""),
    ]


def per_record(converter: Converter, shape: RowShape, table: list[tuple[object, ...]]) -> list[bytes | None]:
    return [encode(converter, shape.schema, shape.value(row)) for row in table]


@pytest.mark.parametrize("converter", CONVERTERS, ids=lambda c: f"{c.kind}-{c.schemas_enable}-{c.decimal_format}")
@pytest.mark.parametrize("mapping", ["none", "best_fit"])
def test_every_column_type_as_the_per_record_encoder_writes_it(converter: Converter, mapping: str) -> None:
    shape = row_shape(COLUMNS, "or%ders", mapping, BERLIN)
    assert encode_rows(converter, shape, rows()) == per_record(converter, shape, rows())


def test_a_long_column_of_one_type_and_an_empty_result() -> None:
    shape = row_shape(COLUMNS[:5], "orders", "none", dt.UTC)
    table = [(i, i % 100, i * 3, i % 2 == 0, f"customer {i}") for i in range(1000)]
    converter = Converter("json", schemas_enable=True)
    assert encode_rows(converter, shape, table) == per_record(converter, shape, table)
    assert encode_rows(converter, shape, []) == []


def test_a_result_with_no_mapped_column_is_an_empty_struct_per_row() -> None:
    shape = row_shape([ColumnInfo("tags", 1009)], "orders", "none", dt.UTC)
    converter = Converter("json", schemas_enable=True)
    assert encode_rows(converter, shape, [(["a"],), (None,)]) == per_record(converter, shape, [(["a"],), (None,)])


def test_values_that_cannot_be_written_fail_as_the_per_record_encoder_does() -> None:
    converter = Converter("json", schemas_enable=False)
    required = row_shape([ColumnInfo("id", 23, not_null=True)], None, "none", dt.UTC)
    with pytest.raises(DataError, match="null value for field that is required"):
        encode_rows(converter, required, [(1,), (None,)])
    narrow = row_shape([ColumnInfo("n", 1700, 3, 0)], None, "best_fit", dt.UTC)  # INT16
    with pytest.raises(DataError, match="does not fit INT16"):
        encode_rows(converter, narrow, [(Decimal(1),), (Decimal(40000),)])
    with pytest.raises(ValueError, match="Decimal cannot hold"):
        encode_rows(converter, row_shape([ColumnInfo("x", 1700, 5, 2)], None, "none", dt.UTC), [(Decimal("NaN"),)])
