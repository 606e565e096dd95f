"""What a batch runner records between batches: `batch/<name>` per connector whose tasks ran,
readable back into the live state, tombstoned once the connector is deleted; `wait/<name>` per
connector whose tasks waited, until they run again."""

from __future__ import annotations

from reconciler.core.live import ConnectTargetState, LastBatch, LiveConnector, LiveState, TaskBatch, Waiting
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay import ReconcilerReplay
from reconciler.runtime.batch.tasks import TaskOutcome
from reconciler.runtime.batch.liveness import batch_records, released_waits

CONFIG: dict[str, str | None] = {"connector.class": "datagen", "name": "x"}


def test_each_connector_that_ran_gets_its_tasks_records_bytes_and_failures() -> None:
    outcomes = [
        TaskOutcome(connector="a", task_id=1, records=0, error="Traceback: boom"),
        TaskOutcome(connector="a", task_id=0, records=120, bytes=4_000),
        TaskOutcome(connector="b", task_id=0, records=7, bytes=70, lag=3, offsets_committed=True),
        TaskOutcome(connector="c", task_id=0, records=0, waited="cannot reach Kafka at 127.0.0.1:1"),  # did not run: no batch, a wait
    ]
    live = LiveState(connectors={n: LiveConnector(name=n, config=CONFIG) for n in ("a", "b", "c")})
    records = batch_records(live, outcomes, "host:1", 1_000)
    assert [r.key for r in records] == [b"batch/a", b"batch/b", b"wait/c"]
    replay = ReconcilerReplay()
    for record in records:
        replay.apply(record.key, record.value)
    assert replay.batches["a"] == LastBatch(
        finished_at_ms=1_000, worker_id="host:1",
        tasks={0: TaskBatch(records=120, bytes=4_000), 1: TaskBatch(failed=True)},
    )
    assert replay.batches["a"].outcome == "failed" and replay.batches["a"].records == 120
    assert replay.batches["b"].outcome == "succeeded"


def test_a_deleted_connectors_last_batch_is_tombstoned_once() -> None:
    batch = LastBatch(finished_at_ms=1, worker_id="w", tasks={0: TaskBatch(records=1)})
    live = LiveState(
        connectors={"gone": LiveConnector(name="gone"), "kept": LiveConnector(name="kept", config=CONFIG)},
        last_batches={"gone": batch, "kept": batch, "vanished": batch},
    )
    assert [(r.key, r.value) for r in batch_records(live, [], "w", 2)] == [(b"batch/gone", None), (b"batch/vanished", None)]


def test_unreadable_batch_values_are_refused_with_a_reason() -> None:
    assert isinstance(own.decode_batch(b'{"finished-at":"x","worker-id":"w","tasks":[]}'), Invalid)
    assert isinstance(own.decode_batch(b'{"finished-at":1,"worker-id":"w","tasks":[{"id":0}]}'), Invalid)
    assert isinstance(own.decode_batch(b"[]"), Invalid)
    assert own.parse_reconciler_key("batch/a/b") is None


def test_a_task_that_waited_counts_a_wait_and_no_batch_in_the_metrics() -> None:
    from reconciler.api.observer import add_outcomes

    waited = TaskOutcome(connector="a", task_id=1, records=0, waited="cannot reach Kafka")
    totals = add_outcomes({}, [TaskOutcome(connector="a", task_id=0, records=5, bytes=50), waited], None)
    totals = add_outcomes(totals, [waited], None)
    assert [(t.records, t.batches, t.waits) for _, t in sorted(totals.items())] == [(5, 1, 0), (0, 0, 2)]


def waits_after(live: LiveState, outcomes: list[TaskOutcome], now_ms: int = 5_000) -> dict[str, Waiting | Invalid | None]:
    """The `wait/<name>` records a batch writes, read back (None: a tombstone)."""
    return {
        r.key.decode().removeprefix("wait/"): None if r.value is None else own.decode_wait(r.value)
        for r in batch_records(live, outcomes, "w:2", now_ms)
        if r.key is not None and r.key.startswith(b"wait/")
    }


def test_a_wait_is_recorded_once_keeps_its_start_and_ends_when_the_tasks_run() -> None:
    unreachable = "cannot reach Kafka at 127.0.0.1:1: connection refused"
    connectors = {n: LiveConnector(name=n, config=CONFIG) for n in ("s", "t")}
    waited = [
        TaskOutcome(connector="s", task_id=0, records=0, waited=unreachable),
        TaskOutcome(connector="s", task_id=1, records=0, waited=unreachable),
    ]
    first = waits_after(LiveState(connectors=connectors), waited, now_ms=1_000)
    assert first == {"s": Waiting(since_ms=1_000, worker_id="w:2", reason=unreachable)}

    waiting = LiveState(connectors=connectors, waiting={"s": Waiting(since_ms=1_000, worker_id="w:2", reason=unreachable)})
    assert waits_after(waiting, waited) == {}  # the same wait goes on: nothing written
    other = [TaskOutcome(connector="s", task_id=0, records=0, waited="an open transaction")]
    assert waits_after(waiting, other) == {"s": Waiting(since_ms=1_000, worker_id="w:2", reason="an open transaction")}
    assert waits_after(waiting, [TaskOutcome(connector="s", task_id=0, records=3)]) == {"s": None}  # it ran: over
    assert waits_after(waiting, [TaskOutcome(connector="s", task_id=0, records=0, error="Traceback: boom")]) == {"s": None}  # ran and failed: over too
    assert waits_after(waiting, [TaskOutcome(connector="t", task_id=0, records=3)]) == {}  # not in this batch, still to run: kept


def test_a_wait_another_runner_recorded_is_taken_over_with_its_start() -> None:
    """A crashed runner's wait: the runner whose tasks now wait writes it under its own id (its
    stop removes it, `released_waits`), since when kept."""
    unreachable = "cannot reach Kafka at 127.0.0.1:1: connection refused"
    connectors = {"s": LiveConnector(name="s", config=CONFIG)}
    crashed = LiveState(connectors=connectors, waiting={"s": Waiting(since_ms=1_000, worker_id="w:1", reason=unreachable)})
    waited = [TaskOutcome(connector="s", task_id=0, records=0, waited=unreachable)]
    assert waits_after(crashed, waited) == {"s": Waiting(since_ms=1_000, worker_id="w:2", reason=unreachable)}


def test_a_wait_ends_when_its_connector_is_no_longer_to_run() -> None:
    wait = Waiting(since_ms=1, worker_id="w", reason="x")
    live = LiveState(
        connectors={
            "paused": LiveConnector(name="paused", config=CONFIG, target_state=ConnectTargetState.PAUSED),
            "stopped": LiveConnector(name="stopped", config=CONFIG, target_state=ConnectTargetState.STOPPED),
            "gone": LiveConnector(name="gone"),
            "running": LiveConnector(name="running", config=CONFIG),
        },
        waiting={"paused": wait, "stopped": wait, "gone": wait, "running": wait, "vanished": wait},
    )
    assert waits_after(live, []) == {"gone": None, "paused": None, "stopped": None, "vanished": None}


def test_a_stopping_worker_ends_the_waits_it_recorded_and_no_other() -> None:
    mine, theirs = Waiting(since_ms=1, worker_id="w:1", reason="x"), Waiting(since_ms=1, worker_id="w:2", reason="x")
    live = LiveState(connectors={n: LiveConnector(name=n, config=CONFIG) for n in "abc"},
                     waiting={"a": mine, "b": theirs, "c": mine})
    records = released_waits(live, "w:1")
    assert [(r.key, r.value) for r in records] == [(b"wait/a", None), (b"wait/c", None)]
    assert released_waits(live, "w:3") == []


def test_unreadable_wait_values_are_refused_with_a_reason() -> None:
    assert isinstance(own.decode_wait(b'{"since":"1","worker-id":"w","reason":"x"}'), Invalid)
    assert isinstance(own.decode_wait(b'{"since":1,"worker-id":"w"}'), Invalid)
    assert isinstance(own.decode_wait(b"[]"), Invalid)
    assert own.parse_reconciler_key("wait/a/b") is None
    assert own.decode_wait(own.wait_record("a", Waiting(since_ms=1, worker_id="w", reason="r")).value or b"") == Waiting(
        since_ms=1, worker_id="w", reason="r"
    )
