"""Connect's reader state machines: records in topic order in, live state out. Pure: no client.

One class per topic, each with `apply(key, value, offset)`, fed by the I/O layer in the order
it consumes records (per partition order is all that matters: every key lives in one partition).
They follow docs/record-formats.md, i.e. Java's `KafkaConfigBackingStore`,
`KafkaStatusBackingStore` and `KafkaOffsetBackingStore`, including their quirks, so that we see
exactly what a Connect worker reading the same topics would see.

Reading is the hot loop of `reconciler snapshot`/`plan` (100,000s of records), so replays work
on plain dicts and tuples, and pydantic models are built once, in `build_live_state`. Bulk
readers call `feed(records)`, which gives the state `apply` gives record by record, faster: the
config and status replays cache parsed keys and repeated small values there.

Modules: `config`, `status`, `offsets` (Connect's three topics), `reconciler` (our own topic)
and `marks` (the runtime's marks in it), on `base`; `topics` (the three read together, one
view at a time) and `live_build` (replays → `LiveState`). This package's names are where
the rest of the project imports the replays from.

May import `core`, `masking`, `kafka.formats` and `kafka.settings`; never `kafka.io`.
"""

from __future__ import annotations

from reconciler.kafka.replay.base import ConsumedRecord
from reconciler.kafka.replay.config import ConfigReplay
from reconciler.kafka.replay.live_build import build_live_state
from reconciler.kafka.replay.offsets import OffsetsReplay, partition_identity
from reconciler.kafka.replay.reconciler import ReconcilerReplay
from reconciler.kafka.replay.status import StatusReplay

__all__ = [
    "ConfigReplay",
    "ConsumedRecord",
    "OffsetsReplay",
    "ReconcilerReplay",
    "StatusReplay",
    "build_live_state",
    "partition_identity",
]
