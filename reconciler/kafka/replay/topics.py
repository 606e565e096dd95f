"""A group's topics replayed together into one value: what the CLI, the runtime and the offsets
executor read. Pure: records in (in each partition's order), a `StoreView` out.

The config, status and reconciler topics are fed to Connect's state machines (`replay`) and to
the runtime's marks (`marks`) as they are consumed; `view()` builds, from the replays as they are
at that moment, an immutable `StoreView`. Feeding more records later continues the same replays:
`reconciler.kafka.io.store` reads incrementally that way, and a view built after an incremental read
equals the one a read from offset 0 would build (tests/unit/kafka/test_topics_replay.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reconciler import masking
from reconciler.core.live import LiveState, UncommittedView
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.core.transitions import PendingRestart
from reconciler.kafka.formats.own_records import FailureMark
from reconciler.kafka.formats.own_records import OffsetsSnapshot, RequestProgress
from reconciler.kafka.replay.config import ConfigReplay
from reconciler.kafka.replay.live_build import build_live_state
from reconciler.kafka.replay.reconciler import ReconcilerReplay
from reconciler.kafka.replay.status import StatusReplay
from reconciler.kafka.replay.base import ConsumedRecord
from reconciler.kafka.settings import Topics


@dataclass(frozen=True, kw_only=True)
class StoreView:
    """The topics as one read saw them.

    `config_end`: the config topic's offset after the last record read (restart records below it
    were read; failure marks and `runtime-started` are written with it). `config_offsets`:
    connector → offset of its latest `connector-` record. `pending_restarts`, `failures`,
    `first_tick`: the runtime's marks (`reconciler.kafka.replay.marks`). `pending_fencing`: connectors
    whose latest commit came after their latest `tasks-fencing-` record, and `task_count_records`
    the count of that record (KIP-618). `progress`, `snapshots`, `applied_offsets` (id → applied
    at, ms): the offsets requests' records in our topic.
    """

    live: LiveState
    config_end: int = 0
    config_offsets: dict[str, int] = field(default_factory=dict)
    pending_restarts: dict[str, PendingRestart] = field(default_factory=dict)
    failures: dict[str, FailureMark] = field(default_factory=dict)
    first_tick: bool = False
    pending_fencing: frozenset[str] = frozenset()
    task_count_records: dict[str, int] = field(default_factory=dict)
    progress: dict[str, RequestProgress] = field(default_factory=dict)
    snapshots: dict[tuple[str, str], OffsetsSnapshot] = field(default_factory=dict)
    applied_offsets: dict[str, dict[str, int]] = field(default_factory=dict)

    def snapshot(self, connector: str, request_id: str) -> list[dict[str, Any]] | None:
        """The offsets a request's rollback snapshot holds (None: no snapshot of it)."""
        taken = self.snapshots.get((connector, request_id))
        return None if taken is None else taken.offsets


class TopicsReplay:
    """Connect's config and status topics and our own topic, replayed as records arrive."""

    def __init__(self, topics: Topics) -> None:
        self.topics = topics
        self.ours = ReconcilerReplay()
        self.config = ConfigReplay(restarts=self.ours.restarts)
        self.status = StatusReplay()
        self.config_records = 0  # config records fed (`uncommitted`: compared with a count of all)
        # Config offsets 0 … contiguous_end-1 were all read: no record there was aborted (an
        # aborted or compacted record, or a transaction marker, leaves a gap in the offsets).
        self.contiguous_end = 0
        self._gapped = False
        self._fed = 0  # records fed so far
        self._last: tuple[tuple[int, bool], StoreView] | None = None  # the last view, and what it saw
        self._changed: set[str] = set()  # connectors records were fed about since the last view

    def feed(self, topic: str, records: list[ConsumedRecord]) -> None:
        """Records of one topic, in their partitions' order (a run of one consumed batch)."""
        self._fed += len(records)
        if self._last is not None:  # the next view rebuilds only the connectors these are about
            self._changed.update(connector_names(topic, self.topics, records))
        # (Dispatched here, not through a table of bound methods: that would be a reference
        # cycle, and the replays would wait for a full collection to be freed.)
        if topic == self.topics.configs:
            self._feed_config(records)
        elif topic == self.topics.status:
            self.status.feed(records)
        else:
            self.ours.feed(records)

    def _feed_config(self, records: list[ConsumedRecord]) -> None:
        self.config_records += len(records)
        if not self._gapped:
            self._track_gap(records)
        self.config.feed(records)

    def _track_gap(self, records: Sequence[ConsumedRecord]) -> None:
        """Move `contiguous_end` while the offsets follow each other; stop at the first gap."""
        first, last = records[0].offset(), records[-1].offset()
        if first == self.contiguous_end and last - first + 1 == len(records):
            self.contiguous_end = last + 1  # the common case, decided from the ends alone
            return
        for record in records:
            if record.offset() != self.contiguous_end:
                self._gapped = True
                return
            self.contiguous_end += 1

    @property
    def config_end(self) -> int:
        return self.config.offset + 1

    def view(
        self, group_id: str | None, *, task_configs: bool = True, uncommitted: dict[str, UncommittedView] | None = None
    ) -> StoreView:
        """The replays as they are now, as an immutable value (tables copied, models built).

        Nothing fed since the last view (with the same `task_configs`): that view again. Else the
        connectors no record was fed about since are taken from it, the others built anew.
        """
        seen, last = (self._fed, task_configs), self._last
        if last is not None and last[0] == seen and last[1].live.uncommitted == (uncommitted or {}):
            return last[1]
        previous = last[1].live.connectors if last is not None and last[0][1] == task_configs else None
        config, ours = self.config, self.ours
        live = build_live_state(
            config, self.status, ours, group_id, task_configs=task_configs, previous=previous, changed=self._changed
        )
        self._changed = set()
        if uncommitted:
            live = live.model_copy(update={"uncommitted": uncommitted})
            masking.remember_live(live, names=())  # their configs are shown as restores
        config_end = self.config_end
        applied = [name for name, requests in live.applied.items() if requests.restart]
        view = StoreView(
            live=live,
            config_end=config_end,
            config_offsets=dict(config.connector_offsets),
            pending_restarts=ours.restarts.pending(config_end, applied),
            failures=dict(ours.failures.marks),
            first_tick=ours.restarts.started is None,
            pending_fencing=frozenset(config.pending_fencing),
            task_count_records=dict(config.task_count_records),
            progress=dict(ours.offsets_progress),
            snapshots=dict(ours.snapshots),
            applied_offsets={name: dict(ids) for name, ids in ours.applied_offsets.items()},
        )
        self._last = (seen, view)
        return view

    def skipped(self) -> dict[str, int]:
        """Records ignored so far, per topic, as a Connect worker would ignore them."""
        counts = {self.topics.configs: self.config.skipped, self.topics.status: self.status.skipped}
        counts[self.topics.reconciler] = self.ours.skipped
        return {topic: count for topic, count in counts.items() if count}


def connector_names(topic: str, topics: Topics, records: Iterable[ConsumedRecord]) -> set[str]:
    """The connectors records are about (by their keys, as the replays parse them): the config
    and status topics' connector and task keys; our topic's keys name a connector too (its
    sensitive keys decide what is masked in it)."""
    prefixes = _PREFIXES.get("configs" if topic == topics.configs else "status" if topic == topics.status else "")
    names: set[str] = set()
    for record in records:
        key = record.key()
        text = "" if key is None else key.decode("utf-8", "replace")
        if prefixes is None:
            parsed = own.parse_reconciler_key(text)
            if parsed is not None:
                names.add(parsed.name)
            continue
        for prefix, has_task in prefixes:
            if text.startswith(prefix):
                task = rec.parse_task_id(text, prefix) if has_task else None
                names.add(task[0] if task is not None else text[len(prefix) :])
                break
    return names


# Key prefixes naming a connector, and whether a task id follows the name.
_PREFIXES: dict[str, tuple[tuple[str, bool], ...]] = {
    "configs": (("task-", True), ("connector-", False), ("commit-", False), ("target-state-", False)),
    "status": (("status-task-", True), ("status-connector-", False)),
}
