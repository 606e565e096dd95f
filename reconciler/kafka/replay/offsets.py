"""The offsets topic's reader (Java's `KafkaOffsetBackingStore`): the latest value per raw key
bytes, and per connector the set of its partitions, as Java keeps them.

`reported` answers `GET …/offsets` as Java does; `offsets_for` and `keys_for` are where the
runtime resumes a partition and which keys it writes: docs/record-formats.md#byte-exact-keys.
"""

from __future__ import annotations

from typing import Any

from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay.base import Replay, log, parse_json

Partition = dict[str, Any]
Offset = dict[str, Any]


class OffsetsReplay(Replay):
    """One offsets topic, read in order: values by raw key, partition sets per connector."""

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[bytes, tuple[int, bytes]] = {}  # raw key → (write seq, value)
        self._keys: dict[bytes, tuple[str, Any, Partition] | None] = {}  # raw key → parsed
        self._encodings: dict[str, dict[Any, list[bytes]]] = {}  # connector → identity → raw keys
        self._members: dict[str, dict[Any, Partition]] = {}  # connector → Java's partition set
        self._seq = 0

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if key is None:
            self._skip("<null>", "offset record without a key")
            return
        parsed = self._keys.get(key)
        if parsed is None and key not in self._keys:
            parsed = self._keys[key] = self._parse_key(key)
        if value is None:
            self._values.pop(key, None)
        else:
            self._seq += 1
            self._values[key] = (self._seq, value)
        if parsed is not None:
            name, identity, partition = parsed
            members = self._members.setdefault(name, {})
            if value is None:
                members.pop(identity, None)
            else:  # HashSet.add keeps the map already in the set
                members.setdefault(identity, partition)

    def _parse_key(self, key: bytes) -> tuple[str, Any, Partition] | None:
        parsed = rec.offset_key_from_json(parse_json(key))
        if isinstance(parsed, Invalid):
            if not parsed.quiet:  # `[name, null]` is skipped silently, as Java does
                self._skip(key.decode("utf-8", "replace"), parsed.reason)
            return None
        name, partition = parsed
        identity = partition_identity(partition)
        self._encodings.setdefault(name, {}).setdefault(identity, []).append(key)
        return name, identity, partition

    def connectors(self) -> list[str]:
        return sorted(self._encodings)

    def reported(self, connector: str) -> list[tuple[Partition, Offset | None]]:
        """`GET /connectors/{name}/offsets` as Java answers it from this topic alone: each
        partition of the set, with the offset under Java's bytes for it (None: absent or null).
        A partition Java cannot serialise, or whose value it cannot read, is left out."""
        result = []
        for partition in self._members.get(connector, {}).values():
            try:
                key = rec.encode_offset_key(connector, partition)
            except ValueError:  # nested values: Java logs "Failed to serialize partition key"
                continue
            stored = self._values.get(key)
            offset = None if stored is None else rec.decode_offset_value(stored[1])
            if isinstance(offset, Invalid):
                log.warning("offset for key %r is unreadable: %s", key, offset.reason)
                continue
            result.append((dict(partition), offset))
        return result

    def offsets_for(self, connector: str) -> list[tuple[Partition, Offset, bytes]]:
        """Where the runtime resumes: each partition with its newest readable offset under any
        encoding, and that encoding's bytes; partitions with none are left out. Not only the
        partitions of Java's set: one tombstoned under an encoding and live under another is
        out of the set, yet a Java task whose own encoding is the live one still reads its
        offset (`OffsetStorageReaderImpl` looks its own bytes up), so it resumes here too."""
        result = []
        members = self._members.get(connector, {})
        for identity, encodings in self._encodings.get(connector, {}).items():
            for raw in self._newest_first(encodings):
                offset = rec.decode_offset_value(self._values[raw][1])
                parsed = self._keys[raw]
                if isinstance(offset, dict) and parsed is not None:
                    result.append((dict(members.get(identity, parsed[2])), offset, raw))
                    break
        return result

    def keys_for(self, connector: str, partition: Partition) -> list[bytes]:
        """Every key a new offset of this partition goes under: Java's bytes for it (the map in
        Java's set if there is one, so even its insertion order is Java's), then each other
        encoding that still holds a value."""
        identity = partition_identity(partition)
        member = self._members.get(connector, {}).get(identity, partition)
        java_key = rec.encode_offset_key(connector, member)
        others = self._newest_first(self._encodings.get(connector, {}).get(identity, []))
        return [java_key, *(raw for raw in others if raw != java_key)]

    def live_raw_keys(self, connector: str) -> list[bytes]:
        """Every raw key holding a value for this connector: what a reset must tombstone."""
        return [
            raw for raw_keys in self._encodings.get(connector, {}).values() for raw in raw_keys if raw in self._values
        ]

    def live_keys_of(self, connector: str, partition: Partition) -> list[bytes]:
        """The raw keys holding a value for one partition: what removing its offset tombstones."""
        raw_keys = self._encodings.get(connector, {}).get(partition_identity(partition), [])
        return [raw for raw in raw_keys if raw in self._values]

    def _newest_first(self, raw_keys: list[bytes]) -> list[bytes]:
        live = [(self._values[raw][0], raw) for raw in raw_keys if raw in self._values]
        return [raw for _, raw in sorted(live, reverse=True)]


def partition_identity(partition: Partition) -> Any:
    """Equality as Java's `Map.equals` sees it: `1`, `1.0` and `true` are different values."""
    identity = tuple(sorted((k, type(v).__name__, v) for k, v in partition.items()))
    try:
        hash(identity)
        return identity
    except TypeError:  # nested values (not valid for Connect, but readable): compare as JSON
        return ("json", rec.dumps(dict(sorted(partition.items()))))
