"""The loop's side of the HTTP layer: after each tick, publish what the REST, health and metrics serve.

Called from the tick thread only. After a tick it reads the topics once more, so the REST
shows the statuses the tick just wrote (a tick reads them before it writes); a failed read
keeps the previous live state and is reported as the broker's silence.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from reconciler.api.metrics import Metrics
from reconciler.api.state import ApiState, Board, BrokerInfo, ManifestsInfo, TaskKey, TaskTotals, TickInfo, TickOutcome
from reconciler.render.connect_rest import connector_type
from reconciler.core.kinds import Kind
from reconciler.core.live import LiveState
from reconciler.core.outcomes import TaskOutcome
from reconciler.errors import BrokerUnreachable, ReconcilerError

if TYPE_CHECKING:
    from reconciler.core.models import DesiredConnector

LOG = logging.getLogger(__name__)


class LoopObserver:
    def __init__(self, board: Board, metrics: Metrics, read_live: Callable[[], LiveState]) -> None:
        self.board = board
        self.metrics = metrics
        self.read_live = read_live

    def manifests(self, desired: Sequence[DesiredConnector], problems: Sequence[str]) -> None:
        """The manifests the loop runs, and the problems of the files on disk (none when valid)."""
        sensitive = {d.name: d.sensitive_keys for d in desired}
        info = ManifestsInfo(valid=not problems, problems=tuple(problems))
        self.board.replace(manifests=info, sensitive=sensitive)

    def finished(self, outcomes: Sequence[TaskOutcome], started_at: float, apply_error: ReconcilerError | None) -> None:
        """A tick ended: its batch's task outcomes, and its apply's error if the apply failed."""
        outcome: TickOutcome = "succeeded" if apply_error is None else "apply_failed"
        tick = TickInfo(
            started_at=started_at, duration_s=time.time() - started_at, outcome=outcome, error=_first_line(apply_error)
        )
        live = self._read()
        self.metrics.record(tick)
        self.board.update(lambda state: _after_tick(state, tick, live, outcomes))

    def failed(self, error: ReconcilerError, started_at: float) -> None:
        tick = TickInfo(
            started_at=started_at, duration_s=time.time() - started_at, outcome="failed", error=_first_line(error)
        )
        self.metrics.record(tick)
        self.board.update(lambda state: _after_failure(state, tick, error))

    def _read(self) -> LiveState | None:
        try:
            return self.read_live()
        except ReconcilerError as exc:
            LOG.warning("reading the live state after the tick failed: %s", exc.message)
            self.board.replace(broker=BrokerInfo(reachable=False, checked_at=time.time(), error=exc.message))
            return None


def _after_tick(state: ApiState, tick: TickInfo, live: LiveState | None, outcomes: Sequence[TaskOutcome]) -> ApiState:
    known = live or state.live
    return dataclasses.replace(
        state,
        live=known,
        last_tick=tick,
        last_success_at=time.time() if tick.outcome == "succeeded" else state.last_success_at,
        totals=add_outcomes(state.totals, outcomes, known),
    )


def _after_failure(state: ApiState, tick: TickInfo, error: ReconcilerError) -> ApiState:
    broker = state.broker
    if isinstance(error, BrokerUnreachable):  # the tick learnt it before the probe did
        broker = dataclasses.replace(broker, reachable=False, checked_at=time.time(), error=error.message)
    return dataclasses.replace(state, last_tick=tick, broker=broker)


def add_outcomes(
    totals: Mapping[TaskKey, TaskTotals], outcomes: Sequence[TaskOutcome], live: LiveState | None
) -> dict[TaskKey, TaskTotals]:
    """The counters after one batch (a new mapping: snapshots are never changed in place). A
    task that waited for the next batch did not run one: it counts a wait."""
    result = dict(totals)
    for o in outcomes:
        key = (o.connector, o.task_id)
        before = result.get(key) or TaskTotals(kind=_kind(live, o))
        if o.waited is not None:
            result[key] = dataclasses.replace(before, waits=before.waits + 1)
            continue
        result[key] = dataclasses.replace(
            before,
            records=before.records + o.records,
            bytes=before.bytes + o.bytes,
            batches=before.batches + 1,
            failures=before.failures + (o.error is not None),
            commits=before.commits + o.offsets_committed,
            lag=o.lag if o.lag is not None else before.lag,
        )
    return result


def _kind(live: LiveState | None, outcome: TaskOutcome) -> Kind:
    connector = None if live is None else live.connector(outcome.connector)
    if connector is not None and connector.config is not None:
        return Kind.SINK if connector_type(connector) == Kind.SINK else Kind.SOURCE
    return Kind.SOURCE if outcome.lag is None else Kind.SINK  # only sinks measure a lag


def _first_line(error: ReconcilerError | None) -> str | None:
    if error is None:
        return None
    lines = error.message.strip().splitlines()
    return lines[0] if lines else type(error).__name__
