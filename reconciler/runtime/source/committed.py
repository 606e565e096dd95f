"""A source connector's committed offsets as its tasks get them (`CommittedOffsets`): built from
the offsets stores' replays (`committed_offsets`), by the driver before a batch, or by a task
itself once it has fenced its transactional id (`read_after_fence`); either reads only once no
open transaction hides them (`wait_for_stable_offsets`).

The driver's order (fence every task, read the offsets, run the job, whose tasks initialise
their ids again) is exactly once as long as no other producer of a task's id starts between the
driver's fence and the task's own. A task of a Spark job that failed can: Spark fails a job as
soon as one task fails and kills the others without waiting for their Python code, which goes
on to its commit. So a batch that runs a connector again after its shared job failed has each
task read its offsets itself after its own `init_transactions` (`SourceTaskWork.reread`):
whatever such a zombie committed before is read then, and a zombie that starts after fences
this task, whose commit then fails; either way no record is produced twice.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec, TypeVar

from reconciler.connectors.api import ConnectorError, PartitionKey, SourceOffset, partition_key
from reconciler.errors import BrokerUnreachable
from reconciler.kafka.io.consume import end_offsets
from reconciler.kafka.io.kept_listers import KeptListers
from reconciler.kafka.io.offset_stores import OffsetsStore, StoreKey, read_stores
from reconciler.kafka.replay import OffsetsReplay
from reconciler.runtime.batch.tasks import NotRun

# A transaction committed a moment ago can still look open: Kafka writes the commit markers to the
# partitions after the producer's commit returns. Waiting this long tells that lag from a
# transaction a killed task really left open.
STABLE_WAIT_S = 5.0

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class CommittedOffsets:
    """A connector's committed source offsets, and the key bytes a new offset of each known
    partition goes under in its primary store (and in the secondary one, the worker's topic,
    when it has its own): Java's bytes for it, then its other live encodings
    (`OffsetsReplay.keys_for`). A partition not listed gets Java's bytes only."""

    offsets: dict[PartitionKey, SourceOffset]
    raw_keys: dict[PartitionKey, tuple[bytes, ...]]
    secondary_keys: dict[PartitionKey, tuple[bytes, ...]] = field(default_factory=dict)


def committed_offsets(
    replays: Mapping[StoreKey, OffsetsReplay], connector: str, stores: Sequence[OffsetsStore]
) -> CommittedOffsets:
    """The connector's offsets, the primary store winning; the key bytes of each store."""
    offsets: dict[PartitionKey, SourceOffset] = {}
    keys: list[dict[PartitionKey, tuple[bytes, ...]]] = []
    for store in stores:
        replay = replays[store.key]
        raw_keys: dict[PartitionKey, tuple[bytes, ...]] = {}
        for partition, offset, _raw in replay.offsets_for(connector):
            key = partition_key(partition)
            offsets.setdefault(key, offset)  # the primary wins; the secondary fills gaps
            raw_keys[key] = tuple(replay.keys_for(connector, partition))
        keys.append(raw_keys)
    return CommittedOffsets(offsets, keys[0], keys[1] if len(keys) > 1 else {})


def open_transactions(store: OffsetsStore, kept: KeptListers | None = None) -> list[int]:
    """Offsets-topic partitions whose stable end lags their end: a transaction is still open
    there (a killed task of a connector not in this batch), hiding what was committed after it.
    `kept`: asked through its consumers (the driver's, every batch)."""
    stable = end_offsets(store.settings, store.topic, isolation_level="read_committed", kept=kept)
    written = end_offsets(store.settings, store.topic, isolation_level="read_uncommitted", kept=kept)
    return sorted(p for p, end in written.items() if stable.get(p, end) < end)


def read_after_fence(connector: str, stores: Sequence[OffsetsStore], wait_s: float = STABLE_WAIT_S) -> CommittedOffsets:
    """In a task that has just initialised its transactional id: the connector's offsets read
    from its stores now, once no open transaction hides any of them (another connector's task
    may still hold one: `wait_for_stable_offsets`); ConnectorError when one stays open `wait_s`
    or the check fails: the task then commits nothing and fails, as for any error of its batch."""
    if broken := wait_for_stable_offsets(stores, wait_s):
        reasons = "; ".join(why.waited or (why.trace or "").strip().splitlines()[-1] for why in broken.values())
        raise ConnectorError(f"this task's offsets, read again after its shared job failed, could be stale: {reasons}")
    return committed_offsets(read_stores(stores), connector, stores)


def wait_for_stable_offsets(
    stores: Sequence[OffsetsStore], wait_s: float = STABLE_WAIT_S, *, kept: KeptListers | None = None
) -> dict[StoreKey, NotRun]:
    """`open_transactions` of every store, re-checked with backoff until none is open or
    `wait_s` ran out; why each store still open (or whose check failed) is not read now."""
    timeout_s = min(store.settings.timeout_s for store in stores) if stores else wait_s
    deadline = time.monotonic() + min(wait_s, timeout_s)
    delay, pending = 0.05, list(stores)
    failed: dict[StoreKey, NotRun] = {}
    while True:
        still_open: dict[StoreKey, list[int]] = {}
        for store in pending:
            found = attempt(open_transactions, store, kept)
            if isinstance(found, NotRun):
                failed[store.key] = found
            elif found:
                still_open[store.key] = found
        pending = [store for store in pending if store.key in still_open]
        if not pending or time.monotonic() + delay > deadline:
            return failed | {store.key: _open_transaction(store, still_open[store.key]) for store in pending}
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _open_transaction(store: OffsetsStore, partitions: list[int]) -> NotRun:
    return NotRun(waited=(
        f"offsets topic {store} partition(s) {partitions} hold an open transaction (a task killed "
        "mid-batch, of a connector not running now); source offsets read now could be stale, so "
        "the connector's tasks do not run until the broker aborts it (transaction.timeout.ms)"
    ))


def attempt(step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T | NotRun:
    """`step(*args, **kwargs)`, or why the tasks it was for do not run: a cluster that cannot be
    reached waits for the next batch, anything else fails them."""
    try:
        return step(*args, **kwargs)
    except BrokerUnreachable as exc:
        return NotRun(waited=exc.message)
    except Exception:
        return NotRun(trace=traceback.format_exc())
