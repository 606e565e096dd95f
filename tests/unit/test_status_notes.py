"""`reconciler status`'s notes under the table: UNASSIGNED explained once (no worker runs between
batches here, so a healthy pipeline reads UNASSIGNED after `run --once`)."""

from __future__ import annotations

from reconciler.cli.status_cmd import unassigned_note
from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector


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
