"""`reconciler status`'s notes under the table: UNASSIGNED explained once (no worker runs between
batches here, so a healthy pipeline reads UNASSIGNED after `run --once`); why a connector's
tasks wait, where its statuses say RUNNING."""

from __future__ import annotations

import pytest

from reconciler.render.status_view import unassigned_note
from reconciler.cli.status_cmd import _print_table
from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector, LiveState, Waiting
from reconciler.render.connect_rest import shown_status, with_our_fields


def connector(name: str, state: InstanceState | None) -> LiveConnector:
    status = None if state is None else InstanceStatus(state=state, worker_id="w:1")
    return LiveConnector(name=name, config={"connector.class": "datagen"}, connector_status=status)


def test_unassigned_connectors_get_one_note_saying_what_it_means_here() -> None:
    note = unassigned_note([connector("a", InstanceState.UNASSIGNED), connector("b", InstanceState.UNASSIGNED),
                            connector("c", InstanceState.RUNNING)])
    assert note == ("2 connector(s) UNASSIGNED: no `reconciler run`/`watch` holds them now (a stopping Connect worker "
                    "leaves its connectors the same); LAST BATCH says when their tasks last ran")


def test_no_note_when_none_is_unassigned() -> None:
    assert unassigned_note([connector("a", InstanceState.RUNNING), connector("b", None)]) is None


def test_a_connector_whose_tasks_wait_says_why_in_the_table_and_the_json(capsys: pytest.CaptureFixture[str]) -> None:
    reason = "cannot reach Kafka at 127.0.0.1:1: connection refused (nothing listens on that port)"
    waiting = Waiting(since_ms=1_764_230_400_000, worker_id="w:1", reason=reason)  # 2025-11-27 08:00:00Z
    running = connector("sink", InstanceState.RUNNING)
    live = LiveState(connectors={"sink": running, "other": connector("other", InstanceState.RUNNING)}, waiting={"sink": waiting})
    _print_table(live, [live.connectors["other"], running], details=False)
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note:")]
    assert notes == [f"note: sink: its tasks wait for the next batch (since 2025-11-27 08:00:00Z): {reason}"]
    doc = shown_status(running)
    assert doc is not None
    assert with_our_fields(doc, live)["waiting"] == {"since": "2025-11-27T08:00:00Z", "workerId": "w:1", "reason": reason}
    other = shown_status(live.connectors["other"])
    assert other is not None and "waiting" not in with_our_fields(other, live)  # Connect's shape, unchanged


def test_last_batch_says_when_only_some_of_the_tasks_ran() -> None:
    """A FAILED task sits batches out until a restart: "succeeded" is about the tasks that ran."""
    from reconciler.render.status_view import batch_summary
    from reconciler.core.live import LastBatch, TaskBatch

    batch = LastBatch(finished_at_ms=1_764_230_400_000, worker_id="w:1", tasks={0: TaskBatch(records=5)})
    assert batch_summary(batch, 2) == "2025-11-27 08:00:00Z succeeded, 5 records (1 of 2 tasks ran)"
    assert batch_summary(batch, 1) == "2025-11-27 08:00:00Z succeeded, 5 records"
    assert batch_summary(batch, 0) == "2025-11-27 08:00:00Z succeeded, 5 records"  # stopped since: no count to compare
    assert batch_summary(None, 2) is None  # the table shows "-"
