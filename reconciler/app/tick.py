"""One tick of `run` / `watch`: apply the manifests, then do what a Connect worker would.

1. apply the manifests exactly as `reconciler apply` does (`app.apply`), with every pending
   offsets request run in full: no task of this worker runs between two batches, so a request
   can stop, alter and resume its connector here (`app.offsets`);
2. one batch of every connector of the group (`runtime.batch.worker.BatchWorker`): restarts, task
   configs, the tasks on Spark, their statuses (docs/runtime.md#one-tick).

A failed apply is reported (`on_apply_error`) and the batch still runs: a long-running worker
keeps the connectors already declared moving while the manifests or the control plane are wrong.
Not when the apply found the broker unreachable: the batch would only wait for it once more.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from reconciler.app.apply import ApplyOutcome, apply, apply_writer
from reconciler.core.live import LiveState
from reconciler.core.models import DesiredConnector
from reconciler.core.plan import PlanOptions
from reconciler.core.planner import NO_OPTIONS
from reconciler.errors import BrokerUnreachable, ReconcilerError
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import OffsetsOutcome
from reconciler.runtime.batch import auto_restart
from reconciler.runtime.batch.reports import BatchReport
from reconciler.runtime.batch.tasks import TaskExecutor
from reconciler.runtime.batch.worker import BatchWorker


@dataclass
class TickReport(BatchReport):
    """A batch's report, with the tick's apply and offsets requests (None: no apply ran)."""

    applied: ApplyOutcome | None = None
    offsets: list[OffsetsOutcome] = field(default_factory=list)

    @classmethod
    def of(cls, batch: BatchReport, applied: ApplyOutcome | None) -> TickReport:
        fields = {f.name: getattr(batch, f.name) for f in dataclasses.fields(batch)}
        return cls(**fields, applied=applied, offsets=list(applied.offsets) if applied is not None else [])


class TickRunner:
    """Runs the ticks of one `run`/`watch` process against one group with one executor (the
    batch itself is `runtime.worker.BatchWorker`'s); reuse it across ticks (Spark stays up)."""

    def __init__(
        self,
        settings: KafkaSettings,
        executor: TaskExecutor,
        *,
        worker_id: str | None = None,
        plan_options: PlanOptions = NO_OPTIONS,
        stopping: Callable[[], bool] = lambda: False,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        auto_restart_unit_s: float = auto_restart.DEFAULT_UNIT_S,
    ) -> None:
        self.settings = settings
        self.plan_options = plan_options  # the manifests' paths are each tick's
        self._now_ms = now_ms
        self.batches = BatchWorker(
            settings, executor, worker_id=worker_id, stopping=stopping, now_ms=now_ms,
            auto_restart_unit_s=auto_restart_unit_s,
        )
        self._apply_writer = apply_writer(settings)  # its claim kept across ticks (`app.apply`)
        # The last tick or apply found the broker unreachable: `release` then writes nothing
        # (it would only wait for the broker once more, past a stopping loop's grace period).
        self.broker_unreachable = False

    @property
    def executor(self) -> TaskExecutor:
        return self.batches.executor

    @property
    def worker_id(self) -> str:
        return self.batches.worker_id

    def tick(
        self,
        desired: Sequence[DesiredConnector] | None,
        *,
        manifest_paths: Sequence[str] = (),
        closing: bool = False,
        on_apply_error: Callable[[ReconcilerError], None] | None = None,
        on_batch_error: Callable[[ApplyOutcome], None] | None = None,
    ) -> TickReport:
        """Apply `desired` and run its pending offsets requests (None: skip both), then run one batch.

        `on_apply_error`: report a failed apply there and still run the batch; without it the
        error is raised. An unreachable broker is raised either way: no batch can run.
        `on_batch_error`: when the batch fails after an apply committed, called with what the
        apply wrote before the error is raised (a failed `run` says what it changed).
        """
        applied = None
        policies = None if desired is None else auto_restart.policies(desired)
        with self._contact():
            if desired is not None:
                try:
                    applied = self.apply(desired, manifest_paths=manifest_paths)
                except BrokerUnreachable:
                    raise
                except ReconcilerError as exc:
                    if on_apply_error is None:
                        raise
                    on_apply_error(exc)
            try:
                batch = self.batches.work(closing=closing, auto_restart=policies)
            except ReconcilerError:
                if applied is not None and on_batch_error is not None:
                    on_batch_error(applied)
                raise
            return TickReport.of(batch, applied)

    def apply(self, desired: Sequence[DesiredConnector], *, manifest_paths: Sequence[str] = ()) -> ApplyOutcome:
        """`reconciler apply`, with every pending offsets request run in full (between batches);
        the outcome's plan shows offsets requests from → to, as `apply` prints it."""
        with self._contact():
            self.batches.prepare()  # the store reads prepared topics: create them on a new group first
            options = dataclasses.replace(self.plan_options, manifest_paths=tuple(manifest_paths))
            outcome = apply(
                self.settings, desired, options, store=self.batches.store, between_batches=True, now_ms=self._now_ms,
                digests=False, writer=self._apply_writer,
            )
        self.batches.topics_ready = True  # the apply checked the broker and the internal topics
        return outcome

    def work(self, *, closing: bool = False) -> BatchReport:
        """One batch without an apply before it (the manifests unknown: no automatic restart)."""
        with self._contact():
            return self.batches.work(closing=closing)

    @contextlib.contextmanager
    def _contact(self) -> Iterator[None]:
        """Remember whether the broker answered (`broker_unreachable`)."""
        try:
            yield
        except BrokerUnreachable:
            self.broker_unreachable = True
            raise
        self.broker_unreachable = False

    def read_live(self) -> LiveState:
        """The live state now (what the REST API serves after a tick), read with the ticks' store."""
        return self.batches.read_live()

    def release(self) -> int | None:
        """This worker's instances reported UNASSIGNED, as a Connect worker does when it stops;
        None (nothing tried) when the broker was unreachable the last time."""
        return None if self.broker_unreachable else self.batches.release()

    @property
    def reached(self) -> bool:
        """The broker answered once: ticks may have written statuses naming this worker."""
        return self.batches.topics_ready

    def close(self) -> None:
        self._apply_writer.close()
        self.batches.close()
