"""The reader state machines (docs/state-machine.md), case by case."""

from __future__ import annotations

import logging

import pytest

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.core.transitions import PendingRestart as RestartRequestRecord
from reconciler.core.transitions import restart_impact
from reconciler.kafka.replay import (
    ConfigReplay,
    OffsetsReplay,
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
        config("a"), task("a", 0), commit("a", 1), target("a", '{"state":"PAUSED","state.v2":"PAUSED"}'),
        task("a", 0, "buffered"), ("connector-a", None),
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
        config("a"), ("connector-a", '{"props":{}}'), ("connector-a", "not json"), ("task-a-x", "{}"),
        ("task-a-0", None), ("commit-a", '{"tasks":"2"}'),
    )
    assert replay.configs["a"] == {"name": "a"}  # the valid one stays
    assert replay.task_counts.get("a") is None
    assert replay.skipped == 5
    assert len(replay.problems) == 5


def test_a_commit_java_cannot_count_is_skipped_alone() -> None:
    """Java's `intValue` throws inside its poll loop for `{"tasks":2.0}` and loses the records
    polled with it (docs/compatibility.md); we skip that record only."""
    replay = replay_config(config("a"), task("a", 0), ("commit-a", '{"tasks":2.0}'), config("b"), task("a", 0), commit("a", 1))
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


@pytest.mark.parametrize(
    ("incoming", "kept"),
    [
        (status("UNASSIGNED", 6, "w2"), "RUNNING"),  # stale rebalance write: ignored
        (status("UNASSIGNED", 7, "w2"), "RUNNING"),  # same generation: ignored too
        (status("UNASSIGNED", 8, "w2"), "UNASSIGNED"),  # newer generation: accepted
        (status("FAILED", 6, "w2"), "FAILED"),  # only UNASSIGNED is filtered
    ],
)
def test_unassigned_after_running_generation_rule(incoming: bytes, kept: str) -> None:
    replay = StatusReplay()
    replay.apply(b"status-task-a-0", RUNNING7)
    replay.apply(b"status-task-a-0", incoming)
    assert replay.tasks["a"][0][0] == kept


def test_unassigned_rule_does_not_apply_to_connector_statuses() -> None:
    replay = StatusReplay()
    replay.apply(b"status-connector-a", RUNNING7)
    replay.apply(b"status-connector-a", status("UNASSIGNED", 6))
    assert replay.connectors["a"][0] == "UNASSIGNED"


def test_unparseable_statuses_are_dropped_keeping_the_previous() -> None:
    replay = StatusReplay()
    replay.apply(b"status-connector-a", RUNNING7)
    for bad in (b'{"state":"EXPLODED","trace":null,"worker_id":"w","generation":8}', b"{", b'{"state":"FAILED"}'):
        replay.apply(b"status-connector-a", bad)
    replay.apply(b"status-task-a-x", RUNNING7)
    replay.apply(b"status-connector-", RUNNING7)
    assert replay.connectors == {"a": ("RUNNING", None, "w1:8083", 7, None)}
    assert replay.tasks == {}
    assert replay.skipped == 5


def test_topic_statuses_are_kept_apart() -> None:
    replay = StatusReplay()
    value = b'{"topic":{"name":"orders","connector":"s","task":0,"discoverTimestamp":17}}'
    replay.apply(b"status-topic-orders:connector-s", value)
    replay.apply(b"status-topic-payments:connector-s", value)
    replay.apply(b"status-topic-payments:connector-s", None)
    replay.apply(b"status-topic-:connector-s", value)  # empty topic: skipped
    assert replay.topics == {"s": {"orders": (0, 17)}}
    assert replay.connectors == {} and replay.tasks == {}


def test_identical_status_bytes_are_parsed_once_but_stay_per_key() -> None:
    replay = StatusReplay()
    for task_id in range(3):
        replay.apply(f"status-task-a-{task_id}".encode(), RUNNING7)
    assert replay.tasks["a"][0] is replay.tasks["a"][2]
    replay.apply(b"status-task-a-2", None)
    assert sorted(replay.tasks["a"]) == [0, 1]


# --- offsets topic --------------------------------------------------------------------------------


def test_offsets_last_value_per_raw_key_and_tombstones() -> None:
    replay = OffsetsReplay()
    replay.apply(b'["src",{"table":"orders"}]', b'{"id":1}')
    replay.apply(b'["src",{"table":"orders"}]', b'{"id":2}')
    replay.apply(b'["src",{"table":"gone"}]', b'{"id":9}')
    replay.apply(b'["src",{"table":"gone"}]', None)
    replay.apply(b'["other",{"table":"orders"}]', b'{"id":3}')
    assert replay.offsets_for("src") == [({"table": "orders"}, {"id": 2}, b'["src",{"table":"orders"}]')]
    assert replay.reported("src") == [({"table": "orders"}, {"id": 2})]
    assert replay.connectors() == ["other", "src"]
    assert replay.keys_for("src", {"table": "gone"}) == [b'["src",{"table":"gone"}]']
    assert replay.keys_for("src", {"table": "new"}) == [b'["src",{"table":"new"}]']


def test_two_encodings_of_one_partition_are_two_keys() -> None:
    """Java's set holds the map first read; its GET looks the offset up under Java's bytes for
    it (HashMap order, compact), which neither encoding here is: it reports null. The runtime
    resumes from the newest value, and writes under Java's bytes and both encodings."""
    replay = OffsetsReplay()
    replay.apply(b'["src",{"b":2,"a":"x"}]', b'{"pos":1}')
    replay.apply(b'["src", {"a":"x","b":2}]', b'{"pos":2}')
    assert replay.reported("src") == [({"b": 2, "a": "x"}, None)]
    [(partition, offset, raw)] = replay.offsets_for("src")
    assert partition == {"a": "x", "b": 2} and offset == {"pos": 2}
    assert raw == b'["src", {"a":"x","b":2}]'  # the most recently written
    assert replay.live_raw_keys("src") == [b'["src",{"b":2,"a":"x"}]', b'["src", {"a":"x","b":2}]']
    assert replay.keys_for("src", {"b": 2, "a": "x"}) == [
        b'["src",{"a":"x","b":2}]',
        b'["src", {"a":"x","b":2}]',
        b'["src",{"b":2,"a":"x"}]',
    ]
    replay.apply(b'["src",{"a":"x","b":2}]', b'{"pos":3}')  # what Java's PATCH writes
    assert replay.reported("src") == [({"b": 2, "a": "x"}, {"pos": 3})]


def test_a_tombstone_under_one_encoding_drops_the_partition() -> None:
    """`OffsetUtils.processPartitionKey`: the partition set is updated by every encoding."""
    replay = OffsetsReplay()
    replay.apply(b'["src",{"b":2,"a":"x"}]', b'{"pos":1}')
    replay.apply(b'["src",{"a":"x","b":2}]', b'{"pos":2}')
    replay.apply(b'["src",{"a":"x","b":2}]', None)  # Java's DELETE tombstones its own bytes
    assert replay.reported("src") == []
    assert replay.offsets_for("src") == []  # the runtime starts it over, as Java's tasks would
    assert replay.live_raw_keys("src") == [b'["src",{"b":2,"a":"x"}]']  # a reset still clears it
    replay.apply(b'["src",{"b":2,"a":"x"}]', b'{"pos":5}')  # a value under any encoding: back
    assert replay.offsets_for("src") == [({"b": 2, "a": "x"}, {"pos": 5}, b'["src",{"b":2,"a":"x"}]')]


@pytest.mark.parametrize("value", [b"", b"  ", b"null"])
def test_an_empty_or_null_offset_is_a_partition_with_a_null_offset(value: bytes) -> None:
    replay = OffsetsReplay()
    replay.apply(b'["src",{"p":1}]', value)
    assert replay.reported("src") == [({"p": 1}, None)]
    assert replay.offsets_for("src") == []
    assert replay.live_raw_keys("src") == [b'["src",{"p":1}]']


def test_an_unreadable_offset_leaves_the_partition_out() -> None:
    """OffsetStorageReaderImpl logs and skips a value it cannot convert or validate."""
    replay = OffsetsReplay()
    replay.apply(b'["src",{"p":1}]', b'{"o":{"nested":1}}')
    replay.apply(b'["src",{"p":2}]', b'{"o":2}xyz')  # trailing tokens: Jackson reads {"o":2}
    assert replay.reported("src") == [({"p": 2}, {"o": 2})]


def test_partition_values_compare_with_java_types() -> None:
    replay = OffsetsReplay()
    replay.apply(b'["src",{"p":1}]', b'{"o":1}')
    replay.apply(b'["src",{"p":1.0}]', b'{"o":2}')
    replay.apply(b'["src",{"p":true}]', b'{"o":3}')
    assert len(replay.offsets_for("src")) == 3


def test_bad_offset_keys_warn_except_name_null(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="reconciler.kafka.replay")
    replay = OffsetsReplay()
    replay.apply(b'["src",null]', b'{"o":1}')
    assert not caplog.records
    replay.apply(b'{"not":"a list"}', b'{"o":1}')
    replay.apply(b'{"not":"a list"}', b'{"o":2}')  # warned once per raw key
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert replay.connectors() == []


def test_unreadable_offset_value_is_live_for_reset_but_not_reported() -> None:
    replay = OffsetsReplay()
    replay.apply(b'["src",{"p":1}]', b"[1]")
    assert replay.offsets_for("src") == []
    assert replay.live_raw_keys("src") == [b'["src",{"p":1}]']


# --- our topic --------------------------------------------------------------------------------------


def test_reconciler_replay() -> None:
    replay = ReconcilerReplay()
    for key, value in [
        (b"owner/a", b'{"owner":"connect-reconciler","created-by-plan":"p1"}'),
        (b"owner/b", b'{"owner":"connect-reconciler","created-by-plan":"p1"}'),
        (b"owner/b", None),
        (b"applied/restart/a/r/1", b'{"applied-at":5}'),
        (b"applied/offsets/a/o1", b'{"applied-at":6}'),
        (b"applied/offsets/a/o0", b'{"applied-at":4}'),
        (b"applied/offsets/a/o0", None),
        (b"offsets-progress/a", b'{"id":"o2","step":"alter"}'),
        (b"offsets-progress/c", b'{"id":"o9","step":"stop"}'),
        (b"offsets-progress/c", None),
        (b"offsets-snapshot/a/o2", b'{"offsets":[{"partition":{"p":1},"offset":{"o":1}}],"taken-at":7}'),
        (b"owner/x", b"broken"),
        (b"weird", b"{}"),
    ]:
        replay.apply(key, value)
    assert list(replay.owners) == ["a"]
    assert replay.applied_restart == {"a": {"r/1": 5}}
    assert replay.applied_offsets == {"a": {"o1": 6}}
    assert replay.offsets_progress["a"].step == "alter" and "c" not in replay.offsets_progress
    assert replay.snapshots[("a", "o2")].taken_at_ms == 7
    assert replay.skipped == 2


# --- live state -----------------------------------------------------------------------------------


def test_build_live_state_joins_config_status_and_ours() -> None:
    cfg = replay_config(
        config("a", **{"tasks.max": "2"}), task("a", 0), task("a", 1), commit("a", 2),
        target("p", '{"state":"PAUSED","state.v2":"PAUSED"}'),  # target state, config not yet written
    )
    st = StatusReplay()
    st.apply(b"status-connector-a", RUNNING7)
    st.apply(b"status-task-a-1", status("FAILED", 7))
    st.apply(b"status-task-a-0", RUNNING7)
    st.apply(b"status-connector-ghost", status("UNASSIGNED", 3))  # statuses of a deleted connector
    ours = ReconcilerReplay()
    ours.apply(b"owner/a", b'{"owner":"connect-reconciler","created-by-plan":"p"}')
    ours.apply(b"applied/restart/a/r1", b'{"applied-at":1}')
    ours.apply(b"offsets-progress/a", b'{"id":"o1","step":"stop"}')

    live = build_live_state(cfg, st, ours, "g1")

    assert live.group_id == "g1"
    assert list(live.connectors) == ["a", "ghost", "p"]
    a = live.connectors["a"]
    assert a.config == {"name": "a", "tasks.max": "2"}
    assert (a.target_state, a.task_count, a.inconsistent) == (STARTED, 2, False)
    assert a.task_configs == [{"table": "t"}, {"table": "t"}]
    assert a.connector_status == InstanceStatus(state=InstanceState.RUNNING, worker_id="w1:8083", generation=7)
    assert list(a.task_statuses) == [0, 1]
    assert a.task_statuses[1].state is InstanceState.FAILED
    assert live.connectors["ghost"].config is None and not live.connectors["ghost"].exists
    assert live.connectors["p"].target_state is PAUSED and live.connectors["p"].config is None
    assert live.owned == ["a"]
    assert live.is_applied("a", "restart", "r1") and not live.is_applied("a", "offsets", "r1")
    assert live.offsets_in_progress == {"a": "o1"}
    # The constructed model is a normal LiveState: it round-trips through the snapshot JSON.
    assert type(live).model_validate_json(live.model_dump_json()) == live


def test_live_state_shows_non_string_properties_as_text() -> None:
    cfg = replay_config(("connector-a", '{"properties":{"name":"a","tasks.max":2}}'))
    live = build_live_state(cfg, StatusReplay(), ReconcilerReplay(), None)
    assert live.connectors["a"].config == {"name": "a", "tasks.max": "2"}
