"""Offsets requests (KIP-875): which of the declared requests run, when, and how far; each one
executed (`offsets.executor.RequestExecution`) once per id, resumable after a crash at any step.

* Between two batches of a tick (`run_pending_offsets_requests`): in this architecture tasks only
  run inside a tick's batch, so after the tick's apply and BEFORE its batch none of the worker's
  tasks can be running, and every pending request runs in full.
* After `reconciler apply` (`execute_after_apply`): apply cannot know whether a `run` loop
  elsewhere is in the middle of a batch. It runs the whole request only for a connector the same
  apply created (created STOPPED, it never had a task); otherwise it performs the stop step and
  leaves the rest to the next `run` tick (outcome status `waiting`).
* A connector of a class a Kafka Connect worker runs (a Java class, `core.kinds`) has no task
  in our ticks at all: either path runs its whole request once the worker reports it STOPPED
  with no task left (what Java itself requires, `DistributedHerder.modifyConnectorOffsetsChecks`),
  waiting up to the timeout; else the outcome is `waiting` and the next apply goes on.

Every request runs under the connector's own transactional id (`offsets.writer`), claimed
before reading the topics: two executors of one request fence each other instead of racing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from reconciler.connectors.registry import runs_on_connect_worker
from reconciler.core.live import LiveState, RequestKind
from reconciler.core.models import DesiredConnector, OffsetsRequest
from reconciler.core.plan import Action
from reconciler.errors import ReconcilerError, RetryableError
from reconciler.kafka.io.store import LiveStore
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.executor import WAITING_MESSAGE, RequestExecution, Stop, outcome_of
from reconciler.offsets.model import OffsetsOutcome, OutcomeStatus, created_fresh, pending_requests
from reconciler.offsets.worker_stop import connect_worker_stopped
from reconciler.offsets.writer import OffsetsWriter


def run_offsets_requests(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    live: LiveState,
    planned: Sequence[Action],
    *,
    between_batches: bool,
    now_ms: Callable[[], int],
    store: LiveStore,
) -> list[OffsetsOutcome]:
    """An apply's offsets requests: every pending one in full `between_batches` (no task of
    ours can run), else the ones the apply planned (`planned`), as far as is safe; each read
    with `store` (`LiveStore.one_shot`, or the runtime's, kept across ticks)."""
    if between_batches:
        return run_pending_offsets_requests(settings, desired, live, now_ms=now_ms, store=store)
    return execute_after_apply(settings, desired, live, planned, now_ms=now_ms, store=store)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def run_pending_offsets_requests(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    live: LiveState,
    *,
    store: LiveStore,
    now_ms: Callable[[], int] = _now_ms,
) -> list[OffsetsOutcome]:
    """Every declared request not yet applied, in full (the caller guarantees no task runs).

    No I/O at all when nothing is pending. Never raises for one request's failure: each
    outcome says what happened (`failed`, `refused`, `retry` are reported and retried next tick).
    """
    return [
        execute_offsets_request(settings, connector, live, tasks_stopped=True, now_ms=now_ms, store=store)
        for connector in pending_requests(desired, live)
    ]


def execute_after_apply(
    settings: KafkaSettings,
    desired: Sequence[DesiredConnector],
    before: LiveState,
    pending: Sequence[Action],
    *,
    store: LiveStore,
    now_ms: Callable[[], int] = _now_ms,
) -> list[OffsetsOutcome]:
    """After `apply` wrote its plan: the plan's offsets actions (`pending`), given the live
    state the plan was made from (`before`). See the module doc for why apply mostly waits."""
    by_name = {connector.name: connector for connector in desired}
    outcomes = []
    for action in pending:
        connector = by_name.get(action.connector)
        if connector is None or connector.spec.offsets is None:
            continue
        fresh = created_fresh(before.connector(connector.name))
        outcomes.append(
            execute_offsets_request(settings, connector, before, tasks_stopped=fresh, now_ms=now_ms, store=store)
        )
    return outcomes


def execute_offsets_request(
    settings: KafkaSettings,
    desired: DesiredConnector,
    live: LiveState | None = None,
    *,
    store: LiveStore,
    tasks_stopped: bool = True,
    now_ms: Callable[[], int] = _now_ms,
) -> OffsetsOutcome:
    """Run (or resume) the connector's declared request, read with `store`. `tasks_stopped=False`:
    no proof that no task is running, so only the stop step is done (`waiting`). `live` only
    skips an applied id."""
    request = desired.spec.offsets
    if request is None:
        raise ValueError(f"connector {desired.name} declares no offsets request")
    if live is not None and live.is_applied(desired.name, RequestKind.OFFSETS, request.id):
        return outcome_of(desired.name, request, "already-applied", "the request was applied earlier")
    execution: RequestExecution | None = None
    if runs_on_connect_worker(desired.spec.connector_class):
        # Its tasks run on a Kafka Connect worker, not in our ticks: only a connector created
        # STOPPED by this apply is known to have none; otherwise the worker must report it stopped.
        tasks_stopped = live is not None and created_fresh(live.connector(desired.name))
        waiting: Callable[[], bool] | None = lambda: connect_worker_stopped(settings, desired.name)
    else:
        waiting = None
    try:
        store.prepare()  # the broker answers and the internal topics exist
        with OffsetsWriter(settings, desired.name) as writer:
            writer.claim()  # before reading: fences another executor of this connector's request
            state = store.read()
            execution = RequestExecution(settings, writer, desired, request, state, now_ms)
            return execution.run(tasks_stopped, waiting)
    except Stop as stop:
        return _ended(desired.name, request, stop.status, stop.message, execution)
    except RetryableError as exc:
        return _ended(desired.name, request, "retry", _text(exc), execution)
    except ReconcilerError as exc:
        return _ended(desired.name, request, "failed", _text(exc), execution)


def _ended(
    name: str, request: OffsetsRequest, status: OutcomeStatus, message: str, execution: RequestExecution | None
) -> OffsetsOutcome:
    """The outcome of a run ended early, with what it did before (a refusal after the stop step
    still wrote the stop's records, which `reconciler apply` counts)."""
    if execution is None:
        return outcome_of(name, request, status, message)
    return outcome_of(name, request, status, message, execution.steps, records_written=execution.written)


def _text(exc: ReconcilerError) -> str:
    return exc.message + (f" (hint: {exc.hint})" if exc.hint else "")


__all__ = ["WAITING_MESSAGE", "execute_after_apply", "execute_offsets_request", "run_pending_offsets_requests"]
