"""Source connector offsets in the offsets topic(s): read as Connect reads them, written where
every reader finds them (docs/record-formats.md, docs/compatibility.md).

Java keys its offsets by raw key bytes, and looks a partition up under the bytes it serialises
it to (fields in HashMap order). An alter therefore writes each partition under those bytes
*and* under every other encoding that still holds a value (a Java task may read its own field
order); removing a partition's offset, or a reset, tombstones every encoding that holds one.
`OffsetsReplay` keeps every raw key per logical partition.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reconciler.errors import RetryableError
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.offset_stores import OffsetsStore, StoreKey, read_stores, source_stores
from reconciler.kafka.replay import OffsetsReplay, partition_identity
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import SourcePair, source_body
from reconciler.offsets.writer import Placed

Write = tuple[OffsetsStore, Placed]  # an offsets record for one store


@dataclass
class SourceOffsets:
    """One connector's offsets in each offsets store it uses (primary first), read to the end."""

    connector: str
    stores: list[OffsetsStore]
    replays: dict[StoreKey, OffsetsReplay]

    def replay(self, store: OffsetsStore) -> OffsetsReplay:
        return self.replays[store.key]

    def pairs(self) -> list[SourcePair]:
        """(partition, offset or None) as `GET /connectors/{name}/offsets` reports them: the
        partitions of every store (primary first), each with its offset in the primary store.

        Java's `ConnectorOffsetBackingStore.get` overlays the primary's answer, nulls included,
        on the secondary's: a partition only the secondary (the worker's topic) knows reads null.
        """
        seen: dict[Any, SourcePair] = {}
        primary = {
            partition_identity(partition): (partition, offset)
            for partition, offset in self.replay(self.stores[0]).reported(self.connector)
        }
        for store in self.stores:
            for partition, _offset in self.replay(store).reported(self.connector):
                identity = partition_identity(partition)
                seen.setdefault(identity, primary.get(identity, (partition, None)))
        return list(seen.values())

    def body(self) -> list[dict[str, Any]]:
        """The `offsets` array of `GET /connectors/{name}/offsets`."""
        return source_body(self.pairs())

    def resume_body(self) -> list[dict[str, Any]]:
        """The same shape, with the offsets the runtime resumes from: each partition's newest
        value under any spelling, the primary store first (what a rollback must restore)."""
        seen: dict[Any, SourcePair] = {}
        for store in self.stores:
            for partition, offset, _raw in self.replay(store).offsets_for(self.connector):
                seen.setdefault(partition_identity(partition), (partition, offset))
        return source_body(seen.values())

    def alter_records(self, pairs: Sequence[SourcePair]) -> list[Write]:
        """Offsets writes for an alter, in Connect's order: a set goes to every store (primary
        first) under that store's bytes for the partition; a null tombstones every live key of the
        partition, secondary first."""
        writes: list[Write] = []
        for partition, offset in pairs:
            if offset is None:
                for store in reversed(self.stores):
                    live = self.replay(store).live_keys_of(self.connector, partition)
                    writes += [(store, (store.topic, key, None)) for key in live]
            else:  # the value in the request's order (only keys are looked up by their bytes)
                value = rec.encode_offset_value(offset)
                for store in self.stores:
                    keys = self.replay(store).keys_for(self.connector, partition)
                    writes += [(store, (store.topic, key, value)) for key in keys]
        return writes

    def reset_records(self) -> list[Write]:
        """A tombstone for every live key of the connector, secondary store first."""
        return [
            (store, (store.topic, key, None))
            for store in reversed(self.stores)
            for key in self.replay(store).live_raw_keys(self.connector)
        ]


def read_source_offsets(settings: KafkaSettings, connector: str, config: Mapping[str, str | None]) -> SourceOffsets:
    """The connector's offsets stores read to the end (a topic that does not exist yet is empty)."""
    stores = source_stores(settings, config)
    return SourceOffsets(connector, stores, read_stores(stores))


def confirm_reset(connector: str, stores: Sequence[OffsetsStore]) -> None:
    """Read the stores to the end again: no key of the connector may still hold a value."""
    replays = read_stores(stores)
    left = {str(store): len(replays[store.key].live_raw_keys(connector)) for store in stores}
    if any(left.values()):
        where = ", ".join(f"{count} in {store}" for store, count in left.items() if count)
        raise RetryableError(
            f"after the reset, offsets of connector {connector} are still present ({where}): "
            "a task of it is still writing offsets",
            hint="make sure no task of the connector is running, then run again (the reset is safe to repeat)",
        )
