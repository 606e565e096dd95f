"""Connect's reader state machines: records in topic order in, live state out.

One class per topic, each with `apply(key, value, offset)`, fed by the I/O layer in the order
it consumes records (per partition order is all that matters: every key lives in one partition).
They follow docs/state-machine.md, i.e. Java's `KafkaConfigBackingStore`,
`KafkaStatusBackingStore` and `KafkaOffsetBackingStore`, including their quirks, so that we see
exactly what a Connect worker reading the same topics would see.

Reading is the hot loop of `reconciler snapshot`/`plan` (100,000s of records), so replays work
on plain dicts and tuples, and pydantic models are built once, in `build_live_state`. Bulk
readers call `feed(records)`, which gives the state `apply` gives record by record, faster: the
config and status replays cache parsed keys and repeated small values there.

The config and status replays live in `config_replay` and `status_replay`; this module is where
every replay is imported from, and holds the offsets and reconciler-topic replays.
"""

from __future__ import annotations

import logging
from typing import Any

from reconciler.kafka import own_records as own
from reconciler.kafka import records as rec
from reconciler.kafka.config_replay import ConfigReplay, RestartRequestRecord, restart_impact
from reconciler.kafka.live_build import build_live_state  # re-exported: built from the replays
from reconciler.kafka.records import Invalid
from reconciler.core.live import AutoRestartStatus
from reconciler.kafka.own_records import OffsetsProgress, OffsetsSnapshot, OwnerInfo
from reconciler.kafka.replay_base import ConsumedRecord, Replay, log, parse_json
from reconciler.kafka.status_replay import StatusReplay


class OffsetsReplay(Replay):
    """Source offsets (docs/record-formats.md#byte-exact-keys): latest value per raw key; raw key
    bytes kept per logical partition.

    Java keys its offsets by raw key bytes, so two encodings of one partition are two keys. We
    keep every raw key ever seen for each (connector, partition) so that writers reuse Java's
    exact bytes, and report the most recently written live one as the partition's offset.
    """

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[bytes, tuple[int, bytes]] = {}  # raw key → (write seq, value)
        self._keys: dict[bytes, tuple[str, Any, dict[str, Any]] | None] = {}
        self._partitions: dict[str, dict[Any, list[bytes]]] = {}  # connector → canon → raw keys
        self._seq = 0

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if key is None:
            self._skip("<null>", "offset record without a key")
            return
        if key not in self._keys:
            self._keys[key] = self._parse_key(key)
        if value is None:
            self._values.pop(key, None)
        else:
            self._seq += 1
            self._values[key] = (self._seq, value)

    def _parse_key(self, key: bytes) -> tuple[str, Any, dict[str, Any]] | None:
        parsed = rec.offset_key_from_json(parse_json(key))
        if isinstance(parsed, Invalid):
            if not parsed.quiet:  # `[name, null]` is skipped silently, as Java does
                self._skip(key.decode("utf-8", "replace"), parsed.reason)
            return None
        name, partition = parsed
        canon = partition_identity(partition)
        self._partitions.setdefault(name, {}).setdefault(canon, []).append(key)
        return name, canon, partition

    def connectors(self) -> list[str]:
        return sorted(self._partitions)

    def _latest_live(self, raw_keys: list[bytes]) -> bytes | None:
        live = [(self._values[k][0], k) for k in raw_keys if k in self._values]
        return max(live)[1] if live else None

    def offsets_for(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any], bytes]]:
        """(partition, offset, raw key) per live partition, in the order first seen."""
        result = []
        for raw_keys in self._partitions.get(connector, {}).values():
            raw = self._latest_live(raw_keys)
            if raw is None:
                continue
            offset = rec.decode_offset_value(self._values[raw][1])
            if isinstance(offset, Invalid):
                log.warning("offset for key %r is unreadable: %s", raw, offset.reason)
                continue
            key_info = self._keys[raw]
            assert key_info is not None
            result.append((dict(key_info[2]), offset, raw))
        return result

    def live_raw_keys(self, connector: str) -> list[bytes]:
        """Every raw key holding a value for this connector: what a reset must tombstone."""
        return [
            raw
            for raw_keys in self._partitions.get(connector, {}).values()
            for raw in raw_keys
            if raw in self._values
        ]

    def key_for(self, connector: str, partition: dict[str, Any]) -> bytes:
        """The key bytes to write this partition under: Java's own if ever seen, else new ones."""
        raw_keys = self._partitions.get(connector, {}).get(partition_identity(partition))
        if not raw_keys:
            return rec.encode_offset_key(connector, partition)
        return self._latest_live(raw_keys) or raw_keys[-1]


def partition_identity(partition: dict[str, Any]) -> Any:
    """Equality as Java's `Map.equals` sees it: `1`, `1.0` and `true` are different values."""
    identity = tuple(sorted((k, type(v).__name__, v) for k, v in partition.items()))
    try:
        hash(identity)
        return identity
    except TypeError:  # nested values (not valid for Connect, but readable): compare as JSON
        return ("json", rec.dumps(dict(sorted(partition.items()))))


class ReconcilerReplay(Replay):
    """Our own `<group>-reconciler` topic: ownership, applied request ids, offsets progress,
    auto-restart history."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[str, OwnerInfo] = {}
        self.applied_restart: dict[str, dict[str, int]] = {}  # name → id → applied-at
        self.applied_offsets: dict[str, dict[str, int]] = {}
        self.offsets_progress: dict[str, OffsetsProgress] = {}
        self.snapshots: dict[tuple[str, str], OffsetsSnapshot] = {}
        self.auto_restarts: dict[str, AutoRestartStatus] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        text = "<null>" if key is None else key.decode("utf-8", "replace")
        parsed = own.parse_reconciler_key(text)
        if parsed is None:
            self._skip(text, "unknown reconciler key", logging.DEBUG)
            return
        kind, name, request_id = parsed
        if kind == "owner":
            self._put(self.owners, name, None if value is None else own.decode_owner(value), text)
        elif kind == "offsets-progress":
            decoded = None if value is None else own.decode_offsets_progress(value)
            self._put(self.offsets_progress, name, decoded, text)
        elif kind == "auto-restart":
            decoded_auto = None if value is None else own.decode_auto_restart(value)
            self._put(self.auto_restarts, name, decoded_auto, text)
        elif kind == "offsets-snapshot":
            decoded_snapshot = None if value is None else own.decode_offsets_snapshot(value)
            self._put(self.snapshots, (name, request_id or ""), decoded_snapshot, text)
        else:
            applied = self.applied_restart if kind == "applied-restart" else self.applied_offsets
            at = None if value is None else own.decode_applied(value)
            self._put(applied.setdefault(name, {}), request_id or "", at, text)

    def _put(self, table: dict[Any, Any], key: Any, value: object, text: str) -> None:
        if value is None:
            table.pop(key, None)
        elif isinstance(value, Invalid):
            self._skip(text, value.reason)
        else:
            table[key] = value


__all__ = [
    "ConfigReplay",
    "ConsumedRecord",
    "OffsetsReplay",
    "ReconcilerReplay",
    "RestartRequestRecord",
    "StatusReplay",
    "build_live_state",
    "partition_identity",
    "restart_impact",
]
