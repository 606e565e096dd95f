"""`jdbc-source`'s source partitions and offsets, exactly as Confluent's JDBC source writes them
to Connect's offsets topic (JsonConverter, schemas off). Pure.

- a table: `{"protocol":"1","table":"<schema>.<table>"}` (`OffsetProtocols.sourcePartitionForProtocolV1`,
  a `HashMap`, so `protocol` first; since 10.9.5 the PostgreSQL dialect drops the catalog pgjdbc
  42.7.5+ reports, so the name has two parts). Offsets are looked up under that, then under the
  three-part `<db>.<schema>.<table>` 10.8 to 10.9.4 wrote with a new driver, then under protocol 0,
  `{"table":"<table>"}`, as `JdbcSourceTask` falls back to it.
- a query: `{"query":"query"}`.
- the offset (`TimestampIncrementingOffset.toMap`, a `HashMap(3)`): in its iteration order,
  `timestamp_nanos`, `incrementing`, `timestamp`; `timestamp` is epoch milliseconds
  (`Timestamp.getTime`), `timestamp_nanos` the nanoseconds of the second (`getNanos`).
- bulk mode writes no offset.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from reconciler.connectors.api import OffsetsRefused, PartitionKey, SourceOffset, partition_key
from reconciler.connectors.jdbc.source_tables import TableRef

INCREMENTING: Final = "incrementing"
TIMESTAMP: Final = "timestamp"
TIMESTAMP_NANOS: Final = "timestamp_nanos"
QUERY_PARTITION: Final = {"query": "query"}
EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def table_partition(table: TableRef) -> dict[str, str]:
    return {"protocol": "1", "table": table.unquoted()}


def lookup_keys(table: TableRef | None, database: str) -> list[PartitionKey]:
    """Where a table's (or the query's) committed offset may be, newest protocol first."""
    if table is None:
        return [partition_key(QUERY_PARTITION)]
    return [partition_key(table_partition(table)),
            partition_key({"protocol": "1", "table": f"{database}.{table.unquoted()}"}),
            partition_key({"table": table.table})]


@dataclass(frozen=True)
class Position:
    """Where a table's reading is: the last row's time (UTC, microseconds as PostgreSQL keeps
    them, plus any nanoseconds a Java-written offset had) and incrementing value."""

    timestamp: dt.datetime | None = None
    nanos: int = 0  # the nanoseconds of `timestamp`'s second (Java's getNanos)
    incrementing: int | None = None

    @classmethod
    def at(cls, timestamp: dt.datetime | None, incrementing: int | None) -> Position:
        nanos = 0 if timestamp is None else timestamp.microsecond * 1000
        return cls(timestamp, nanos, incrementing)

    def to_offset(self) -> dict[str, int]:
        """`TimestampIncrementingOffset.toMap`, in its HashMap's iteration order."""
        offset: dict[str, int] = {}
        if self.timestamp is not None:
            offset[TIMESTAMP_NANOS] = self.nanos
        if self.incrementing is not None:
            offset[INCREMENTING] = self.incrementing
        if self.timestamp is not None:
            delta = self.timestamp - EPOCH
            seconds = delta.days * 86400 + delta.seconds
            offset[TIMESTAMP] = seconds * 1000 + self.nanos // 1_000_000
        return offset

    @classmethod
    def from_offset(cls, offset: SourceOffset | None) -> Position:
        """`TimestampIncrementingOffset.fromMap` (an absent or empty offset: nothing read yet)."""
        if not offset:
            return cls()
        check_offset(offset)
        millis, nanos = offset.get(TIMESTAMP), offset.get(TIMESTAMP_NANOS)
        incrementing = offset.get(INCREMENTING)
        timestamp = None
        if isinstance(millis, int):
            seconds = millis // 1000
            nanos = nanos if isinstance(nanos, int) else (millis % 1000) * 1_000_000
            timestamp = EPOCH + dt.timedelta(seconds=seconds, microseconds=nanos // 1000)
        return cls(timestamp, nanos if isinstance(nanos, int) and timestamp else 0,
                   incrementing if isinstance(incrementing, int) else None)


def _is_long(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63


def check_offset(offset: Mapping[str, object]) -> None:
    """Refuse what `fromMap` would fail on (its `(Long)` casts) or misread."""
    unknown = sorted(set(offset) - {INCREMENTING, TIMESTAMP, TIMESTAMP_NANOS})
    if unknown:
        raise OffsetsRefused(f"a jdbc-source offset has only the keys incrementing, timestamp and "
                             f"timestamp_nanos; got {', '.join(unknown)}")
    for key, value in offset.items():
        if value is not None and not _is_long(value):
            raise OffsetsRefused(f"the value for the '{key}' key in the offset is expected to be a Long value; "
                                 f"got {value!r}")
    nanos = offset.get(TIMESTAMP_NANOS)
    if isinstance(nanos, int) and not 0 <= nanos <= 999_999_999:
        raise OffsetsRefused(f"timestamp_nanos must be 0..999999999 (the nanoseconds of the second); got {nanos}")
    if nanos is not None and offset.get(TIMESTAMP) is None:
        raise OffsetsRefused("timestamp_nanos without timestamp: give the epoch milliseconds too")


def check_partition(partition: Mapping[str, object], query: bool) -> None:
    """A partition Confluent's source writes (or reads): a table's of either protocol, or the query's."""
    if query:
        if dict(partition) != QUERY_PARTITION:
            raise OffsetsRefused('with a query, the only source partition is {"query":"query"}')
        return
    table = partition.get("table")
    shape_ok = set(partition) in ({"protocol", "table"}, {"table"}) and isinstance(table, str) and table
    if not shape_ok or partition.get("protocol", "1") != "1":
        raise OffsetsRefused('a jdbc-source partition is {"protocol":"1","table":"<schema>.<table>"} '
                             '(or protocol 0\'s {"table":"<table>"})')
