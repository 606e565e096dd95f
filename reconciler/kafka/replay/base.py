"""What the replays share: the consumed-record shape, bookkeeping, JSON and key helpers.

Internal to `reconciler.kafka.replay` and its per-topic modules; import the replays from there.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, Protocol

import msgspec
from pydantic_core import from_json

from reconciler.kafka.formats import records as rec

# One logger for every replay, named after the module callers know them by.
log = logging.getLogger("reconciler.kafka.replay")

Properties = dict[str, Any]  # as read; non-string values are converted in build_live_state
MAX_PROBLEMS = 100
# Caches of the replays' fast paths. Keys: one entry per distinct key (a topic's key set is what
# Connect itself keeps in memory); small values (commits, target states) repeat byte for byte.
ROUTE_CACHE_SIZE = 1_000_000
VALUE_CACHE_SIZE = 4096
Route = tuple[int, str, int]  # a key parsed for a fast path: (kind, connector name, task id)


class _Properties(msgspec.Struct):
    """`{"properties":{…}}` with string (or null) values: the shape Connect writes."""

    properties: dict[str, str | None]


# The properties map of a connector or task config record of the shape Connect writes, for the
# replays' fast paths: a typed msgspec decoder builds the map and checks its shape in one C call.
# Measured on the 60,000 connector and task configs of bench/state_read.py, kept as the replay
# keeps them: 0.67–0.74 µs a value, against 0.91 for `pydantic_core.from_json` then the checks
# (what the replays used), 0.81 for `orjson.loads`, 3.1 for the stdlib's `json`. What it refuses
# (`UNREADABLE`: another shape, invalid JSON or UTF-8) is not necessarily invalid for Java: the
# caller falls back to the reference path, which reads what Jackson reads.
PROPERTIES = msgspec.json.Decoder(_Properties)
UNREADABLE = (msgspec.DecodeError, ValueError)


class ConsumedRecord(Protocol):
    """A record as consumed (a confluent-kafka `Message` is one): what `feed` reads of it."""

    def key(self) -> bytes | None: ...

    def value(self) -> bytes | None: ...

    def offset(self) -> int: ...

    def timestamp(self) -> tuple[int, int]:
        """(timestamp type, milliseconds); the milliseconds are -1 when the broker has none."""
        ...


def parse_json(value: bytes) -> object:
    try:
        return from_json(value, allow_inf_nan=False)
    except ValueError:
        return rec.loads(value)


def utf8(data: bytes) -> str:
    """UTF-8 text as `decode("utf-8", "replace")` gives it; the strict codec is faster."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def key_text(key: bytes | None) -> str:
    return "<null>" if key is None else key.decode("utf-8", "replace")


class Replay:
    """Bookkeeping shared by the replays: last offset seen, skipped records (for diagnostics)."""

    def __init__(self) -> None:
        self.offset = -1
        self.skipped = 0
        self.problems: list[str] = []

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        raise NotImplementedError

    def feed(self, records: Iterable[ConsumedRecord]) -> None:
        """`apply` each record in order (the busy topics' replays do it faster)."""
        apply = self.apply
        for record in records:
            apply(record.key(), record.value(), record.offset())

    def _track_offset(self, records: list[ConsumedRecord]) -> None:
        """What `apply` leaves in `offset` after these records: the last one not negative."""
        for record in reversed(records):
            offset = record.offset()
            if offset >= 0:
                self.offset = offset
                return

    def _skip(self, key: str, reason: str, level: int = logging.WARNING) -> None:
        self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{key}: {reason}")
        log.log(level, "ignoring record %r: %s", key, reason)
