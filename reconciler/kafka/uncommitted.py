"""What a Connect worker reading uncommitted records holds, where it differs from the committed ones.

Java's config consumer reads read_committed only with `exactly.once.source.support=enabled`
(`KafkaConfigBackingStore.setupAndCreateKafkaBasedLog`); otherwise it reads and acts on every
record as it is written, also those of a transaction that is then aborted — an apply killed
half-way (its transaction is aborted when the next apply claims the id), a fenced writer. Our
readers are read_committed, so without this second look the next apply would plan from records
that worker never had, and never undo what it took from the aborted ones.

So the config topic is also read read_uncommitted, up to where the committed read ended
(records after it are not aborted, only not read yet); when that finds aborted records, it is
replayed, and each connector whose config, target-state record or committed task count differs between the
two replays gets an `UncommittedView` (task configs themselves are left out: a Connect worker
generates them anew when it restarts the connector).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from reconciler.core.live import UncommittedView
from reconciler.kafka import records as rec
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.replay import ConfigReplay
from reconciler.kafka.settings import KafkaSettings


def read_uncommitted_views(
    settings: KafkaSettings, committed: ConfigReplay, committed_records: int, end: int
) -> dict[str, UncommittedView]:
    """Compare `committed` (built from `committed_records` records) with a replay of the config
    topic read_uncommitted below offset `end`.

    The records read both ways are the same but for the aborted ones, so equal counts mean there
    is nothing to compare, and counting costs a fraction of replaying: the replay is only done
    (in a third read) when some records below `end` were aborted.
    """
    if _records_below(settings, end) == committed_records:
        return {}
    everything = ConfigReplay()
    for batch in _uncommitted(settings):
        everything.feed(_below(batch, end))
    return uncommitted_views(committed, everything)


def _uncommitted(settings: KafkaSettings) -> Iterator[list[Any]]:
    return batches_to_end(settings, [settings.topics.configs], isolation_level="read_uncommitted")


def _records_below(settings: KafkaSettings, end: int) -> int:
    return sum(len(_below(batch, end)) for batch in _uncommitted(settings))


def _below(batch: list[Any], end: int) -> list[Any]:
    if not batch or batch[-1].offset() < end:
        return batch
    return [message for message in batch if message.offset() < end]


def uncommitted_views(committed: ConfigReplay, everything: ConfigReplay) -> dict[str, UncommittedView]:
    """Connectors whose config or target-state record differs between the two replays."""
    names: Iterable[str] = (
        set(committed.configs) | set(committed.target_states) | set(everything.configs) | set(everything.target_states)
    )
    views: dict[str, UncommittedView] = {}
    for name in sorted(names):
        config, state = everything.configs.get(name), everything.target_states.get(name)
        count, committed_state = everything.task_counts.get(name), committed.target_states.get(name)
        if (config, state, count) == (committed.configs.get(name), committed_state, committed.task_counts.get(name)):
            continue
        views[name] = UncommittedView(
            config=None if config is None else rec.string_properties(config),
            target_state=state,
            task_count=count,
            committed_target_state=committed_state,
        )
    return views
