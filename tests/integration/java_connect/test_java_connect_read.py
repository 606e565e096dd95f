"""Java writes, we read it: a real Kafka Connect worker's REST API changes a connector, and our
`status`, `snapshot` and `plan` then say exactly what Java's REST API says.

Each test drives Java's own FileStreamSourceConnector / FileStreamSinkConnector through the
session's Java worker (`java_connect`; it fails a test that made Java log an ERROR), waits
until Java reports the state (short polls, a deadline), and compares, connector by connector:

- `reconciler status NAME --format json` with `GET /connectors/{name}/status`, worker ids and
  all (we read the statuses Java wrote);
- our snapshot's config, committed tasks and target state with `GET /connectors/{name}`,
  `GET /connectors/{name}/tasks` and the status;
- `reconciler plan` over a manifest declaring the same connector and state: "No changes".

Offsets through Java's REST API are in test_java_connect_offsets.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from java_read_support import (
    FILE_SINK,
    FILE_SOURCE,
    JavaSide,
    OurSide,
    assert_same_connector,
    manifest,
    same_eventually,
    unique,
    wait_until,
)
from reconciler.devtools.connect import RunningConnect
from reconciler.render.common import NO_CHANGES, NO_CHANGES_TO_APPLY

PLAN_STATES = {"RUNNING": "running", "PAUSED": "paused", "STOPPED": "stopped"}


@pytest.fixture
def java(java_connect: RunningConnect) -> JavaSide:
    return JavaSide(java_connect)


@pytest.fixture
def ours(kafka: Any, java_connect: RunningConnect) -> OurSide:
    return OurSide(kafka.settings(java_connect.group_id))


def source_config(tmp_path: Path, name: str) -> dict[str, str]:
    data = tmp_path / f"{name}.txt"
    data.write_text("one\ntwo\nthree\n")
    return {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(data), "topic": f"{name}-out"}


def assert_no_changes(ours: OurSide, tmp_path: Path, name: str, config: dict[str, str], rest_state: str) -> None:
    """A manifest declaring what Java holds plans nothing (other connectors of the shared
    worker are listed as unmanaged or orphaned, which is no change to apply)."""
    spec = {key: value for key, value in config.items() if key not in ("connector.class", "tasks.max", "name")}
    directory = manifest(
        tmp_path / "manifests", name, config["connector.class"], spec, PLAN_STATES[rest_state], int(config["tasks.max"])
    )
    code, out = ours.plan(directory)
    assert (code, NO_CHANGES in out or NO_CHANGES_TO_APPLY in out) == (0, True), out


def check(java: JavaSide, ours: OurSide, tmp_path: Path, name: str, config: dict[str, str], rest_state: str) -> None:
    assert_same_connector(java, ours, name, rest_state)
    assert_no_changes(ours, tmp_path, name, config, rest_state)


def test_create_pause_stop_resume(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    """KIP-875's transitions through Java's REST API, read back after each."""
    name = unique("lifecycle")
    config = source_config(tmp_path, name)
    java.create(name, config)
    java.wait_for_states(name, "RUNNING", ["RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")
    same_eventually(  # the same connectors (the session's worker holds other tests' too)
        "the connectors",
        lambda: sorted(java.call("GET", "/connectors", expect=200)),
        lambda: sorted(n for n, c in ours.snapshot().connectors.items() if c.exists),
    )

    java.call("PUT", f"/connectors/{name}/pause", expect=202)
    java.wait_for_states(name, "PAUSED", ["PAUSED"])
    check(java, ours, tmp_path, name, config, "PAUSED")

    java.call("PUT", f"/connectors/{name}/stop", expect=204)
    java.wait_for_states(name, "STOPPED", [])  # the leader tombstones the task statuses
    check(java, ours, tmp_path, name, config, "STOPPED")
    connector = ours.connector(name)
    assert connector is not None and connector.task_count == 0 and connector.task_configs == []

    java.call("PUT", f"/connectors/{name}/resume", expect=202)
    java.wait_for_states(name, "RUNNING", ["RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")

    java.delete(name)
    wait_until(f"{name} gone from Java", lambda: java.get(f"/connectors/{name}/status")[0] == 404)
    code, _ = ours.run("status", name, "--format", "json")
    assert code == 1  # Connect's 404: no status found
    connector = ours.connector(name)
    assert connector is None or not connector.exists


@pytest.mark.parametrize("initial_state", ["PAUSED", "STOPPED"])
def test_created_in_a_state(java: JavaSide, ours: OurSide, tmp_path: Path, initial_state: str) -> None:
    """KIP-980: `initial_state` writes the target state before the config; no task runs."""
    name = unique(f"created-{initial_state.lower()}")
    config = source_config(tmp_path, name)
    java.create(name, config, initial_state=initial_state)
    java.wait_for_states(name, initial_state, [])
    check(java, ours, tmp_path, name, config, initial_state)
    java.delete(name)


def test_restart_with_query_parameters(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    """KIP-745: the 202 variants answer with what they restart (RESTARTING) and the instances
    come back RUNNING; a request that restarts nothing changes nothing. We read the result."""
    name = unique("restarted")
    config = source_config(tmp_path, name)
    java.create(name, config)
    java.wait_for_states(name, "RUNNING", ["RUNNING"])

    answer = java.call("POST", f"/connectors/{name}/restart?includeTasks=true&onlyFailed=false", expect=202)
    assert answer["connector"]["state"] == "RESTARTING" and [t["state"] for t in answer["tasks"]] == ["RESTARTING"]
    java.wait_for_states(name, "RUNNING", ["RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")

    quiet = java.call("POST", f"/connectors/{name}/restart?includeTasks=true&onlyFailed=true", expect=202)
    assert quiet["connector"]["state"] == "RUNNING" and [t["state"] for t in quiet["tasks"]] == ["RUNNING"]
    java.call("POST", f"/connectors/{name}/restart", expect=204)  # the connector only, synchronously
    java.wait_for_states(name, "RUNNING", ["RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")
    java.delete(name)


def test_config_update_and_a_sink(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    """`PUT /connectors/{name}/config` on a running sink: new config, new task configs."""
    name = unique("sink")
    config = {"connector.class": FILE_SINK, "tasks.max": "1", "topics": f"{name}-in", "file": str(tmp_path / "out.txt")}
    java.call("PUT", f"/connectors/{name}/config", config, expect=201)
    java.wait_for_states(name, "RUNNING", ["RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")
    assert same_eventually(f"type of {name}", lambda: java.status(name)["type"], lambda: (ours.status(name) or {}).get("type")) == "sink"

    config = {**config, "tasks.max": "2", "topics": f"{name}-in,{name}-more"}
    java.call("PUT", f"/connectors/{name}/config", config, expect=200)
    java.wait_for_states(name, "RUNNING", ["RUNNING", "RUNNING"])
    check(java, ours, tmp_path, name, config, "RUNNING")
    java.delete(name)
