"""The one read model: a group's config, status and reconciler topics read in one pass into one
value (`StoreView`), and read again incrementally.

Everything that reads those topics reads them here: `plan`, `status`, `snapshot` and `offsets`
(`read_view`, `read_live_state`), `apply`, the runtime's ticks and its REST API, the offsets
executor. One consumer is assigned to every partition of the three topics; its records go, run
by run, into `TopicsReplay` (Connect's state machines and the runtime's marks, pure). A
`LiveStore` keeps that consumer and those replays: each `read()` continues from where the
previous one stopped, so a `run`/`watch` tick pays for what was written since its last read, not
for the whole topics again, and returns exactly what a read from offset 0 would return. A read
that fails half-way, or finds that records it was to continue from were deleted, starts over
from offset 0 the next time.

The reads are read_committed: records of an aborted or still open transaction are not seen. A
Java worker without exactly-once support reads the config topic read_uncommitted and may act on
aborted records; apply orders its records so that every prefix is safe, and, reading what such a
worker holds too (`uncommitted=True`, `reconciler.kafka.io.uncommitted`), the next apply converges
whatever it is asked (docs/compatibility.md).

Compaction between two reads: the records a store already read stay in its replays, as they
stay in the memory of a Connect worker that keeps running; a read from offset 0 after compaction
replays the compacted log, as a worker that starts then does. The two agree wherever Connect's
own workers agree (docs/state-machine.md).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from itertools import groupby
from operator import methodcaller
from types import TracebackType
import enum

from reconciler import heap
from reconciler.core.live import LiveState, UncommittedView
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.admin import ensure_topics, start_reading_check
from reconciler.kafka.io.client import check_reachable
from reconciler.kafka.io.consume import PositionLost, TopicReader
from reconciler.kafka.io.uncommitted import UncommittedConfig
from reconciler.kafka.replay.offsets import OffsetsReplay
from reconciler.kafka.replay.topics import StoreView, TopicsReplay
from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)
_TOPIC_OF = methodcaller("topic")  # a C-level key function for groupby: no Python frame per record

class TopicsMode(enum.StrEnum):
    """How a store finds the topics on its first read."""

    CHECK = "check"  # commands that only read: Connect's topics must exist, ours may be missing
    CREATE = "create"  # writers: create what is missing (`prepare`)
    PREPARED = "prepared"  # the caller ran `prepare`


def prepare(settings: KafkaSettings) -> None:
    """For writers: fail fast when the broker is unreachable; create or validate the internal topics."""
    check_reachable(settings)
    ensure_topics(settings)


class LiveStore:
    """A group's topics, read to their end by `read()`, incrementally after the first time.

    Not for concurrent use: one thread reads (a lock makes a second one wait). Close it (or use
    it as a context manager) to release its consumers.
    """

    def __init__(self, settings: KafkaSettings, *, topics: TopicsMode = TopicsMode.CHECK, one_shot: bool = False) -> None:
        self.settings = settings
        self._mode = topics
        self._one_shot = one_shot
        self._lock = threading.Lock()
        self._reader: TopicReader | None = None
        self._replay = TopicsReplay(settings.topics)
        self._uncommitted: UncommittedConfig | None = None
        self._skipped: dict[str, int] = {}

    @classmethod
    def one_shot(cls, settings: KafkaSettings) -> LiveStore:
        """A writer's store that keeps nothing between uses (a command that runs once): `prepare`
        checks the broker and creates the topics; each `read` reads from offset 0 and closes
        its consumers, so the store needs no closing. A store kept across ticks is the
        runtime's instead (its owner prepares its topics)."""
        return cls(settings, topics=TopicsMode.PREPARED, one_shot=True)

    def prepare(self) -> None:
        """Before a writer's transaction: the broker answers and the internal topics exist (a
        one-shot store checks and creates them; a kept store's owner did)."""
        if self._one_shot:
            prepare(self.settings)

    def read(self, *, task_configs: bool = True, uncommitted: bool = False) -> StoreView:
        """The topics read to their end, as one value.

        `task_configs=False`: every connector's `task_configs` is left empty (plan and status
        never look at them; they are most of a config topic's bytes). `uncommitted=True`: also
        what a Connect worker reading uncommitted records holds, where it differs.
        """
        with self._lock:
            try:
                return self._read_or_reset(task_configs, uncommitted)
            except PositionLost as exc:  # records it was to continue from were deleted
                LOG.info("reading again from offset 0: %s", exc)
                return self._read_or_reset(task_configs, uncommitted)
            finally:
                if self._one_shot:
                    self._reset()

    def _read_or_reset(self, task_configs: bool, uncommitted: bool) -> StoreView:
        try:
            return self._read(task_configs, uncommitted)
        except BaseException:
            self._reset()  # replays fed half-way: the next read starts over
            raise

    def _read(self, task_configs: bool, uncommitted: bool) -> StoreView:
        reader, finish = self._assigned()
        ends: dict[tuple[str, int], int] = {}
        replay = self._replay
        with heap.building():
            # A batch holds runs of one topic's records: the replay is looked up once per run.
            for batch in reader.to_end(ends):
                for topic, run in groupby(batch, _TOPIC_OF):
                    replay.feed(topic, list(run))
            finish()
            views = self._uncommitted_views(ends) if uncommitted else None
            view = replay.view(self.settings.group_id, task_configs=task_configs, uncommitted=views)
        self._log_skipped()
        return view

    def _assigned(self) -> tuple[TopicReader, Callable[[], None]]:
        """The reader, assigned to every partition of the topics (checked on the first read)."""
        first = self._reader is None
        if first and self._mode == TopicsMode.CREATE:
            prepare(self.settings)
        reader = self._reader = self._reader or TopicReader(self.settings)
        existing = reader.topic_partitions()
        finish: Callable[[], None] = _nothing
        if first and self._mode == TopicsMode.CHECK:
            counts = {name: len(ids) for name, ids in existing.items()}
            finish = start_reading_check(self.settings, counts)
        topics = self.settings.topics
        gone = [name for name in (topics.configs, topics.status) if name not in existing]
        if gone:
            raise ReconcilerError(f"internal topic(s) {', '.join(gone)} of group {self.settings.group_id} are gone")
        wanted = (topics.configs, topics.status, topics.reconciler)
        reader.assign({name: existing[name] for name in wanted if name in existing})
        return reader, finish

    def _uncommitted_views(self, ends: dict[tuple[str, int], int]) -> dict[str, UncommittedView]:
        replay = self._replay
        end = max(ends.get((self.settings.topics.configs, 0), 0), replay.config_end)
        if self._uncommitted is None:
            self._uncommitted = UncommittedConfig(self.settings)
        return self._uncommitted.views(replay, end)

    def _log_skipped(self) -> None:
        for topic, count in self._replay.skipped().items():
            new = count - self._skipped.get(topic, 0)
            if new > 0:
                LOG.info("%s: %d record(s) ignored, as a Connect worker would ignore them", topic, new)
            self._skipped[topic] = count

    def _reset(self) -> None:
        """Forget everything read: the next read starts from offset 0."""
        self._close_readers()
        self._replay = TopicsReplay(self.settings.topics)
        self._skipped = {}

    def _close_readers(self) -> None:
        reader, uncommitted, self._reader, self._uncommitted = self._reader, self._uncommitted, None, None
        if reader is not None:
            reader.close()
        if uncommitted is not None:
            uncommitted.close()

    def close(self) -> None:
        with self._lock:
            self._close_readers()

    def __enter__(self) -> LiveStore:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def _nothing() -> None:
    return None


def read_view(
    settings: KafkaSettings, *, task_configs: bool = True, uncommitted: bool = False, topics: TopicsMode = TopicsMode.CHECK
) -> StoreView:
    """The topics read once, from offset 0 (a store used for one read)."""
    with LiveStore(settings, topics=topics) as store:
        return store.read(task_configs=task_configs, uncommitted=uncommitted)


def read_live_state(settings: KafkaSettings, *, task_configs: bool = True, uncommitted: bool = False) -> LiveState:
    """What `plan`, `status` and `snapshot` show: the live state of a group whose topics must
    exist (nothing is created; a missing group is an error)."""
    return read_view(settings, task_configs=task_configs, uncommitted=uncommitted).live


def read_offsets_topics(settings: KafkaSettings, topics: Sequence[str]) -> dict[str, OffsetsReplay]:
    """Offsets topics (the worker's, or a connector's own `offsets.storage.topic`) read to their
    end through Connect's offsets reader, with one consumer; a topic that does not exist is empty."""
    replays = {topic: OffsetsReplay() for topic in topics}
    reader = TopicReader(settings)
    try:
        existing = reader.topic_partitions()
        reader.assign({topic: existing[topic] for topic in topics if topic in existing})
        for batch in reader.to_end():
            for topic, run in groupby(batch, _TOPIC_OF):
                replays[topic].feed(list(run))
    finally:
        reader.close()
    for topic, replay in replays.items():
        if replay.skipped:
            LOG.info("%s: %d offsets record(s) ignored, as a Connect worker ignores them", topic, replay.skipped)
    return replays
