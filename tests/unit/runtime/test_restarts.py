"""KIP-745 restarts in the batch worker: pending records, merging, plans, processed marks."""

from __future__ import annotations

import json

import pytest

from reconciler.core.live import InstanceState, InstanceStatus
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Invalid
from reconciler.core.transitions import PendingRestart
from reconciler.kafka.formats.own_records import decode_restart_processed as decode_processed
from reconciler.kafka.formats.own_records import restart_processed_record as processed_record
from reconciler.kafka.formats.own_records import runtime_started_record as started_record
from reconciler.kafka.replay.marks import (
    RestartLog,
    RestartRecord,
    pending_restarts,
)
from reconciler.runtime.batch.restarts import RestartPlan, plan_restart

RUNNING, FAILED, PAUSED = InstanceState.RUNNING, InstanceState.FAILED, InstanceState.PAUSED


def status(state: InstanceState) -> InstanceStatus:
    return InstanceStatus(state=state, worker_id="w:1", generation=3)


def r(name: str, tasks: bool, only_failed: bool, offset: int) -> RestartRecord:
    return RestartRecord(connector=name, include_tasks=tasks, only_failed=only_failed, offset=offset)


@pytest.mark.parametrize(
    ("records", "processed", "expected"),
    [
        ([], {}, {}),
        ([r("a", True, False, 5)], {}, {"a": PendingRestart(True, False, 5)}),
        # at or below the mark: already executed
        ([r("a", True, False, 5)], {"a": 5}, {}),
        ([r("a", True, False, 5), r("a", False, True, 9)], {"a": 5}, {"a": PendingRestart(False, True, 9)}),
        # the mark of another connector does not matter
        ([r("a", True, False, 5)], {"b": 10}, {"a": PendingRestart(True, False, 5)}),
        # higher impact wins and covers the newest offset
        ([r("a", True, False, 5), r("a", False, True, 9)], {}, {"a": PendingRestart(True, False, 9)}),
        ([r("a", False, True, 5), r("a", True, False, 9)], {}, {"a": PendingRestart(True, False, 9)}),
        # equal impact: Connect keeps the existing request
        ([r("a", True, True, 5), r("a", True, True, 9)], {}, {"a": PendingRestart(True, True, 9)}),
        # onlyFailed+includeTasks (1) outranks onlyFailed alone (0); !onlyFailed alone (2) outranks both
        ([r("a", False, True, 1), r("a", True, True, 2)], {}, {"a": PendingRestart(True, True, 2)}),
        ([r("a", True, True, 1), r("a", False, False, 2)], {}, {"a": PendingRestart(False, False, 2)}),
        (
            [r("a", False, False, 1), r("b", True, True, 2)],
            {},
            {"a": PendingRestart(False, False, 1), "b": PendingRestart(True, True, 2)},
        ),
    ],
)
def test_pending_restarts(
    records: list[RestartRecord], processed: dict[str, int], expected: dict[str, PendingRestart]
) -> None:
    assert pending_restarts(records, processed) == expected


TASKS_OK = {0: status(RUNNING), 1: status(RUNNING)}
TASK1_FAILED = {0: status(RUNNING), 1: status(FAILED)}


@pytest.mark.parametrize(
    ("include_tasks", "only_failed", "connector", "tasks", "expected"),
    [
        # acceptance case C26 (docs/state-machine.md#acceptance-cases): running connector
        (False, False, RUNNING, TASKS_OK, (True, ())),
        (True, False, RUNNING, TASKS_OK, (True, (0, 1))),
        (False, True, RUNNING, TASKS_OK, (False, ())),
        (True, True, RUNNING, TASKS_OK, (False, ())),
        # 27: failed connector: every variant restarts it
        (False, False, FAILED, {}, (True, ())),
        (False, True, FAILED, {}, (True, ())),
        (True, True, FAILED, TASKS_OK, (True, ())),
        (True, False, FAILED, TASKS_OK, (True, (0, 1))),
        # 28: one failed task of several
        (False, False, RUNNING, TASK1_FAILED, (True, ())),
        (True, True, RUNNING, TASK1_FAILED, (False, (1,))),
        (False, True, RUNNING, TASK1_FAILED, (False, ())),
        (True, False, RUNNING, TASK1_FAILED, (True, (0, 1))),
        # paused connector: restarts follow the same rule
        (True, False, PAUSED, {0: status(PAUSED)}, (True, (0,))),
        # no status for the connector: Connect skips the request
        (True, False, None, {}, (False, ())),
    ],
)
def test_plan_restart_follows_connects_rule(
    include_tasks: bool,
    only_failed: bool,
    connector: InstanceState | None,
    tasks: dict[int, InstanceStatus],
    expected: tuple[bool, tuple[int, ...]],
) -> None:
    request = PendingRestart(include_tasks, only_failed, 42)
    plan = plan_restart(request, None if connector is None else status(connector), tasks)
    assert (plan.connector, plan.tasks) == expected
    assert plan.offset == 42
    assert plan.restarts_anything == (expected[0] or bool(expected[1]))


def test_restart_plan_of_nothing_restarts_nothing() -> None:
    assert not RestartPlan(False, (), 3).restarts_anything


def test_restart_log_reads_config_records_and_marks_as_bytes() -> None:
    log = RestartLog()
    restart = rec.restart_record("orders-sink", include_tasks=True, only_failed=True)
    log.on_config(restart.key, restart.value, 7)
    log.on_config(b"restart-connector-other", b'{"include-tasks":true}', 8)  # missing field: false
    log.on_config(b"restart-connector-bad", b"not json", 9)  # skipped, as Java does
    log.on_config(b"connector-orders-sink", b'{"properties":{}}', 10)  # not a restart
    log.on_config(None, b"{}", 11)
    assert log.records == [r("orders-sink", True, True, 7), r("other", True, False, 8)]

    mark = processed_record("orders-sink", 7, 1_700_000_000_000)
    log.on_reconciler(mark.key, mark.value)
    log.on_reconciler(b"owner/orders-sink", b'{"owner":"connect-reconciler"}')  # someone else's key
    assert log.processed == {"orders-sink": 7}
    assert log.started is None
    started = started_record(7)
    log.on_reconciler(started.key, started.value)
    assert log.started == 7
    assert log.pending(config_end=12) == {"other": PendingRestart(True, False, 8)}

    log.on_reconciler(mark.key, None)  # a tombstone forgets the mark: from S (7) on again
    assert "orders-sink" in log.pending(config_end=12)


def test_the_first_tick_ignores_what_was_written_before_it() -> None:
    """Java ignores the restart records it reads while catching up at start-up; so does the
    first tick on a group (no `runtime-started` mark: S is the end offset it read)."""
    log = RestartLog()
    log.on_config(*_restart("a", 3))
    log.on_config(*_restart("b", 4))
    assert log.pending(config_end=5) == {}
    # ... except the newest record of a connector our own `apply` recorded a restart id for
    assert log.pending(config_end=5, applied=["b"]) == {"b": PendingRestart(True, False, 4)}
    # ... and only until a tick has processed a restart of it
    processed = processed_record("b", 4, 1)
    log.on_reconciler(processed.key, processed.value)
    assert log.pending(config_end=5, applied=["b"]) == {}


@pytest.mark.parametrize(
    ("processed", "started", "applied", "expected"),
    [
        ({}, 6, [], {"a": PendingRestart(False, True, 7)}),  # from S on
        ({}, 8, [], {}),
        ({}, 8, ["a"], {"a": PendingRestart(False, True, 7)}),  # our apply's record: its newest
        ({"a": 2}, 6, ["a"], {"a": PendingRestart(True, False, 7)}),  # a mark: above it
        ({"a": 7}, 0, ["a"], {}),
    ],
)
def test_pending_from_the_runtime_start_or_the_processed_mark(
    processed: dict[str, int], started: int, applied: list[str], expected: dict[str, PendingRestart]
) -> None:
    records = [r("a", True, False, 3), r("a", False, True, 7)]
    assert pending_restarts(records, processed, started, applied) == expected


def _restart(name: str, offset: int) -> tuple[bytes, bytes | None, int]:
    record = rec.restart_record(name, include_tasks=True, only_failed=False)
    return record.key, record.value, offset


def test_processed_record_format() -> None:
    record = processed_record("a/b-c", 12, 99)
    assert record.topic_role == "reconciler"
    assert record.key == b"restart-processed/a/b-c"
    assert record.value is not None and json.loads(record.value) == {"offset": 12, "processed-at": 99}
    assert decode_processed(record.value) == 12
    assert isinstance(decode_processed(b'{"offset":"12"}'), Invalid)
    assert isinstance(decode_processed(b"[1]"), Invalid)
    assert isinstance(decode_processed(b"{"), Invalid)
    with pytest.raises(ValueError):
        processed_record("", 1, 1)
