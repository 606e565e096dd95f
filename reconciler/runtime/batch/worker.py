"""One batch of the worker: what a Connect worker does for a group, after the tick's apply.

A tick (`reconciler.app.tick`) applies the manifests and runs their offsets requests, then calls
`BatchWorker.work`. That part is level-based, like a Connect worker's loop: it knows the whole
config, status and reconciler topics (read by one store kept across ticks, each read continuing
from the last: `kafka.io.store`), and every connector in the config topic (not only the manifests'
ones) is brought to its target state:

1. claim the worker's transactional id (`reconciler-<group>-worker`: a second worker on the
   same group fences this one, so two workers never both commit task configs), then read
   the topics to the end;
2. execute pending KIP-745 restarts (`restarts`: the first tick on a group marks where it
   started, and older restart records are history), and the automatic restarts
   `spec.autoRestart` asks for (`auto_restart`): the instances to restart report RESTARTING,
   committed with the auto-restart history before anything starts again;
3. per connector, `statuses.decide`: start the Connector when STARTED (plugin lookup,
   `validate`, `task_configs`), write changed task configs then `commit-<name>` (one
   transaction: task configs before their commit, all or nothing); for a source of a new task
   generation, fence the previous one and write `tasks-fencing-<name>` (KIP-618,
   `runtime.batch.fencing`); the statuses before the batch, with a mark of when a connector failed
   (`failures`). Connectors of a class our runtime does not run (a Java class,
   `runtime.batch.lifecycle.left_to_connect`) are left to the group's Connect workers;
4. one `run_batch` for every runnable task of every connector (the executor isolates them);
5. the batch's outcomes as statuses (FAILED with the traceback), with the restart marks, the
   topics the tasks used for the first time (KIP-558, `active_topics`) and each connector's
   last batch (`batch/<name>` in our topic), in one transaction: a restart counts as executed
   only once its statuses are committed.

`release` is what a Connect worker does when it stops: every instance it reported (except
FAILED ones) becomes UNASSIGNED (docs/runtime.md#liveness-between-batches).

Words: a `RestartPlan` is Connect's name for what one restart request restarts; `_BatchWork` is
what `_decide` collects for the batch (task works, and the records written before it).

Failpoints (crash tests, `reconciler.failpoints`): `worker.after_restarting`,
`worker.after_task_commit` (task configs committed, batch not run) and `worker.before_status`
(batch done, statuses and restart marks not written).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reconciler import failpoints
from reconciler.core.kinds import Kind
from reconciler.core.live import InstanceState, LiveConnector, LiveState
from reconciler.failpoints import Failpoint
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Record
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.io.store import LiveStore, TopicsMode, prepare
from reconciler.kafka.replay.topics import StoreView
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch import auto_restart
from reconciler.runtime.batch.active_topics import forgotten_topics, topic_records
from reconciler.runtime.batch.auto_restart import AutoRestartPolicy
from reconciler.runtime.batch.fencing import fence_generation
from reconciler.runtime.batch.lifecycle import left_to_connect, plugin_versions, start_connector, stop_connector
from reconciler.runtime.batch.liveness import batch_records, released_waits, running_here
from reconciler.runtime.batch.reports import BatchReport, connector_reports
from reconciler.runtime.batch.restarts import RestartPlan, plan_restart
from reconciler.runtime.batch.statuses import (
    RESTARTING_REPORT,
    Decision,
    Report,
    Started,
    StatusBook,
    after_stop,
    decide,
    health,
    release_records,
    should_start,
    suspending,
)
from reconciler.runtime.batch.tasks import TaskWork

if TYPE_CHECKING:
    from reconciler.runtime.batch.tasks import TaskExecutor, TaskOutcome

LOG = logging.getLogger(__name__)
WORKER_TRANSACTION_SUFFIX = "-worker"


def default_worker_id() -> str:
    """Connect uses the REST listener's `host:port`; a batch worker has no port: `host:pid`."""
    return f"{socket.gethostname()}:{os.getpid()}"


# --- the batch --------------------------------------------------------------------------------


@dataclass
class _BatchWork:
    """What the batch will do, built connector by connector."""

    works: list[TaskWork] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)  # config records, then pre-batch statuses


class BatchWorker:
    """Runs batches against one group with one executor; reuse it across ticks (Spark stays up)."""

    def __init__(
        self,
        settings: KafkaSettings,
        executor: TaskExecutor,
        *,
        worker_id: str | None = None,
        stopping: Callable[[], bool] = lambda: False,
        now_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
        auto_restart_unit_s: float = auto_restart.DEFAULT_UNIT_S,
    ) -> None:
        self.settings = settings
        self.executor = executor
        self.worker_id = worker_id or default_worker_id()
        # Asked when the batch starts: a stop requested during the tick makes it the closing one.
        self.stopping = stopping
        self._now_ms = now_ms
        self._auto_restart_unit_ms = auto_restart.unit_ms(auto_restart_unit_s)
        # The broker answered and the internal topics exist (an apply checked them, or `_prepare`).
        self.topics_ready = False
        # One store for every tick: each read continues from where the last one stopped.
        self.store = LiveStore(settings, topics=TopicsMode.PREPARED)
        # One writer for every tick: a claim of its own each tick, its ListOffsets consumers kept.
        self._writer = TransactionalWriter(settings, transactional_id=settings.transactional_id + WORKER_TRANSACTION_SUFFIX)

    def work(
        self, *, closing: bool = False, auto_restart: Mapping[str, AutoRestartPolicy] | None = None
    ) -> BatchReport:
        """Everything after apply: restarts, task configs, one batch, statuses.

        `auto_restart`: the manifests' enabled `spec.autoRestart` policies by connector; None
        (manifests unknown) restarts nothing automatically and leaves the history alone."""
        self.prepare()
        writer = self._writer
        # Claimed afresh before reading: a commit below proves nobody claimed the group since.
        # Not kept from the last tick as the apply's claim is: a claim made since would surface
        # only at a write, and this one may come after the batch, which cannot be done again.
        writer.reset()
        writer.claim()
        view = self.store.read()
        return self._work(view, writer, closing, auto_restart)

    def read_live(self) -> LiveState:
        """The live state now (what the REST API serves after a tick), read with the ticks' store."""
        self.prepare()
        return self.store.read().live

    def close(self) -> None:
        self._writer.close()
        self.store.close()
        self.executor.close()

    def release(self) -> int:
        """What a Connect worker writes when it stops its connectors and tasks: UNASSIGNED for
        each instance this worker reported (FAILED ones keep their trace), after the plugin's
        `stop()` for connectors it reported RUNNING; and the end of the waits it recorded
        (`liveness.released_waits`). Returns how many statuses it released."""
        self.prepare()
        writer = self._writer
        writer.reset()  # claimed afresh, as every tick does
        with writer:
            writer.claim()  # the same id as the ticks: a read that a commit proves current
            view = self.store.read()
            for connector in running_here(view.live, self.worker_id):
                stop_connector(connector)  # a failure is logged; the release stands (docs/compatibility.md)
            statuses = release_records(StatusBook(view.live, self.worker_id, plugin_versions(view.live)), view.live)
            writer.write(statuses + released_waits(view.live, self.worker_id))
            return len(statuses)

    def prepare(self) -> None:
        """Check the broker and create the group's internal topics, once."""
        if not self.topics_ready:
            prepare(self.settings)
            self.topics_ready = True

    def _work(
        self,
        view: StoreView,
        writer: TransactionalWriter,
        closing: bool,
        policies: Mapping[str, AutoRestartPolicy] | None,
    ) -> BatchReport:
        book = StatusBook(view.live, self.worker_id, plugin_versions(view.live))
        report = BatchReport(config_end=view.config_end)
        automatic = auto_restart.tick_auto_restarts(
            view.live, self._restart_plans(view), policies, view.config_offsets,
            now_ms=self._now_ms(), unit_ms=self._auto_restart_unit_ms, failures=view.failures,
        )
        restarts = automatic.plans
        # The first tick on a group marks where it started: older restart records are history.
        started = [own.runtime_started_record(view.config_end)] if view.first_tick else []
        restarting = started + _restarting_records(book, restarts) + automatic.records
        tick = self._decide(view, restarts, book)
        if tick.works:  # a cluster reached before anything is written: an unreachable one writes nothing
            self.executor.prepare()  # (a local master starts at the first job: an idle tick, never)
        report.records_written += writer.write(restarting)
        if restarting:
            failpoints.hit(Failpoint.WORKER_AFTER_RESTARTING)
        report.records_written += writer.write(tick.records)
        failpoints.hit(Failpoint.WORKER_AFTER_TASK_COMMIT)
        works = tick.works
        if works and self.stopping():
            # Asked to stop before the batch began (say, while Spark would start): none begins.
            # The statuses above stand; nothing moved, so there is nothing to commit.
            LOG.info("stop requested: no batch in this tick")
            works = []
        outcomes = self.executor.run_batch(works, closing=closing or self.stopping()) if works else []
        failpoints.hit(Failpoint.WORKER_BEFORE_STATUS)
        final = _outcome_records(book, works, outcomes) + self._marks(view) + self._topics(view, outcomes)
        batches = self._batches(view, outcomes)  # our topic's: not counted as config/status records
        report.records_written += writer.write(final + batches) - len(batches)
        report.works, report.outcomes = len(works), list(outcomes)
        report.connectors = connector_reports(view.live, book, outcomes, restarts, automatic.restarted)
        report.left_to_connect = [name for name, c in sorted(view.live.connectors.items()) if left_to_connect(c)]
        return report

    def _restart_plans(self, view: StoreView) -> dict[str, RestartPlan]:
        plans: dict[str, RestartPlan] = {}
        for name, request in sorted(view.pending_restarts.items()):
            connector = view.live.connector(name)
            if connector is not None and left_to_connect(connector):
                continue  # a Connect worker executes its restart records itself
            status = None if connector is None or not connector.exists else connector.connector_status
            tasks = {} if connector is None else connector.task_statuses
            plans[name] = plan_restart(request, status, tasks)
            LOG.info("restart of %s: %s", name, plans[name])
        return plans

    def _decide(self, view: StoreView, restarts: dict[str, RestartPlan], book: StatusBook) -> _BatchWork:
        tick = _BatchWork()
        for name, connector in sorted(view.live.connectors.items()):
            if left_to_connect(connector):
                continue
            restart = restarts.get(name)
            state = health(
                connector,
                restarted_connector=restart is not None and restart.connector,
                restarted_tasks=restart.tasks if restart is not None else (),
                config_offset=view.config_offsets.get(name),
                failure=view.failures.get(name),
            )
            if suspending(connector):
                state = after_stop(connector, state, stop_connector(connector))
            start = start_connector(connector) if should_start(connector, state) else None
            decision = decide(connector, state, start)
            if start is not None:  # a trace may quote what its placeholders gave
                book.add_secrets(name, start.secrets)
            tick.records += _config_records(name, decision)
            statuses = book.decision(name, decision)
            tick.records += statuses + _failure_marks(view, name, decision, statuses)
            if isinstance(start, Started):
                tick.records += self._fencing(view, connector, start, decision)
                tick.works += _works(connector, start, decision)
        return tick

    def _fencing(self, view: StoreView, connector: LiveConnector, start: Started, decision: Decision) -> list[Record]:
        """KIP-618, before source tasks of a new generation run: fence, then the task-count record."""
        name = connector.name
        new_generation = decision.commit_count is not None or name in view.pending_fencing
        if start.kind != Kind.SOURCE or not decision.run or not new_generation:
            return []
        configs = decision.new_task_configs if decision.new_task_configs is not None else connector.task_configs
        recorded = view.task_count_records.get(name)
        config = start.connector_config if start.connector_config is not None else connector.config or {}
        return fence_generation(self.settings, name, config, len(configs), recorded)

    def _marks(self, view: StoreView) -> list[Record]:
        now = self._now_ms()
        return [own.restart_processed_record(name, req.offset, now) for name, req in sorted(view.pending_restarts.items())]

    def _topics(self, view: StoreView, outcomes: Sequence[TaskOutcome]) -> list[Record]:
        """KIP-558: the topics the batch's tasks used that their connectors do not list yet,
        and the forgotten ones of deleted connectors (`active_topics`)."""
        return topic_records(view.live, outcomes, self._now_ms()) + forgotten_topics(view.live)

    def _batches(self, view: StoreView, outcomes: Sequence[TaskOutcome]) -> list[Record]:
        return batch_records(view.live, outcomes, self.worker_id, self._now_ms())


def _failure_marks(view: StoreView, name: str, decision: Decision, statuses: Sequence[Record]) -> list[Record]:
    """Mark when a FAILED connector status this tick writes was written (see `failures`); drop
    the mark when the connector reports anything else."""
    key = rec.STATUS_CONNECTOR_PREFIX.encode() + name.encode()
    if not any(record.key == key for record in statuses):
        return []
    report = decision.connector
    if report is not None and report.state is InstanceState.FAILED:
        return [own.connector_failed_record(name, view.config_end, report.trace)]
    return [own.connector_failed_tombstone(name)] if name in view.failures else []


def _restarting_records(book: StatusBook, restarts: dict[str, RestartPlan]) -> list[Record]:
    records: list[Record] = []
    for name, restart in restarts.items():
        for task in restart.tasks:
            records += book.task(name, task, RESTARTING_REPORT)
        if restart.connector:
            records += book.connector(name, RESTARTING_REPORT)
    return records


def _config_records(name: str, decision: Decision) -> list[Record]:
    """Task configs first, then the commit that makes them visible (docs/state-machine.md#task-configs-and-commits)."""
    records = [
        rec.task_config_record(name, task, dict(sorted(config.items())))
        for task, config in enumerate(decision.new_task_configs or [])
    ]
    if decision.commit_count is not None:
        records.append(rec.commit_record(name, decision.commit_count))
    return records


def _works(connector: LiveConnector, start: Started, decision: Decision) -> list[TaskWork]:
    # What the tasks run with: the configs resolved by the config providers (`Started`), which
    # reach the executors in memory only. Unchanged task configs equal the stored ones
    # (`statuses._running` compares them), so the resolved ones are theirs.
    props = dict(start.connector_config if start.connector_config is not None else connector.config or {})
    if start.run_configs is not None:
        configs: Sequence[Mapping[str, str | None]] = start.run_configs
    else:
        configs = decision.new_task_configs if decision.new_task_configs is not None else connector.task_configs
    return [
        TaskWork(
            connector=connector.name,
            task_id=task,
            connector_class=props.get("connector.class") or "",
            kind=start.kind,
            connector_config=props,
            task_config={k: v for k, v in configs[task].items() if v is not None},
            task_count=len(configs),
        )
        for task in decision.run
    ]


def _outcome_records(book: StatusBook, works: Sequence[TaskWork], outcomes: Sequence[TaskOutcome]) -> list[Record]:
    by_task = {(o.connector, o.task_id): o for o in outcomes}
    records: list[Record] = []
    for work in works:
        outcome = by_task.get((work.connector, work.task_id))
        if outcome is None:
            report = Report(InstanceState.FAILED, "the executor returned no outcome for this task")
        elif outcome.error is not None:
            report = Report(InstanceState.FAILED, outcome.error)
        else:
            continue  # RUNNING was written before the batch
        records += book.task(work.connector, work.task_id, report)
    return records
