"""Record encoders only the tests use: records the reconciler never writes, but reads.

Kept beside the tests, not in `reconciler.kafka.formats.records`: KIP-558's topic-status records
(written by Java's workers) and offsets records built field by field (the runtime writes offsets
from a task's batch, `reconciler.runtime`). The formats are in docs/record-formats.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.kafka.formats.records import (
    STATUS_TOPIC_PREFIX,
    STATUS_TOPIC_SEPARATOR,
    Record,
    TopicRole,
    dumps,
    encode_offset_key,
    encode_offset_value,
    text_key,
)


def topic_status_record(topic: str, connector: str, task_id: int, discovered_ms: int | None) -> Record:
    """KIP-558 active topic; `discovered_ms=None` writes the tombstone that resets it."""
    key = text_key(f"{STATUS_TOPIC_PREFIX}{topic}{STATUS_TOPIC_SEPARATOR}{connector}")
    if discovered_ms is None:
        return Record(TopicRole.STATUS, key, None)
    inner = {"name": topic, "connector": connector, "task": task_id, "discoverTimestamp": discovered_ms}
    return Record(TopicRole.STATUS, key, dumps({"topic": inner}))


def source_offset_record(
    connector: str,
    partition: Mapping[str, object],
    offset: Mapping[str, object] | None,
    *,
    raw_key: bytes | None = None,
) -> Record:
    """An offset write (`offset=None`: tombstone); `raw_key` = the exact key bytes already in the topic."""
    key = raw_key if raw_key is not None else encode_offset_key(connector, partition)
    return Record(TopicRole.OFFSETS, key, None if offset is None else encode_offset_value(offset))


@dataclass(frozen=True)
class Consumed:
    """A record as consumed, shaped like a confluent-kafka `Message` as the replays' `feed` reads
    it; `t` is the record's timestamp in milliseconds (-1: none)."""

    k: bytes | None
    v: bytes | None
    o: int
    t: int = -1

    def key(self) -> bytes | None:
        return self.k

    def value(self) -> bytes | None:
        return self.v

    def offset(self) -> int:
        return self.o

    def timestamp(self) -> tuple[int, int]:
        return (0 if self.t < 0 else 1, self.t)
