"""The data a task moves: source records and columnar batches (with the offsets they bring a
task to), sink records and the Arrow schema of a sink's batches, source partitions as
hashable keys, and a sink record that failed (`RecordFailure`) with the reporter a sink task
hands it to (`ErrantRecordReporter`, Connect's KIP-610). Part of the plugin API: plugins import
these from `connectors.api`.

No pyarrow at import time: only `headers_type`, `sink_schema` and `records_to_batch` load it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import pyarrow as pa

# Connect's OffsetUtils.validateFormat: partition and offset maps hold primitives only.
Primitive = str | int | float | bool | None
SourcePartition = Mapping[str, Primitive]
SourceOffset = Mapping[str, Primitive]
# A source partition as a hashable key: its canonical JSON text (see `partition_key`).
PartitionKey = str


# --- source partitions as keys --------------------------------------------------------------


def partition_key(partition: SourcePartition) -> PartitionKey:
    """Canonical JSON of a source partition map: equal maps give equal keys, whatever the order.

    The runtime uses it to index committed offsets read from the offsets topic (where the key
    is `["<connector>", <partition map>]` in whatever key order the writer used).
    """
    return json.dumps(dict(partition), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def partition_from_key(key: PartitionKey) -> dict[str, Primitive]:
    value = json.loads(key)
    if not isinstance(value, dict):
        raise ValueError(f"not a source partition key: {key!r}")
    return value


# --- records and batches --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """One record from a source, Connect-style: where it goes and where it came from."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: SourcePartition
    offset: SourceOffset


@dataclass(frozen=True, slots=True)
class SourceBatch:
    """The next records of a source task, as columns, and the offsets they bring it to.

    `offsets` maps each source partition the batch advanced to its offset *after* the batch;
    the runtime writes these in the same transaction as the records. Partitions not mentioned
    keep their committed offsets. A batch may move offsets without records (e.g. past blank
    lines); it is empty (nothing to do) only when it has neither (`is_empty`).
    """

    topics: Sequence[str]
    keys: Sequence[bytes | None]
    values: Sequence[bytes | None]
    offsets: Mapping[PartitionKey, SourceOffset] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not len(self.topics) == len(self.keys) == len(self.values):
            raise ValueError("SourceBatch columns differ in length")

    def __len__(self) -> int:
        return len(self.values)

    @property
    def is_empty(self) -> bool:
        return not self.values and not self.offsets

    @classmethod
    def empty(cls) -> SourceBatch:
        return cls([], [], [], {})

    @classmethod
    def from_records(cls, records: Iterable[SourceRecord]) -> SourceBatch:
        """Columns from records; each partition's offset is that of its last record."""
        topics: list[str] = []
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        offsets: dict[PartitionKey, SourceOffset] = {}
        for record in records:
            topics.append(record.topic)
            keys.append(record.key)
            values.append(record.value)
            offsets[partition_key(record.partition)] = dict(record.offset)
        return cls(topics, keys, values, offsets)


@dataclass(frozen=True, slots=True)
class SinkRecord:
    """One Kafka record as a sink sees it; sinks receive them in bulk (`records_to_batch`)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[tuple[str, bytes | None], ...] | None = None


def headers_type() -> pa.DataType:
    """A record's headers, in order (a key may repeat): as Spark's Kafka source gives them."""
    import pyarrow as pa

    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def sink_schema() -> pa.Schema:
    """The schema of every batch given to `SinkTask.write`: Connect's fields of a sink record
    (timestamp: ms since the epoch; headers: null when a record has none)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("topic", pa.string()),
            ("partition", pa.int32()),
            ("offset", pa.int64()),
            ("timestamp", pa.int64()),
            ("key", pa.binary()),
            ("value", pa.binary()),
            ("headers", headers_type()),
        ]
    )


def records_to_batch(records: Sequence[SinkRecord]) -> pa.RecordBatch:
    """A `write` batch from records (tests, and runtimes that do not build Arrow directly)."""
    import pyarrow as pa

    columns = [
        [r.topic for r in records],
        [r.partition for r in records],
        [r.offset for r in records],
        [r.timestamp_ms for r in records],
        [r.key for r in records],
        [r.value for r in records],
        [None if r.headers is None else [{"key": k, "value": v} for k, v in r.headers] for r in records],
    ]
    return pa.RecordBatch.from_arrays(
        [pa.array(c, type=f.type) for c, f in zip(columns, sink_schema(), strict=True)],
        schema=sink_schema(),
    )


# --- records that fail ----------------------------------------------------------------------


class Stage(StrEnum):
    """Where a record failed: Connect's `errors.Stage` names (the DLQ's `stage` header)."""

    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TASK_PUT = "TASK_PUT"


@dataclass(frozen=True, kw_only=True)
class RecordFailure:
    """A sink record that could not be written, with why (Connect's `ProcessingContext`).

    `executing_class` is the class that failed (the converter's, or the task's for TASK_PUT);
    `exception_class` and `message` the error, as Java names them
    (`org.apache.kafka.connect.errors.DataException`); `trace` its stack trace, if any.
    """

    record: SinkRecord
    stage: Stage
    executing_class: str
    message: str
    exception_class: str = "org.apache.kafka.connect.errors.DataException"
    trace: str | None = None


class ErrantRecordReporter(Protocol):
    """What a sink task reports failed records to (Connect's `ErrantRecordReporter`).

    `report` applies the connector's `errors.tolerance`: with `none` it raises (the task fails
    naming the record), with `all` the record is skipped, logged and queued for the dead
    letter queue. `flush` makes the queued records durable in the dead letter queue; a task
    calls it before the data it skipped them from is durable, so that no crash can lose them.
    """

    def report(self, failure: RecordFailure) -> None: ...

    def flush(self) -> None: ...
