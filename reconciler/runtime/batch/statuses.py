"""What each connector and task should report after a tick, and the status records for it.

Connect's lifecycle rules (docs/state-machine.md) as pure functions over one connector's live
state. The worker does the I/O around them: it starts the Connector
(plugin load, validate, task configs) only when `should_start` says so, asks `decide` what to
write and what to run, and writes the records `StatusBook` returns.

| target  | connector instance                 | tasks 0..N-1 (N = committed count)           |
|---------|------------------------------------|----------------------------------------------|
| STARTED | RUNNING (task configs regenerated, | RUNNING, run one batch; a FAILED task stays  |
|         | committed when they differ)        | FAILED with no work until restarted or given |
|         |                                    | new task configs (Connect restarts tasks on  |
|         |                                    | a new task generation)                       |
| PAUSED  | PAUSED (not started: task configs  | PAUSED, no work; FAILED stays FAILED         |
|         | are kept as committed)             |                                              |
| STOPPED | STOPPED, zero-task commit ensured  | none: statuses tombstoned                    |

- A FAILED connector stays FAILED until restarted (or its config is updated: Connect restarts
  a connector on reconfiguration); STOPPED still applies to it. While it is FAILED and
  the target is STARTED its tasks run nothing and report UNASSIGNED (Connect's "not running
  here"); a FAILED task keeps its FAILED status and trace.
- A connector whose `stop()` throws as it is paused is FAILED from then on (`after_stop`, Java's
  `WorkerConnector.suspend`); stopped or deleted, it reaches its state all the same.
- Task ids at or above the committed count lose their statuses, and a deleted connector loses
  all of them: the leader's cleanup.

The rules, with Java's reasons, are in docs/state-machine.md#pause-and-resume,
docs/state-machine.md#failed-instances and docs/state-machine.md#cleanup-of-statuses; what a tick
writes is in docs/runtime.md#statuses-a-tick-writes.

Status `generation` (docs/compatibility.md, "Read side: deliberate differences"): Java writes
its worker group's rebalance generation (1 and up) and compares generations across workers: it
skips a FAILED or UNASSIGNED write over another worker's status of a higher generation
(`KafkaStatusBackingStore.send`, safe writes), and every reader ignores a task's UNASSIGNED
over a RUNNING of an equal or higher generation (`readTaskStatus`). A batch worker is in no
group, so it writes generation 0: below any Java worker's, so Java never discards a status of
its own because of one of ours. The one exception is a task's UNASSIGNED over a RUNNING, which
gets the RUNNING's generation + 1 so that readers (Java's and ours) take it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from reconciler.core.kinds import Kind
from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus, LiveConnector, LiveState
from reconciler.core.redact import scrub, secret_values
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.own_records import FailureMark
from reconciler.kafka.formats.records import Record

STARTED, PAUSED, STOPPED = ConnectTargetState.STARTED, ConnectTargetState.PAUSED, ConnectTargetState.STOPPED
FAILED, RUNNING, UNASSIGNED = InstanceState.FAILED, InstanceState.RUNNING, InstanceState.UNASSIGNED
BATCH_GENERATION = 0  # see the module doc
MAX_GENERATION = 2**31 - 1  # Java's status `generation` is an int


class Report(NamedTuple):
    """A status to report: state and trace (worker id and generation are the book's)."""

    state: InstanceState
    trace: str | None = None


RUNNING_REPORT = Report(InstanceState.RUNNING)
PAUSED_REPORT = Report(InstanceState.PAUSED)
STOPPED_REPORT = Report(InstanceState.STOPPED)
UNASSIGNED_REPORT = Report(InstanceState.UNASSIGNED)
RESTARTING_REPORT = Report(InstanceState.RESTARTING)


@dataclass(frozen=True, kw_only=True)
class Started:
    """The Connector instance started: its kind and its task configs for `tasks.max`, as
    stored (placeholders put back, `placeholders.reverse_transform`); the resolved configs the
    tasks run with and the values the placeholders gave stay in memory (None: as stored)."""

    kind: Kind
    task_configs: list[dict[str, str]]
    run_configs: list[dict[str, str]] | None = None
    connector_config: Mapping[str, str | None] | None = None
    secrets: frozenset[str] = frozenset()


@dataclass(frozen=True)
class StartFailed:
    """Loading, validating or asking the Connector for task configs failed. `secrets`: what
    its placeholders gave, which the trace may quote (the status book scrubs them)."""

    trace: str
    secrets: frozenset[str] = frozenset()


StartResult = Started | StartFailed


@dataclass(frozen=True)
class Health:
    """Failures that still hold at this tick, after restarts and reconfigurations."""

    connector_failed: bool = False
    failed_tasks: Mapping[int, str | None] = field(default_factory=dict)  # task id → trace
    connector_trace: str | None = None  # a connector failure of this tick (`after_stop`); else the status's trace


@dataclass(kw_only=True)
class Decision:
    """What the worker does for one connector this tick."""

    connector: Report | None  # None: tombstone (or nothing, when no status exists)
    tasks: dict[int, Report | None] = field(default_factory=dict)  # None: tombstone
    new_task_configs: list[dict[str, str]] | None = None  # write task-… records, then commit
    commit_count: int | None = None  # write `commit-<name>` with this count
    run: list[int] = field(default_factory=list)  # task ids that get one batch


def health(
    connector: LiveConnector,
    *,
    restarted_connector: bool,
    restarted_tasks: Sequence[int],
    config_offset: int | None,
    failure: FailureMark | None = None,
) -> Health:
    """Which FAILED statuses still hold: restarted instances start over, and so does a
    connector whose config was written after it failed (`config_offset` = offset of its
    latest `connector-` record; `failure` = our mark of when the failure was written, believed
    only for the trace it was written for; without one the failure holds until a restart)."""
    status = connector.connector_status
    failed = status is not None and status.state is FAILED and not restarted_connector
    if (
        failed
        and status is not None
        and failure is not None
        and failure.holds_for(status.trace)
        and config_offset is not None
        and config_offset >= failure.config_end
    ):
        failed = False
    failed_tasks = {
        task: s.trace
        for task, s in connector.task_statuses.items()
        if s.state is FAILED and task not in restarted_tasks
    }
    return Health(failed, failed_tasks)


def should_start(connector: LiveConnector, state: Health) -> bool:
    """Start the Connector instance (and generate task configs) only when STARTED and healthy."""
    return connector.exists and connector.target_state is STARTED and not state.connector_failed


def suspending(connector: LiveConnector) -> bool:
    """The connector reports RUNNING but is no longer to run: paused, stopped, or deleted with its
    config still known. Its plugin's `stop()` is due, once (after this tick it reports otherwise)."""
    status = connector.connector_status
    if status is None or status.state is not InstanceState.RUNNING or not connector.config:
        return False
    return not connector.exists or connector.target_state in (PAUSED, STOPPED)


def after_stop(connector: LiveConnector, state: Health, stop_trace: str | None) -> Health:
    """The health after the plugin's `stop()` (`stop_trace`: its traceback when it raised), as
    Java's `WorkerConnector.suspend` has it: a stop() that throws while pausing fails the
    connector (its tasks are paused all the same), while a stopped or deleted connector
    reaches its state anyway."""
    if stop_trace is None or not connector.exists or connector.target_state is not PAUSED:
        return state
    return replace(state, connector_failed=True, connector_trace=stop_trace)


def decide(connector: LiveConnector, state: Health, start: StartResult | None) -> Decision:
    """The statuses, config records and work for one connector (see the module table)."""
    if not connector.exists:
        return _deleted(connector)
    if connector.target_state is STOPPED:
        return _stopped(connector)
    committed = len(connector.task_configs)
    if state.connector_failed or isinstance(start, StartFailed):
        trace = start.trace if isinstance(start, StartFailed) else state.connector_trace or _trace(connector)
        return _idle(connector, state, Report(FAILED, trace), committed)
    if connector.target_state is PAUSED:
        return _idle(connector, state, PAUSED_REPORT, committed)
    if start is None:
        raise ValueError(f"connector {connector.name!r} is to run but was not started (see should_start)")
    return _running(connector, state, start)


def _trace(connector: LiveConnector) -> str | None:
    status = connector.connector_status
    return None if status is None else status.trace


def _deleted(connector: LiveConnector) -> Decision:
    return Decision(connector=None, tasks={task: None for task in connector.task_statuses})


def _stopped(connector: LiveConnector) -> Decision:
    decision = Decision(connector=STOPPED_REPORT, tasks={task: None for task in connector.task_statuses})
    if connector.task_count != 0:  # A stopped connector has an empty committed task set (docs/state-machine.md#stopping-a-connector)
        decision.commit_count = 0
    return decision


def _idle(connector: LiveConnector, state: Health, report: Report, committed: int) -> Decision:
    """No work: PAUSED (tasks PAUSED) or FAILED connector (tasks UNASSIGNED unless PAUSED)."""
    task_report = PAUSED_REPORT if connector.target_state is PAUSED else UNASSIGNED_REPORT
    decision = Decision(connector=report, tasks=_retired(connector, committed))
    for task in range(committed):
        failed = task in state.failed_tasks
        decision.tasks[task] = Report(FAILED, state.failed_tasks[task]) if failed else task_report
    return decision


def _running(connector: LiveConnector, state: Health, start: Started) -> Decision:
    configs = start.task_configs
    # Connect's `AbstractHerder.taskConfigsChanged`: a new count, a task config that differs, or
    # a connector config written since the last commit (the tasks must restart with it even when
    # the task configs they get are the same).
    changed = (
        connector.inconsistent
        or connector.task_count != len(configs)
        or connector.task_configs != configs
        or not connector.config_applied
    )
    decision = Decision(connector=RUNNING_REPORT, tasks=_retired(connector, len(configs)))
    if changed:
        decision.new_task_configs = configs
        decision.commit_count = len(configs)
    for task in range(len(configs)):
        if task in state.failed_tasks and not changed:  # a new task generation restarts tasks
            decision.tasks[task] = Report(FAILED, state.failed_tasks[task])
        else:
            decision.tasks[task] = RUNNING_REPORT
            decision.run.append(task)
    return decision


def _retired(connector: LiveConnector, count: int) -> dict[int, Report | None]:
    """Tombstones for the statuses of task ids that no longer exist."""
    return {task: None for task in connector.task_statuses if task >= count}


def _no_version(name: str) -> str | None:
    return None


class StatusBook:
    """The status topic as this tick sees it; returns records only for real changes.

    A status is rewritten when its state, trace or plugin version changes, or when another
    worker's id holds a status this runner now asserts (`claims`: a crashed runner's RUNNING,
    say), never when only the generation would: repeated ticks of an unchanged pipeline write
    nothing, and a new owner rewrites each status once, as Java's new owner does after a
    rebalance, so `status` names it and its stop releases them.
    `versions`: connector name → the version of its plugin, which each status carries (Kafka
    4's `version`, Connect's `Connector.version()`; None when unknown). Java's safe put
    (`KafkaStatusBackingStore.send`) is not applied: it keeps a worker that lost an assignment
    in a rebalance from overwriting the new owner's status, and a batch worker, in no
    rebalance, reports only what it decided this tick (two of them never commit at once: the
    tick's transactional id fences the other). A trace never carries a secret value of its connector's
    configs (`core.redact`): the status topic is read by anyone who may run `status`.
    """

    def __init__(self, live: LiveState, worker_id: str, versions: Callable[[str], str | None] = _no_version) -> None:
        self.worker_id = worker_id
        self._live = live
        self._versions = versions
        self._secrets: dict[str, frozenset[str]] = {}
        self.connectors: dict[str, InstanceStatus] = {}
        self.tasks: dict[str, dict[int, InstanceStatus]] = {}
        for name, connector in live.connectors.items():
            if connector.connector_status is not None:
                self.connectors[name] = connector.connector_status
            if connector.task_statuses:
                self.tasks[name] = dict(connector.task_statuses)

    def connector(self, name: str, report: Report | None) -> list[Record]:
        changed, status = self._next(name, self.connectors.get(name), self._scrubbed(name, report), task=False)
        if not changed:
            return []
        if status is None:
            del self.connectors[name]
        else:
            self.connectors[name] = status
        return [rec.connector_status_record(name, status)]

    def task(self, name: str, task: int, report: Report | None) -> list[Record]:
        tasks = self.tasks.setdefault(name, {})
        changed, status = self._next(name, tasks.get(task), self._scrubbed(name, report), task=True)
        if not changed:
            return []
        if status is None:
            del tasks[task]
        else:
            tasks[task] = status
        return [rec.task_status_record(name, task, status)]

    def add_secrets(self, name: str, values: frozenset[str]) -> None:
        """Values the runtime resolved for `name` (placeholders' values): scrubbed from its traces too."""
        if values:
            self._secrets[name] = self._secrets_of(name) | values

    def decision(self, name: str, decision: Decision) -> list[Record]:
        """Task statuses first, then the connector's (a reader sees tasks settle first)."""
        records: list[Record] = []
        for task, report in sorted(decision.tasks.items()):
            records += self.task(name, task, report)
        return records + self.connector(name, decision.connector)

    def _scrubbed(self, name: str, report: Report | None) -> Report | None:
        if report is None or not report.trace:
            return report
        return report._replace(trace=scrub(report.trace, self._secrets_of(name)))

    def _secrets_of(self, name: str) -> frozenset[str]:
        found = self._secrets.get(name)
        if found is None:
            connector, keys = self._live.connector(name), self._live.sensitive.get(name, ())
            configs = [] if connector is None else [connector.config or {}, *connector.task_configs]
            found = self._secrets[name] = frozenset[str]().union(*(secret_values(c, keys) for c in configs))
        return found

    def _next(
        self, name: str, current: InstanceStatus | None, report: Report | None, *, task: bool
    ) -> tuple[bool, InstanceStatus | None]:
        """(write?, the status to write; None = tombstone)."""
        if report is None:
            return current is not None, None
        version = self._versions(name)
        same = current is not None and (current.state, current.trace, current.version) == (report.state, report.trace, version)
        if same and current is not None and not claims(current, self.worker_id):
            return False, current
        status = InstanceStatus(
            state=report.state, trace=report.trace, worker_id=self.worker_id,
            generation=_generation(current, report, task), version=version,
        )
        return True, status


def claims(current: InstanceStatus, worker_id: str) -> bool:
    """A status of one of the states a runner holds between batches and releases when it stops
    (RUNNING, PAUSED, STOPPED) that names another worker (a crashed runner, an earlier owner):
    the runner reporting it now writes it under its own id. FAILED keeps the worker it failed
    on (with its trace), UNASSIGNED names no owner, RESTARTING lasts only until the same tick
    writes what the restart leads to."""
    return current.worker_id != worker_id and current.state in _CLAIMED


def _generation(current: InstanceStatus | None, report: Report, task: bool) -> int:
    """BATCH_GENERATION, except a task's UNASSIGNED over a RUNNING: one above it, or every
    reader (`KafkaStatusBackingStore.readTaskStatus`) would keep the RUNNING."""
    if task and report.state is UNASSIGNED and current is not None and current.state is RUNNING:
        return min(current.generation + 1, MAX_GENERATION)
    return BATCH_GENERATION
# What a runner reporting an instance takes over from another worker's id (`claims`).
_CLAIMED = frozenset({InstanceState.RUNNING, InstanceState.PAUSED, InstanceState.STOPPED})
# What a stopping worker turns UNASSIGNED; FAILED keeps its trace (docs/runtime.md#liveness-between-batches).
_RELEASED = frozenset({InstanceState.RUNNING, InstanceState.PAUSED, InstanceState.STOPPED, InstanceState.RESTARTING})


def releasing(connector: LiveConnector, worker_id: str) -> tuple[bool, list[int]]:
    """What a worker that stops reports UNASSIGNED, as Connect's `onShutdown` does: (the
    connector?, its tasks) among the statuses this worker wrote, except FAILED ones."""

    def ours(status: InstanceStatus | None) -> bool:
        return status is not None and status.worker_id == worker_id and status.state in _RELEASED

    tasks = [task for task, status in sorted(connector.task_statuses.items()) if ours(status)]
    return ours(connector.connector_status), tasks


def release_records(book: StatusBook, live: LiveState) -> list[Record]:
    """UNASSIGNED for every instance `releasing` names, tasks before their connector."""
    records: list[Record] = []
    for name, connector in sorted(live.connectors.items()):
        connector_released, tasks = releasing(connector, book.worker_id)
        for task in tasks:
            records += book.task(name, task, UNASSIGNED_REPORT)
        if connector_released:
            records += book.connector(name, UNASSIGNED_REPORT)
    return records
