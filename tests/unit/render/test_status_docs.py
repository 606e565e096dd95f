"""`reconciler status --format json`'s documents (`render.connect_rest.shown_status`): Connect's
status shape for every connector the table lists, one with no status record yet included."""

from __future__ import annotations

from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector
from reconciler.render.connect_rest import connector_status, shown_status

CONFIG: dict[str, str | None] = {"connector.class": "datagen", "topic": "t", "count": "1"}
RUNNING = InstanceStatus(state=InstanceState.RUNNING, worker_id="w:1", version="1.0")


def test_a_connector_with_a_status_is_shown_as_connect_shows_it() -> None:
    connector = LiveConnector(name="a", config=CONFIG, connector_status=RUNNING)
    assert shown_status(connector) == connector_status(connector)


def test_a_connector_applied_but_not_yet_run_is_unassigned_on_no_worker() -> None:
    assert shown_status(LiveConnector(name="a", config=CONFIG, task_count=0)) == {
        "name": "a",
        "connector": {"state": "UNASSIGNED", "worker_id": None, "version": None},
        "tasks": [],
        "type": "source",
    }


def test_a_deleted_connector_keeps_its_last_status_and_a_name_without_either_has_none() -> None:
    deleted = LiveConnector(name="gone", connector_status=RUNNING)
    doc = shown_status(deleted)
    assert doc is not None and doc == connector_status(deleted) and doc["type"] == "unknown"
    assert shown_status(LiveConnector(name="ghost")) is None
