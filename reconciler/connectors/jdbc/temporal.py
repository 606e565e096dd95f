"""Connect's and Debezium's time types as PostgreSQL values and column types. Pure.

Connect's `Timestamp` and `Time` are instants, written in `db.timezone` as Confluent's sink
binds them (`setTimestamp`/`setTime` with a calendar of that zone). Its `Date` is written in
`db.timezone` too unless `db.timezone.date=UTC`: Confluent binds the date's midnight UTC with
that calendar, so west of UTC the date written is the day before (its CC-24785; the key is
Confluent's fix, its default keeps the old behaviour).

Debezium's sources encode a column's time type by a schema name (`io.debezium.time.*`); they
are read as Connect's of the same kind (a `MicroTimestamp` as a `Timestamp` in microseconds),
so a table from Debezium's PostgreSQL source lands with its own column types, as Debezium's
JDBC sink writes it. `ZonedTimestamp` and `ZonedTime` are ISO-8601 text, which PostgreSQL reads.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Final

from reconciler.connectors.converters.schema import DATE, TIME, TIMESTAMP

EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
DEBEZIUM: Final = "io.debezium.time."
# Instants since the epoch, by schema name: (kind, units per second).
INSTANTS: Final = {
    TIMESTAMP: ("timestamp", 1_000), DEBEZIUM + "Timestamp": ("timestamp", 1_000),
    DEBEZIUM + "MicroTimestamp": ("timestamp", 1_000_000), DEBEZIUM + "NanoTimestamp": ("timestamp", 1_000_000_000),
    TIME: ("time", 1_000), DEBEZIUM + "Time": ("time", 1_000), DEBEZIUM + "MicroTime": ("time", 1_000_000),
    DEBEZIUM + "NanoTime": ("time", 1_000_000_000),
}
DATES: Final = frozenset({DATE, DEBEZIUM + "Date"})
TEXTUAL: Final = {DEBEZIUM + "ZonedTimestamp": "TIMESTAMPTZ", DEBEZIUM + "ZonedTime": "TIMETZ",
                  "io.debezium.data.Uuid": "UUID"}
COLUMN_TYPES: Final = {**{name: kind.upper() for name, (kind, _) in INSTANTS.items()},
                       **dict.fromkeys(DATES, "DATE"), **TEXTUAL}


def is_temporal(name: str | None) -> bool:
    return name in INSTANTS or name in DATES


def to_pg_time(name: str, value: Any, zone: dt.tzinfo, date_zone: dt.tzinfo | None) -> Any:
    """A time value of schema `name` (`is_temporal`); `date_zone`: where dates are read (None: as they are)."""
    if name in DATES:
        day = dt.date(1970, 1, 1) + dt.timedelta(days=value)
        if date_zone is None:
            return day
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).astimezone(date_zone).date()
    kind, per_second = INSTANTS[name]
    seconds, fraction = divmod(int(value), per_second)
    instant = EPOCH + dt.timedelta(seconds=seconds, microseconds=fraction * 1_000_000 // per_second)
    local = instant.astimezone(zone)
    return local.replace(tzinfo=None) if kind == "timestamp" else local.time()
