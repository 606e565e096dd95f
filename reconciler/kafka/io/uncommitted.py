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

from collections.abc import Iterable
from typing import Any

from reconciler.core.live import UncommittedView
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.consume import TopicReader
from reconciler.kafka.replay import ConfigReplay
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.replay.topics import TopicsReplay


class UncommittedConfig:
    """The config topic read read_uncommitted, kept between reads like the committed reader.

    Offsets the committed read found without a gap from 0 on hold no aborted record: reading
    uncommitted starts at its first gap (`TopicsReplay.contiguous_end`), and a topic no
    transaction ever wrote (Connect's own writes) is not read a second time at all. From there,
    the records read both ways are the same but for the aborted ones, so equal counts mean there
    is nothing to compare, and counting costs a fraction of replaying: the uncommitted records
    are only replayed (read again from offset 0, then kept up to date) once the counts differ.
    Records at or after the committed read's end are not taken: they are read again next time.
    """

    def __init__(self, settings: KafkaSettings) -> None:
        self.settings = settings
        self._topic = settings.topics.configs
        self._reader: TopicReader | None = None
        self._start = 0  # where counting started: the committed read's first gap
        self._count = 0  # records read uncommitted from `_start` up to the last end
        self._everything: ConfigReplay | None = None  # every record below the last end, once needed

    def views(self, committed: TopicsReplay, end: int) -> dict[str, UncommittedView]:
        """Connectors whose config, target-state record or task count differs below `end` (the
        committed read's end) between the committed records and all of them."""
        if committed.contiguous_end >= end:
            return {}  # every offset below `end` was read committed: none was aborted
        if self._reader is None:
            self._start = committed.contiguous_end
            self._reader = self._new_reader(self._start)
        self._advance(self._reader, end)
        everything = self._everything
        if everything is None:
            if self._count == committed.config_records - self._start:
                return {}
            everything = self._everything = ConfigReplay()
            self._reader.close()
            self._reader = self._new_reader(None)
            self._advance(self._reader, end)
        return uncommitted_views(committed.config, everything)

    def _new_reader(self, start: int | None) -> TopicReader:
        reader = TopicReader(self.settings, isolation_level="read_uncommitted")
        reader.assign({self._topic: reader.partitions_of(self._topic)})  # metadata first: see `assign`
        if start is not None:
            reader.positions[(self._topic, 0)] = start
        return reader

    def _advance(self, reader: TopicReader, end: int) -> None:
        """Count (and replay, once needed) the records from where the last read stopped to `end`."""
        everything = self._everything
        for batch in reader.to_end():
            below = _below(batch, end)
            self._count += len(below)
            if everything is not None:
                everything.feed(below)
        reader.positions[(self._topic, 0)] = end  # what lies after `end` is read next time

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None


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
