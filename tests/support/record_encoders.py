"""Record encoders only the tests use: records the reconciler never writes field by field, but reads.

Kept beside the tests, not in `reconciler.kafka.formats.records`: offsets records built field by
field (the runtime writes offsets from a task's batch, `reconciler.runtime`). KIP-558's
topic-status records are re-exported from `reconciler.kafka.formats.topic_status`, which the
runtime writes with. The formats are in docs/record-formats.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from reconciler.kafka.formats.records import Record, TopicRole, encode_offset_key, encode_offset_value
from reconciler.kafka.formats.topic_status import topic_status_record as topic_status_record


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
