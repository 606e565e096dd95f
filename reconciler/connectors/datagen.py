"""`datagen`: deterministic synthetic records, for demos and benchmarks.

Record `id` N has key `b"N"` and value `{"id":N,"payload":"…"}`, padded so the largest id's
value is `record.bytes` long. Ids 0…count-1 are dealt into `shards` stripes (id = shard +
k·shards); each stripe is a source partition `{"shard": s}` with offset `{"position": k}` (ids
produced so far). Stripes, not tasks, are the partitions so that changing `tasksMax` never
re-produces or skips an id (tasks take shards s ≡ task index mod task count), and raising
`count` later just extends every stripe. `shards` must therefore stay fixed for the life of
the connector.

With `value.converter=org.apache.kafka.connect.json.JsonConverter` (and `schemas.enable`, the
default) each value is JsonConverter's envelope of a struct `{id: int64, payload: string}`, the
bytes Java's JsonConverter writes, so a Java sink with `schemas.enable=true` reads it as a
Struct; `key.converter` likewise makes the key an int64 envelope. Without schemas, or with
StringConverter or ByteArrayConverter, the bytes are the plain ones above (re-encoded for a
StringConverter charset other than UTF-8 and ASCII's supersets).

Speed: keys and values are built with one bytes concatenation per record (no `json.dumps`);
about 3 M records/s on one core of the reference machine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import cycle, islice
from typing import ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    OffsetsRefused,
    PartitionKey,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    TaskConfig,
    partition_from_key,
    partition_key,
    share_configs,
    task_share,
)
from reconciler.connectors.configdef import ConfigDef, Type, topic_names
from reconciler.connectors.converters.encode import envelope_template, text_values
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.connectors.converters.settings import Converter, converter
from reconciler.connectors.positions import check_position, is_long, position_of
from reconciler.connectors.settings import ConnectorSettings

DEFAULT_RECORD_BYTES = 100
DEFAULT_BATCH_SIZE = 100_000
DEFAULT_SHARDS = 16
_HEAD = b'{"id":'
_MIDDLE = b',"payload":"'
_TAIL = b'"}'
_PAD_ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789"
# The records' Connect schemas, when a JsonConverter with schemas writes them.
ROW = struct(("id", Schema("int64")), ("payload", Schema("string")))
ID = Schema("int64")
_AS_IS_CODECS = ("utf-8", "ascii", "latin-1")  # the plain bytes are ASCII: the same in these
BYTES = Converter()  # no converter set: the bytes as they are

CONFIG_DEF = (
    ConfigDef()
    .define("topic", Type.STRING, "Topic the records are produced to.", validator=topic_names)
    .define("count", Type.LONG, "Records over the connector's whole life (ids 0…count-1).", minimum=0)
    .define(
        "record.bytes", Type.INT, "Approximate size of each value, in bytes.",
        default=DEFAULT_RECORD_BYTES, minimum=0,
    )
    .define("batch.size", Type.INT, "Records per task per batch, at most.", default=DEFAULT_BATCH_SIZE, minimum=1)
    .define(
        "shards", Type.INT, "Source partitions the ids are dealt into; fixed for the connector's life.",
        default=DEFAULT_SHARDS, minimum=1,
    )
)


@dataclass(frozen=True, kw_only=True)
class DatagenSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    topic: str
    count: int
    record_bytes: int
    batch_size: int
    shards: int

    def shard_size(self, shard: int) -> int:
        """How many ids stripe `shard` holds: shard, shard + shards, … below count."""
        return max(0, (self.count - shard + self.shards - 1) // self.shards)


def shard_partition(shard: int) -> dict[str, int]:
    return {"shard": shard}


def value_template(settings: DatagenSettings, value_converter: Converter = BYTES) -> tuple[bytes, bytes]:
    """(head, tail) so that `head + id + tail` is the JSON value of record `id` (the envelope's,
    with a JsonConverter with schemas; `record.bytes` is then the payload's size)."""
    widest = len(str(max(settings.count - 1, 0)))
    fixed = len(_HEAD) + len(_MIDDLE) + len(_TAIL) + widest
    pad = bytes(islice(cycle(_PAD_ALPHABET), max(0, settings.record_bytes - fixed)))
    head, tail = _HEAD, _MIDDLE + pad + _TAIL
    if _envelope(value_converter):
        envelope_head, envelope_tail = envelope_template(ROW)
        return envelope_head + head, tail + envelope_tail
    return head, tail


def key_template(key_converter: Converter) -> tuple[bytes, bytes]:
    """(head, tail) so that `head + id + tail` is the key of record `id`."""
    return envelope_template(ID) if _envelope(key_converter) else (b"", b"")


def _envelope(converter: Converter) -> bool:
    return converter.kind == "json" and converter.schemas_enable


def recoded(raw: list[bytes | None], string_converter: Converter) -> list[bytes | None]:
    """The plain (ASCII) bytes as a StringConverter of another charset writes the same text."""
    if string_converter.kind != "string":
        return raw
    return text_values(string_converter, raw, as_is=_AS_IS_CODECS)


class DatagenTask(SourceTask):
    def __init__(self, task_config: Mapping[str, str]) -> None:
        super().__init__(task_config)
        self.settings = DatagenSettings.parse(task_config)
        index, count = task_share(task_config)
        self.shards = [s for s in range(self.settings.shards) if s % count == index]
        self.converters = (converter(task_config, "key"), converter(task_config, "value"))
        self._head, self._tail = value_template(self.settings, self.converters[1])
        self._key_head, self._key_tail = key_template(self.converters[0])

    @classmethod
    def exhausted(cls, task_config: Mapping[str, str], committed: Mapping[PartitionKey, SourceOffset]) -> bool:
        """Every stripe of the task is produced up to `count` (a larger count extends them)."""
        try:
            settings = DatagenSettings.parse(task_config)
            index, count = task_share(task_config)
        except Exception:  # a config the task itself will report when polled
            return False
        return all(
            position_of(committed.get(partition_key(shard_partition(shard)))) >= settings.shard_size(shard)
            for shard in range(index, settings.shards, count)
        )

    def poll_batch(
        self, committed: Mapping[PartitionKey, SourceOffset], max_records: int
    ) -> SourceBatch:
        budget = min(max_records, self.settings.batch_size)
        keys: list[bytes | None] = []
        offsets: dict[PartitionKey, SourceOffset] = {}
        for shard in self.shards:
            if budget <= 0:
                break
            key = partition_key(shard_partition(shard))
            start = position_of(committed.get(key))
            end = min(self.settings.shard_size(shard), start + budget)
            if end <= start:
                continue
            step = self.settings.shards
            keys.extend([b"%d" % i for i in range(shard + start * step, shard + end * step, step)])
            offsets[key] = {"position": end}
            budget -= end - start
        head, tail = self._head, self._tail
        values: list[bytes | None] = [head + k + tail for k in keys]  # type: ignore[operator]
        if self._key_head:
            keys = [self._key_head + k + self._key_tail for k in keys]  # type: ignore[operator]
        keys, values = recoded(keys, self.converters[0]), recoded(values, self.converters[1])
        return SourceBatch([self.settings.topic] * len(keys), keys, values, offsets)


class DatagenConnector(SourceConnector):
    task_class = DatagenTask
    config_def = CONFIG_DEF
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return DatagenSettings.read(config)[1]

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        settings = DatagenSettings.parse(config)
        return share_configs(config, max(1, min(max_tasks, settings.shards)))

    def task_limit(self, config: ConnectorConfig) -> int | None:
        """One task per stripe at most: a task without a stripe would have nothing to produce."""
        settings, problems = DatagenSettings.read(config)
        return None if any(problem.key == "shards" for problem in problems) else settings.shards

    def validate_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> None:
        """Refuse what a task would never read: a partition other than `{"shard": S}` with S
        one of the connector's stripes (it would be ignored), or an offset whose `position` is
        not a count (it would be read as 0). A tombstone is accepted for any partition, as
        Connect's FileStreamSourceConnector accepts one, so stray offsets can be removed. A
        position past a stripe's end is accepted: the stripe is done, and a larger `count` extends it.
        """
        shards = DatagenSettings.parse(config).shards
        for key, offset in offsets.items():
            if offset is not None:
                _check_partition(shards, partition_from_key(key))
                check_position(offset)

    def alter_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> bool:
        """Nothing outside the offsets topic to change; `validate_offsets` checked them, so
        True, as Connect asks of a connector that validates its offsets."""
        return True


# Connect's words where it has them (FileStreamSourceConnector.alterOffsets), with datagen's keys.
def _check_partition(shards: int, partition: Mapping[str, object]) -> None:
    if set(partition) != {"shard"}:
        raise OffsetsRefused(f"Partition objects should contain the key 'shard' and no other; got {_json(partition)}")
    shard = partition["shard"]
    if not is_long(shard):
        raise OffsetsRefused("The value for the 'shard' key in the partition is expected to be an Integer value")
    if not 0 <= shard < shards:
        raise OffsetsRefused(
            f"The value for the 'shard' key in the partition should be between 0 and {shards - 1} "
            f"(the connector's shards is {shards}); got {shard}"
        )


def _json(value: Mapping[str, object]) -> str:
    return json.dumps(dict(value), ensure_ascii=False)
