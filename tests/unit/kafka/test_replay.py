"""The reader state machines (docs/state-machine.md), case by case."""

from __future__ import annotations

import logging

import pytest
from record_encoders import Consumed

from reconciler.core.live import ConnectTargetState
from reconciler.core.transitions import PendingRestart as RestartRequestRecord
from reconciler.core.transitions import restart_impact
from reconciler.kafka.replay import (
    ConfigReplay,
    ReconcilerReplay,
    StatusReplay,
    build_live_state,
)

STARTED, PAUSED, STOPPED = (
    ConnectTargetState.STARTED,
    ConnectTargetState.PAUSED,
    ConnectTargetState.STOPPED,
)
Rec = tuple[str | bytes, str | bytes | None]


def _bytes(text: str | bytes | None) -> bytes | None:
    return text.encode() if isinstance(text, str) else text


def replay_config(*records: Rec, **kwargs: int) -> ConfigReplay:
    replay = ConfigReplay(**kwargs)
    for offset, (key, value) in enumerate(records):
        replay.apply(_bytes(key), _bytes(value), offset)
    return replay


def config(name: str, **props: str) -> Rec:
    body = ",".join(f'"{k}":"{v}"' for k, v in {"name": name, **props}.items())
    return f"connector-{name}", '{"properties":{' + body + "}}"


def task(name: str, task_id: int, table: str = "t") -> Rec:
    return f"task-{name}-{task_id}", '{"properties":{"table":"' + table + '"}}'


def commit(name: str, count: int) -> Rec:
    return f"commit-{name}", '{"tasks":%d}' % count


def target(name: str, value: str | None) -> Rec:
    return f"target-state-{name}", value


# --- config topic ---------------------------------------------------------------------------------


def test_task_configs_are_invisible_until_committed() -> None:
    replay = replay_config(config("a"), task("a", 0), task("a", 1))
    assert replay.task_counts.get("a") is None
    assert replay.visible_task_configs("a") == []
    replay.apply(*map(_bytes, commit("a", 2)))
    assert replay.task_counts["a"] == 2
    assert replay.visible_task_configs("a") == [{"table": "t"}, {"table": "t"}]
    assert "a" in replay.pending_fencing


def test_incomplete_task_set_marks_the_connector_inconsistent_until_a_complete_commit() -> None:
    replay = replay_config(config("a"), task("a", 1), commit("a", 2))  # task 0 compacted away
    assert replay.inconsistent == {"a"}
    assert replay.task_counts["a"] == 2
    assert replay.visible_task_configs("a") == []
    assert replay.deferred["a"] == {}  # the buffer is cleared either way
    for record in (task("a", 0, "x"), task("a", 1, "y"), commit("a", 2)):
        replay.apply(*map(_bytes, record))
    assert replay.inconsistent == set()
    assert replay.visible_task_configs("a") == [{"table": "x"}, {"table": "y"}]


@pytest.mark.parametrize(
    ("after", "applied"),
    [
        ([], True),
        ([config("c", table="u")], False),  # a new config: the tasks must restart with it
        ([config("c", table="t")], True),  # the same config again (Java compares contents)
        ([config("c", table="u"), task("c", 0), commit("c", 1)], True),  # committed since
        ([config("c", table="u"), commit("c", 2)], False),  # an incomplete commit applies nothing
        ([config("c", table="u"), ("connector-c", None), config("c", table="t")], False),  # re-created
    ],
)
def test_the_config_at_the_last_complete_commit_is_the_applied_one(after: list[Rec], applied: bool) -> None:
    """Java's `AppliedConnectorConfig` (`KafkaConfigBackingStore.processTasksCommitRecord`)."""
    replay = replay_config(config("c", table="t"), task("c", 0), commit("c", 1), *after)
    live = build_live_state(replay, StatusReplay(), ReconcilerReplay(), None)
    assert live.connectors["c"].config_applied is applied


def test_extra_task_ids_are_tolerated_and_stay_invisible() -> None:
    # 3 tasks reduced to 1; compaction kept a stale task-a-2.
    replay = replay_config(config("a"), task("a", 2, "stale"), task("a", 0, "new"), commit("a", 1))
    assert replay.inconsistent == set()
    assert replay.visible_task_configs("a") == [{"table": "new"}]


def test_zero_task_commit_empties_the_visible_tasks() -> None:
    replay = replay_config(config("a"), task("a", 0), commit("a", 1), commit("a", 0))
    assert replay.task_counts["a"] == 0
    assert replay.visible_task_configs("a") == []


def test_commit_for_an_unknown_connector_drops_its_state() -> None:
    # Deleted connector; compaction removed its config *and* its tombstone.
    replay = replay_config(task("gone", 0), task("gone", 1), commit("gone", 2))
    assert "gone" not in replay.task_counts
    assert "gone" not in replay.deferred
    assert "gone" not in replay.configs
    # Re-created later: comes back with only its new, consistent task set.
    for record in (config("gone"), task("gone", 0, "new"), commit("gone", 1)):
        replay.apply(*map(_bytes, record))
    assert replay.visible_task_configs("gone") == [{"table": "new"}]


def test_connector_tombstone_drops_config_tasks_and_buffers_but_not_target_state() -> None:
    replay = replay_config(
        config("a"),
        task("a", 0),
        commit("a", 1),
        target("a", '{"state":"PAUSED","state.v2":"PAUSED"}'),
        task("a", 0, "buffered"),
        ("connector-a", None),
    )
    assert "a" not in replay.configs
    assert "a" not in replay.task_counts
    assert "a" not in replay.task_configs
    assert "a" not in replay.deferred
    assert replay.target_states["a"] is PAUSED  # its own tombstone follows
    replay.apply(b"target-state-a", None)
    assert "a" not in replay.target_states


def test_target_state_defaults_to_started_and_tombstone_resets_it() -> None:
    replay = replay_config(config("a"))
    assert replay.target_states["a"] is STARTED
    replay.apply(b"target-state-a", b'{"state":"PAUSED","state.v2":"STOPPED"}')
    assert replay.target_states["a"] is STOPPED
    replay.apply(b"target-state-a", None)
    assert replay.target_states["a"] is STARTED  # config still there


def test_target_state_before_the_connector_is_kept_kip_980() -> None:
    replay = replay_config(target("a", '{"state":"PAUSED","state.v2":"STOPPED"}'), config("a"))
    assert replay.target_states["a"] is STOPPED


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"state":"PAUSED"}', PAUSED),  # V0
        ('{"state":"STARTED","state.v2":"RESUMED"}', STOPPED),  # invalid: record ignored
        ('{"state":"PAUSED","state.v2":null}', PAUSED),
        ("[]", STOPPED),
        ("{broken", STOPPED),
    ],
)
def test_target_state_records_over_a_stopped_connector(value: str, expected: ConnectTargetState) -> None:
    replay = replay_config(config("a"), target("a", '{"state":"PAUSED","state.v2":"STOPPED"}'), target("a", value))
    assert replay.target_states["a"] is expected


def test_invalid_records_are_skipped_and_counted() -> None:
    replay = replay_config(
        config("a"),
        ("connector-a", '{"props":{}}'),
        ("connector-a", "not json"),
        ("task-a-x", "{}"),
        ("task-a-0", None),
        ("commit-a", '{"tasks":"2"}'),
    )
    assert replay.configs["a"] == {"name": "a"}  # the valid one stays
    assert replay.task_counts.get("a") is None
    assert replay.skipped == 5
    assert len(replay.problems) == 5


def test_a_commit_java_cannot_count_is_skipped_alone() -> None:
    """Java's `intValue` throws inside its poll loop for `{"tasks":2.0}` and loses the records
    polled with it (docs/compatibility.md); we skip that record only."""
    replay = replay_config(
        config("a"), task("a", 0), ("commit-a", '{"tasks":2.0}'), config("b"), task("a", 0), commit("a", 1)
    )
    assert replay.visible_task_configs("a") == [{"table": "t"}] and "b" in replay.configs
    assert replay.skipped == 1


@pytest.mark.parametrize("value", ["", "  \n"])
def test_an_empty_connector_value_deletes_it_as_java_reads_it(value: str) -> None:
    """`JsonDeserializer` reads no content as a MissingNode: the converter's null, a delete."""
    replay = replay_config(config("a"), task("a", 0), commit("a", 1), ("connector-a", value))
    assert "a" not in replay.configs and replay.visible_task_configs("a") == []
    assert replay.skipped == 0
    assert replay_config(config("a"), target("a", value)).target_states["a"] is ConnectTargetState.STARTED


def test_leading_zeros_and_trailing_tokens_are_read_as_java_reads_them() -> None:
    replay = replay_config(
        ("connector-a", '{"properties":{"name":"a"}} trailing'),  # FAIL_ON_TRAILING_TOKENS is off
        task("a", 0),
        ("task-a-01", '{"properties":{"table":"one"}}'),  # Integer.parseInt("01") is 1
        ("commit-a", '{"tasks":002}}'),  # ALLOW_LEADING_ZEROS_FOR_NUMBERS
    )
    assert replay.configs["a"] == {"name": "a"}
    assert replay.visible_task_configs("a") == [{"table": "t"}, {"table": "one"}]
    assert replay.skipped == 0


def test_restart_requests_keep_the_higher_impact_one_and_the_newest_offset() -> None:
    replay = replay_config(
        config("a"),
        ("restart-connector-a", '{"include-tasks":true,"only-failed":false}'),  # impact 3, offset 1
        ("restart-connector-a", '{"include-tasks":false,"only-failed":true}'),  # impact 0, offset 2
        ("restart-connector-b", '{"only-failed":true}'),  # impact 0
        ("restart-connector-b", '{"include-tasks":true,"only-failed":true}'),  # impact 1: replaces
    )
    assert replay.restart_requests == {
        "a": RestartRequestRecord(include_tasks=True, only_failed=False, offset=2),
        "b": RestartRequestRecord(include_tasks=True, only_failed=True, offset=4),
    }
    assert replay.pop_restart_requests().keys() == {"a", "b"}
    assert replay.restart_requests == {}


def test_restart_ranking_table() -> None:
    ranked = sorted(
        [(True, False), (False, False), (True, True), (False, True)],
        key=lambda flags: restart_impact(*flags),
    )
    assert ranked == [(False, True), (True, True), (False, False), (True, False)]


def test_restart_records_at_or_below_the_watermark_are_ignored() -> None:
    records = [config("a"), ("restart-connector-a", '{"include-tasks":true,"only-failed":true}')]
    assert replay_config(*records, restart_after=1).restart_requests == {}
    assert replay_config(*records, restart_after=0).restart_requests["a"].offset == 1


def test_tasks_fencing_records_clear_pending_fencing() -> None:
    replay = replay_config(config("a"), task("a", 0), commit("a", 1))
    assert replay.pending_fencing == {"a"}
    replay.apply(b"tasks-fencing-a", b'{"task-count":1}')
    assert replay.pending_fencing == set()
    assert replay.task_count_records == {"a": 1}
    replay.apply(*map(_bytes, commit("a", 1)))
    assert replay.pending_fencing == {"a"}


def test_worker_only_and_unknown_keys_are_ignored_with_debug_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="reconciler.kafka.replay")
    replay = replay_config(
        ("session-key", '{"key":"c2VjcmV0","algorithm":"HmacSHA256","creation-timestamp":1}'),
        ("logger-cluster-org.apache.kafka", '{"level":"DEBUG"}'),
        ("mystery-key", '{"x":1}'),
        config("a"),
    )
    assert list(replay.configs) == ["a"]
    assert any("mystery-key" in r.getMessage() and r.levelno == logging.DEBUG for r in caplog.records)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_null_key_is_skipped() -> None:
    replay = ConfigReplay()
    replay.apply(None, b"{}", 0)
    assert replay.skipped == 1 and replay.offset == 0


# --- status topic ---------------------------------------------------------------------------------

RUNNING7 = b'{"state":"RUNNING","trace":null,"worker_id":"w1:8083","generation":7}'


def status(state: str, generation: int, worker: str = "w1:8083") -> bytes:
    return ('{"state":"%s","trace":null,"worker_id":"%s","generation":%d}' % (state, worker, generation)).encode()


def test_statuses_latest_wins_and_tombstones_remove() -> None:
    replay = StatusReplay()
    replay.apply(b"status-connector-a", status("UNASSIGNED", 6))
    replay.apply(b"status-connector-a", RUNNING7)
    replay.apply(b"status-task-a-0", RUNNING7)
    replay.apply(b"status-task-a-1", RUNNING7)
    replay.apply(b"status-task-a-1", None)
    assert replay.connectors["a"] == ("RUNNING", None, "w1:8083", 7, None)
    assert list(replay.tasks["a"]) == [0]


def test_connector_status_tombstone_forgets_its_task_statuses() -> None:
    replay = StatusReplay()
    replay.apply(b"status-connector-a", RUNNING7)
    replay.apply(b"status-task-a-0", RUNNING7)
    replay.apply(b"status-connector-a", None)
    assert "a" not in replay.connectors and "a" not in replay.tasks


# A connector deleted at t=200 and created again: its new statuses written at t=300. The
# connector's key and its task's key live on different partitions of the status topic; a reader
# from offset 0 may read either partition first. Both orders must end with the new task RUNNING.
_CONNECTOR_PARTITION = [
    (b"status-connector-a", RUNNING7, 100),
    (b"status-connector-a", None, 200),
    (b"status-connector-a", status("RUNNING", 9), 300),
]
_TASK_PARTITION = [
    (b"status-task-a-0", RUNNING7, 100),
    (b"status-task-a-0", None, 200),
    (b"status-task-a-0", status("RUNNING", 9), 300),
]


@pytest.mark.parametrize("order", ["connector partition first", "task partition first", "as written"])
@pytest.mark.parametrize("bulk", [False, True], ids=["apply", "feed"])
def test_an_old_connector_tombstone_read_late_keeps_the_new_task_status(order: str, bulk: bool) -> None:
    if order == "connector partition first":
        records = _CONNECTOR_PARTITION + _TASK_PARTITION
    elif order == "task partition first":
        records = _TASK_PARTITION + _CONNECTOR_PARTITION
    else:
        records = sorted(_CONNECTOR_PARTITION + _TASK_PARTITION, key=lambda r: r[2])
    replay = StatusReplay()
    if bulk:
        replay.feed([Consumed(key, value, offset, stamp) for offset, (key, value, stamp) in enumerate(records)])
    else:
        for offset, (key, value, stamp) in enumerate(records):
            replay.apply(key, value, offset, stamp)
    assert replay.connectors["a"][3] == 9
    assert {task: s[3] for task, s in replay.tasks["a"].items()} == {0: 9}


def test_a_task_status_written_before_a_deletion_read_later_is_not_taken() -> None:
    # The deleted connector's last task status (t=150) is read after the tombstone (t=200).
    replay = StatusReplay()
    replay.apply(b"status-connector-a", RUNNING7, 0, 100)
    replay.apply(b"status-connector-a", None, 1, 200)
    replay.apply(b"status-task-a-0", RUNNING7, 0, 150)
    assert "a" not in replay.connectors and "a" not in replay.tasks


def test_a_connector_tombstone_without_timestamps_forgets_every_task_status() -> None:
    replay = StatusReplay()
    replay.apply(b"status-task-a-0", RUNNING7, 0, 300)
    replay.apply(b"status-connector-a", None, 0)  # no timestamp: Java's rule as is
    assert "a" not in replay.tasks
