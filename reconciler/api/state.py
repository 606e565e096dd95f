"""What the HTTP threads serve: the loop's latest results, as one immutable snapshot.

The loop (and the broker probe) build a new `ApiState` and swap it in under a lock held only
by writers; a reader takes `board.state` once per request and sees one consistent snapshot, never
a half-applied tick. Swapping a reference is atomic in Python, so reads need no lock at all.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from reconciler.core.kinds import Kind
from reconciler.core.live import LiveState

TickOutcome = Literal["succeeded", "apply_failed", "failed"]
TaskKey = tuple[str, int]  # (connector, task id)


@dataclass(frozen=True, kw_only=True)
class TickInfo:
    """One finished tick, as health and metrics need it."""

    started_at: float  # wall clock, seconds
    duration_s: float
    outcome: TickOutcome
    error: str | None = None  # why it failed, first line


@dataclass(frozen=True, kw_only=True)
class BrokerInfo:
    """The last answer (or silence) of the broker probe."""

    reachable: bool | None = None  # None: not probed yet
    checked_at: float = 0.0  # wall clock, seconds
    error: str | None = None
    cluster_id: str | None = None


@dataclass(frozen=True)
class ManifestsInfo:
    valid: bool = True
    problems: tuple[str, ...] = ()  # diagnostics of the invalid edit still on disk


@dataclass(frozen=True, kw_only=True)
class TaskTotals:
    """A task's counters since this process started (Connect's `*-total` metrics)."""

    kind: Kind
    records: int = 0
    bytes: int = 0
    batches: int = 0
    failures: int = 0
    commits: int = 0  # sinks: batches that committed offsets
    waits: int = 0  # batches the task waited out (a cluster its clients could not reach…)
    lag: int | None = None  # sinks: records behind at the start of the last batch


@dataclass(frozen=True, kw_only=True)
class ApiState:
    worker_id: str
    live: LiveState | None = None  # read after the last tick that could read it
    sensitive: Mapping[str, frozenset[str]] = field(default_factory=dict)  # `spec.sensitive` per connector
    last_tick: TickInfo | None = None
    last_success_at: float | None = None
    manifests: ManifestsInfo = field(default_factory=ManifestsInfo)
    broker: BrokerInfo = field(default_factory=BrokerInfo)
    totals: Mapping[TaskKey, TaskTotals] = field(default_factory=dict)
    started_at: float = field(default_factory=time.time)


class Board:
    """Holds the current `ApiState`; `update` swaps in a changed copy."""

    def __init__(self, initial: ApiState) -> None:
        self._state = initial
        self._lock = threading.Lock()

    @property
    def state(self) -> ApiState:
        return self._state

    def update(self, change: Callable[[ApiState], ApiState]) -> ApiState:
        with self._lock:  # writers only: the loop and the probe never lose each other's change
            self._state = change(self._state)
            return self._state

    def replace(self, **changes: object) -> ApiState:
        return self.update(lambda state: dataclasses.replace(state, **changes))  # type: ignore[arg-type]
