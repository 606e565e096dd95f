"""Connect's lifecycle rules per connector (`decide`), failures that hold (`health`), and the
status book that writes only real changes."""

from __future__ import annotations

import json

import pytest

from reconciler.core.kinds import Kind
from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus, LiveConnector, LiveState
from reconciler.kafka.formats.own_records import FailureMark, trace_digest
from reconciler.runtime.batch.statuses import (
    BATCH_GENERATION,
    Decision,
    Health,
    Report,
    StartFailed,
    Started,
    StatusBook,
    after_stop,
    decide,
    health,
    should_start,
    suspending,
)

STARTED, PAUSED_T, STOPPED_T = ConnectTargetState.STARTED, ConnectTargetState.PAUSED, ConnectTargetState.STOPPED
RUNNING, PAUSED, STOPPED = InstanceState.RUNNING, InstanceState.PAUSED, InstanceState.STOPPED
FAILED, UNASSIGNED = InstanceState.FAILED, InstanceState.UNASSIGNED
CONFIG = {"connector.class": "datagen", "tasks.max": "2", "name": "c"}
TASKS = [{"task.index": "0"}, {"task.index": "1"}]


def status(state: InstanceState, trace: str | None = None, worker: str = "w:1", gen: int = 5) -> InstanceStatus:
    return InstanceStatus(state=state, trace=trace, worker_id=worker, generation=gen)


def connector(
    target: ConnectTargetState = STARTED,
    *,
    config: dict[str, str | None] | None = CONFIG,
    task_configs: list[dict[str, str | None]] | None = None,
    task_count: int | None = None,
    connector_status: InstanceStatus | None = None,
    tasks: dict[int, InstanceStatus] | None = None,
    inconsistent: bool = False,
) -> LiveConnector:
    configs = list(task_configs or [])
    return LiveConnector(
        name="c",
        config=config,
        target_state=target,
        task_count=task_count if task_count is not None or not configs else len(configs),
        task_configs=configs,
        inconsistent=inconsistent,
        connector_status=connector_status,
        task_statuses=tasks or {},
    )


R = Report


def test_stopped_connector_has_no_tasks_and_a_zero_commit() -> None:
    live = connector(STOPPED_T, task_configs=list(TASKS), tasks={0: status(RUNNING), 1: status(FAILED, "x")})
    assert decide(live, Health(), None) == Decision(
        connector=R(STOPPED), tasks={0: None, 1: None}, new_task_configs=None, commit_count=0, run=[]
    )
    # already committed empty (what `apply` writes before STOPPED): no second commit
    assert decide(connector(STOPPED_T, task_count=0), Health(), None).commit_count is None
    # created STOPPED (KIP-980), never committed: the empty commit is written
    assert decide(connector(STOPPED_T), Health(), None).commit_count == 0


def test_stopping_a_failed_connector_reports_stopped() -> None:
    live = connector(STOPPED_T, task_count=0, connector_status=status(FAILED, "boom"))
    assert decide(live, Health(connector_failed=True), None).connector == R(STOPPED)


def test_paused_tasks_keep_committed_configs_and_failed_ones_stay_failed() -> None:
    live = connector(
        PAUSED_T,
        task_configs=list(TASKS),
        tasks={0: status(RUNNING), 1: status(FAILED, "trace"), 2: status(RUNNING)},
    )
    decision = decide(live, health(live, restarted_connector=False, restarted_tasks=(), config_offset=None), None)
    assert decision == Decision(
        connector=R(PAUSED),
        tasks={0: R(PAUSED), 1: R(FAILED, "trace"), 2: None},
        new_task_configs=None,
        commit_count=None,
        run=[],
    )


def test_paused_with_zero_tasks() -> None:
    assert decide(connector(PAUSED_T, task_count=0), Health(), None) == Decision(
        connector=R(PAUSED), tasks={}, new_task_configs=None, commit_count=None, run=[]
    )


def test_restarted_failed_task_of_paused_connector_reports_paused() -> None:
    live = connector(PAUSED_T, task_configs=list(TASKS), tasks={1: status(FAILED, "trace")})
    state = health(live, restarted_connector=False, restarted_tasks=(1,), config_offset=None)
    assert decide(live, state, None).tasks == {0: R(PAUSED), 1: R(PAUSED)}


def test_started_with_new_task_configs_writes_them_and_runs_every_task() -> None:
    live = connector(STARTED, tasks={0: status(FAILED, "old")})
    decision = decide(live, Health(failed_tasks={0: "old"}), Started(kind=Kind.SOURCE, task_configs=list(TASKS)))
    # a new task generation restarts failed tasks, as Connect does on reconfiguration
    assert decision == Decision(
        connector=R(RUNNING),
        tasks={0: R(RUNNING), 1: R(RUNNING)},
        new_task_configs=list(TASKS),
        commit_count=2,
        run=[0, 1],
    )


def test_started_with_unchanged_configs_writes_nothing_and_failed_task_gets_no_work() -> None:
    live = connector(STARTED, task_configs=list(TASKS), tasks={0: status(RUNNING), 1: status(FAILED, "t")})
    state = health(live, restarted_connector=False, restarted_tasks=(), config_offset=None)
    decision = decide(live, state, Started(kind=Kind.SINK, task_configs=[dict(t) for t in TASKS]))
    assert decision == Decision(
        connector=R(RUNNING),
        tasks={0: R(RUNNING), 1: R(FAILED, "t")},
        new_task_configs=None,
        commit_count=None,
        run=[0],
    )


def test_fewer_tasks_retire_higher_ids() -> None:
    live = connector(STARTED, task_configs=list(TASKS), tasks={0: status(RUNNING), 1: status(RUNNING)})
    decision = decide(live, Health(), Started(kind=Kind.SOURCE, task_configs=[TASKS[0]]))
    assert decision.tasks == {0: R(RUNNING), 1: None}
    assert (decision.new_task_configs, decision.commit_count, decision.run) == ([TASKS[0]], 1, [0])


@pytest.mark.parametrize(
    "live",
    [
        connector(STARTED, task_configs=list(TASKS), inconsistent=True),
        connector(STARTED, task_configs=list(TASKS), task_count=3),
        connector(STARTED, task_configs=[TASKS[0], {"task.index": "9"}]),
    ],
    ids=["inconsistent", "count-differs", "config-differs"],
)
def test_task_configs_are_rewritten_when_the_committed_set_differs(live: LiveConnector) -> None:
    assert decide(live, Health(), Started(kind=Kind.SOURCE, task_configs=list(TASKS))).commit_count == 2


def test_a_config_written_since_the_last_commit_rewrites_identical_task_configs() -> None:
    """Java's `AppliedConnectorConfig`: the tasks restart with the new connector config even
    when the task configs generated from it are the same."""
    live = connector(STARTED, task_configs=list(TASKS)).model_copy(update={"config_applied": False})
    decision = decide(live, Health(), Started(kind=Kind.SOURCE, task_configs=list(TASKS)))
    assert (decision.new_task_configs, decision.commit_count, decision.run) == (list(TASKS), 2, [0, 1])


def test_zero_task_configs_are_committed_once() -> None:
    assert decide(connector(STARTED), Health(), Started(kind=Kind.SOURCE, task_configs=[])).commit_count == 0
    assert decide(connector(STARTED, task_count=0), Health(), Started(kind=Kind.SOURCE, task_configs=[])).commit_count is None


def test_connector_failing_to_start_runs_nothing() -> None:
    live = connector(STARTED, task_configs=list(TASKS), tasks={0: status(RUNNING), 1: status(FAILED, "t")})
    state = health(live, restarted_connector=False, restarted_tasks=(), config_offset=None)
    decision = decide(live, state, StartFailed("bad config"))
    assert decision == Decision(
        connector=R(FAILED, "bad config"),
        tasks={0: R(UNASSIGNED), 1: R(FAILED, "t")},
        new_task_configs=None,
        commit_count=None,
        run=[],
    )


def test_failed_connector_stays_failed_with_its_trace() -> None:
    live = connector(STARTED, task_configs=list(TASKS), connector_status=status(FAILED, "boom"))
    state = health(live, restarted_connector=False, restarted_tasks=(), config_offset=2)
    assert state.connector_failed and not should_start(live, state)
    decision = decide(live, state, None)
    assert decision.connector == R(FAILED, "boom") and decision.run == []
    paused = connector(PAUSED_T, task_configs=list(TASKS), connector_status=status(FAILED, "boom"))
    assert decide(paused, Health(connector_failed=True), None).tasks == {0: R(PAUSED), 1: R(PAUSED)}


@pytest.mark.parametrize(
    ("restarted", "config_offset", "failed"),
    [(False, None, True), (False, 4, True), (True, None, False), (False, 5, False), (False, 9, False)],
)
def test_failure_holds_until_restart_or_reconfiguration(
    restarted: bool, config_offset: int | None, failed: bool
) -> None:
    # our mark says the FAILED status was written when the config topic ended at offset 5:
    # a config record at offset >= 5 came later
    live = connector(STARTED, connector_status=status(FAILED, "boom"))
    mark = FailureMark(5, trace_digest("boom"))
    state = health(live, restarted_connector=restarted, restarted_tasks=(), config_offset=config_offset, failure=mark)
    assert state.connector_failed is failed
    assert should_start(live, state) is not failed


def test_a_failure_without_our_mark_for_it_holds_until_restarted() -> None:
    """A FAILED status another worker wrote (or one our mark does not describe): no way to tell
    when it was written, so only a restart clears it."""
    live = connector(STARTED, connector_status=status(FAILED, "java's trace", gen=9))
    other = FailureMark(5, trace_digest("an older failure of ours"))
    for mark in (None, other):
        assert health(
            live, restarted_connector=False, restarted_tasks=(), config_offset=99, failure=mark
        ).connector_failed


def test_should_start_only_existing_started_connectors() -> None:
    assert should_start(connector(STARTED), Health())
    assert not should_start(connector(PAUSED_T), Health())
    assert not should_start(connector(STOPPED_T), Health())
    assert not should_start(connector(STARTED, config=None), Health())


def test_deleted_connector_loses_every_status() -> None:
    live = connector(config=None, connector_status=status(RUNNING), tasks={0: status(RUNNING), 3: status(FAILED)})
    assert decide(live, Health(), None) == Decision(connector=None, tasks={0: None, 3: None})


def test_running_without_start_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="not started"):
        decide(connector(STARTED), Health(), None)


# --- the status book ----------------------------------------------------------------------------


def book_with(**statuses: InstanceStatus) -> StatusBook:
    live = LiveState(
        connectors={
            name: LiveConnector(name=name, config=CONFIG, connector_status=s, task_statuses={0: s})
            for name, s in statuses.items()
        }
    )
    return StatusBook(live, "me:1")


def test_book_writes_only_changes_with_worker_and_generation() -> None:
    book = book_with(c=status(RUNNING, worker="me:1", gen=3))
    assert book.connector("c", R(RUNNING)) == []  # same state and trace: nothing to write
    [record] = book.connector("c", R(FAILED, "boom\n\tat x"))
    assert record.key == b"status-connector-c"
    assert (
        record.value == b'{"state":"FAILED","trace":"boom\\n\\tat x","worker_id":"me:1","generation":0,"version":null}'
    )
    assert book.connector("c", R(FAILED, "boom\n\tat x")) == []
    [task] = book.task("c", 0, R(PAUSED))
    assert task.key == b"status-task-c-0" and json.loads(task.value or b"")["state"] == "PAUSED"


@pytest.mark.parametrize("state", [RUNNING, PAUSED, STOPPED])
def test_a_status_another_worker_holds_is_written_once_under_this_workers_id(state: InstanceState) -> None:
    """A crashed runner's RUNNING (or PAUSED, STOPPED) names it for ever unless the runner
    reporting it now takes it over, as Java's new owner writes after a rebalance."""
    book = book_with(c=status(state, worker="dead:9", gen=3))
    [record] = book.connector("c", R(state))
    [task] = book.task("c", 0, R(state))
    for written in (record, task):
        assert json.loads(written.value or b"") == {
            "state": state.value,
            "trace": None,
            "worker_id": "me:1",
            "generation": 0,
            "version": None,
        }
    assert book.connector("c", R(state)) == [] and book.task("c", 0, R(state)) == []  # once


@pytest.mark.parametrize(
    "current",
    [
        status(FAILED, "boom", worker="dead:9"),
        status(UNASSIGNED, worker="dead:9"),
        status(InstanceState.RESTARTING, worker="dead:9"),
    ],
)
def test_failed_unassigned_and_restarting_statuses_keep_their_worker(current: InstanceStatus) -> None:
    """FAILED names the worker it failed on, UNASSIGNED no owner, and RESTARTING is followed in
    the same tick by what the restart leads to: none is rewritten for its worker id alone."""
    book = book_with(c=current)
    report = R(current.state, current.trace)
    assert book.connector("c", report) == [] and book.task("c", 0, report) == []


def test_statuses_carry_the_plugins_version_and_a_new_version_is_written() -> None:
    """As Kafka 4's workers write `Connector.version()` in every status (KIP-891): a status
    whose plugin was upgraded is written again, though its state stayed."""
    running = status(RUNNING, worker="me:1")
    live = LiveState(
        connectors={"c": LiveConnector(name="c", config=CONFIG, connector_status=running, task_statuses={0: running})}
    )
    book = StatusBook(live, "me:1", {"c": "2.0"}.get)
    [record] = book.connector("c", R(RUNNING))  # same state, a version it did not have
    assert json.loads(record.value or b"")["version"] == "2.0"
    assert book.connector("c", R(RUNNING)) == []
    [task] = book.task("c", 0, R(RUNNING))
    assert json.loads(task.value or b"")["version"] == "2.0"
    assert StatusBook(live, "me:1", {"c": None}.get).connector("c", R(RUNNING)) == []  # none known: none written


def test_book_tombstones_only_what_exists() -> None:
    book = book_with(c=status(RUNNING))
    assert book.task("c", 5, None) == []
    [tombstone] = book.task("c", 0, None)
    assert tombstone.key == b"status-task-c-0" and tombstone.value is None
    assert book.task("c", 0, None) == []
    assert book.connector("gone", None) == []


def test_book_decision_writes_tasks_before_the_connector() -> None:
    book = book_with(c=status(RUNNING))
    records = book.decision("c", Decision(connector=R(STOPPED), tasks={0: None}))
    assert [r.key for r in records] == [b"status-task-c-0", b"status-connector-c"]
    assert book.connectors["c"].state is STOPPED and book.tasks["c"] == {}


@pytest.mark.parametrize(("worker", "gen"), [("other:2", 9), ("other:2", 0), ("me:1", 9)])
def test_statuses_are_written_at_generation_zero_over_any_worker(worker: str, gen: int) -> None:
    """No safe put: a batch worker reports what it decided this tick, at BATCH_GENERATION, so a
    Java worker (generation 1 and up) never skips a FAILED or UNASSIGNED of its own after it."""
    for report in (R(FAILED, "x"), R(PAUSED), R(UNASSIGNED)):
        [record] = book_with(c=status(RUNNING, worker=worker, gen=gen)).connector("c", report)
        assert json.loads(record.value or b"")["generation"] == BATCH_GENERATION == 0


@pytest.mark.parametrize(("current", "expected"), [(status(RUNNING, gen=7), 8), (status(PAUSED, gen=7), 0), (None, 0)])
def test_a_tasks_unassigned_over_running_is_one_generation_above(current: InstanceStatus | None, expected: int) -> None:
    """`readTaskStatus` ignores a task's UNASSIGNED over a RUNNING of an equal or higher
    generation: one above it is the lowest generation every reader takes."""
    book = StatusBook(LiveState(), "me:1") if current is None else book_with(c=current)
    [record] = book.task("c", 0, R(UNASSIGNED))
    assert json.loads(record.value or b"")["generation"] == expected
    connector_record = book_with(c=status(RUNNING, gen=7)).connector("c", R(UNASSIGNED))[0]
    assert json.loads(connector_record.value or b"")["generation"] == 0  # no such rule for connectors


@pytest.mark.parametrize(
    ("target", "reported", "config", "due"),
    [
        (PAUSED_T, RUNNING, CONFIG, True),
        (STOPPED_T, RUNNING, CONFIG, True),
        (STARTED, RUNNING, CONFIG, False),  # still to run
        (STOPPED_T, STOPPED, CONFIG, False),  # stopped already: stop() was called the tick it stopped
        (STOPPED_T, FAILED, CONFIG, False),  # a FAILED connector has no running instance to stop
        (PAUSED_T, None, CONFIG, False),  # never started
        (STOPPED_T, RUNNING, None, False),  # deleted and its config gone: no plugin to ask
    ],
)
def test_stop_is_due_once_when_a_running_connector_leaves_running(
    target: ConnectTargetState, reported: InstanceState | None, config: dict[str, str | None] | None, due: bool
) -> None:
    live = connector(target, config=config, connector_status=None if reported is None else status(reported))
    assert suspending(live) is due


@pytest.mark.parametrize(
    ("target", "exists", "fails"),
    [(PAUSED_T, True, True), (STOPPED_T, True, False), (STOPPED_T, False, False), (PAUSED_T, False, False)],
)
def test_a_stop_that_throws_fails_a_pausing_connector_only(
    target: ConnectTargetState, exists: bool, fails: bool
) -> None:
    """Java's `WorkerConnector.suspend`: FAILED with the stop()'s trace when pausing (the tasks
    paused all the same); a stopped or deleted connector reaches its state anyway."""
    live = connector(
        target,
        config=CONFIG if exists else None,
        task_configs=list(TASKS),
        connector_status=status(RUNNING),
        tasks={0: status(RUNNING)},
    )
    state = after_stop(live, Health(), "Traceback: stop boom")
    assert state.connector_failed is fails
    if fails:
        assert decide(live, state, None) == Decision(
            connector=R(FAILED, "Traceback: stop boom"), tasks={0: R(PAUSED), 1: R(PAUSED)}
        )
    assert after_stop(live, Health(), None) == Health()  # stop() went well: nothing changes


# --- release: what a stopping worker reports (docs/runtime.md#liveness-between-batches) ----------


def released(live: LiveState, worker: str = "w:1") -> list[tuple[str, str | None]]:
    from reconciler.runtime.batch.statuses import release_records

    records = release_records(StatusBook(live, worker), live)
    return [(r.key.decode(), None if r.value is None else json.loads(r.value)["state"]) for r in records]


def test_a_stopping_worker_reports_its_instances_unassigned_tasks_first_failed_ones_kept() -> None:
    live = LiveState(
        connectors={
            "c": connector(connector_status=status(RUNNING), tasks={0: status(RUNNING), 1: status(FAILED, "boom")}),
        }
    )
    assert released(live) == [("status-task-c-0", "UNASSIGNED"), ("status-connector-c", "UNASSIGNED")]


@pytest.mark.parametrize("state", [PAUSED, STOPPED, InstanceState.RESTARTING])
def test_paused_stopped_and_restarting_instances_are_released_too(state: InstanceState) -> None:
    live = LiveState(connectors={"c": connector(connector_status=status(state), tasks={0: status(state)})})
    assert released(live) == [("status-task-c-0", "UNASSIGNED"), ("status-connector-c", "UNASSIGNED")]


def test_statuses_of_another_worker_and_unassigned_ones_are_left_alone() -> None:
    live = LiveState(
        connectors={
            "c": connector(connector_status=status(RUNNING, worker="other:2"), tasks={0: status(UNASSIGNED)}),
        }
    )
    assert released(live) == []
