"""Our read-only REST API against the Java Connect worker's own REST, on the same topics.

FileStream connectors are created through Java's REST on its group (one running, one paused,
one stopped); our server then reads that group's topics, and every read route must answer
what Java answers, status code and body, except that our bodies mask secrets.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import pytest
from polling import eventually

from reconciler.api.server import Service, serving
from reconciler.devtools.connect import RunningConnect
from reconciler.kafka.io.store import prepare, read_live_state

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest

SECRET = "hunter2"
MASK = "(sensitive)"
SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def masked(body: Any) -> Any:
    """Java's body as ours must be: the secret's value masked."""
    if isinstance(body, dict):
        return {k: masked(v) for k, v in body.items()}
    if isinstance(body, list):
        return [masked(v) for v in body]
    return MASK if body == SECRET else body


@pytest.fixture
def connectors(java_connect: RunningConnect, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Three FileStream connectors made by Java: RUNNING, PAUSED and STOPPED; deleted afterwards."""
    suffix = uuid.uuid4().hex[:8]
    names = {"running": f"fs-src-{suffix}", "paused": f"fs-sink-{suffix}", "stopped": f"fs-idle-{suffix}"}
    topic = f"api-vs-java-{suffix}"
    (tmp_path / "in.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "idle.txt").write_text("idle\n")
    configs = {
        names["running"]: {"connector.class": SOURCE, "tasks.max": "1", "file": str(tmp_path / "in.txt"),
                           "topic": topic, "db.password": SECRET},
        names["paused"]: {"connector.class": SINK, "tasks.max": "2", "file": str(tmp_path / "out.txt"), "topics": topic},
        names["stopped"]: {"connector.class": SOURCE, "tasks.max": "1", "file": str(tmp_path / "idle.txt"), "topic": topic},
    }
    try:
        for name, config in configs.items():
            assert java_connect.rest("POST", "/connectors", {"name": name, "config": config})[0] == 201
        eventually(lambda: _states(java_connect, names["paused"], "RUNNING", 2))  # it consumed the topic
        assert java_connect.rest("PUT", f"/connectors/{names['paused']}/pause")[0] == 202
        assert java_connect.rest("PUT", f"/connectors/{names['stopped']}/stop")[0] == 204
        eventually(lambda: _states(java_connect, names["running"], "RUNNING", 1))
        eventually(lambda: _states(java_connect, names["paused"], "PAUSED", 2))
        eventually(lambda: _states(java_connect, names["stopped"], "STOPPED", 0))
        yield names
    finally:
        for name in configs:
            java_connect.rest("DELETE", f"/connectors/{name}")


def _states(java: RunningConnect, name: str, state: str, tasks: int) -> None:
    code, body = java.rest("GET", f"/connectors/{name}/status")
    assert code == 200, body
    assert body["connector"]["state"] == state and [t["state"] for t in body["tasks"]] == [state] * tasks, body


@pytest.fixture
def ours(kafka: KafkaUnderTest, java_connect: RunningConnect) -> Iterator[Service]:
    """Our REST API on a loopback port, serving the Java group's topics."""
    settings = kafka.settings(java_connect.group_id)
    prepare(settings)  # adds only our own `<group>-reconciler` topic, which Java never reads
    with serving(settings, "127.0.0.1:0", "ours:0", interval_s=1.0) as service:
        yield service


def test_every_read_route_answers_as_the_java_worker(
    connectors: dict[str, str], ours: Service, java_connect: RunningConnect, kafka: KafkaUnderTest
) -> None:
    settings = kafka.settings(java_connect.group_id)
    mine = set(connectors.values())
    paths = [f"/connectors/{name}{route}" for name in sorted(mine)
             for route in ("", "/config", "/status", "/tasks", "/tasks/0/status", "/tasks/1/status", "/offsets", "/topics")]
    missing = f"nope-{uuid.uuid4().hex[:6]}"
    paths += [f"/connectors/{missing}{route}"
              for route in ("", "/config", "/status", "/tasks", "/tasks/0/status", "/offsets", "/topics")]
    # (A task id that is not a number makes Java log an ERROR: its answer is checked in tests/unit/api/test_api_app.py.)
    paths += ["/no/such/route"]
    listings = ["/connectors?expand=status", "/connectors?expand=info", "/connectors?expand=status&expand=info"]

    with httpx.Client(base_url=ours.url, timeout=30) as http:

        def compare() -> int:
            ours.board.replace(live=read_live_state(settings))
            for path in paths:
                theirs = java_connect.rest("GET", path)
                answer = http.get(path)
                assert (answer.status_code, answer.json()) == (theirs[0], masked(theirs[1])), path
                assert SECRET not in answer.text, path
            for path in listings:
                theirs = {k: v for k, v in java_connect.rest("GET", path)[1].items() if k in mine}
                answer = {k: v for k, v in http.get(path).json().items() if k in mine}
                assert answer == masked(theirs), path
            listed = set(http.get("/connectors").json()) & mine
            assert listed == set(java_connect.rest("GET", "/connectors")[1]) & mine == mine
            return len(paths) + len(listings) + 1

        compared = eventually(compare)
        assert compared == 36
        eventually(lambda: _same_cluster(http, java_connect))


def _same_cluster(http: httpx.Client, java: RunningConnect) -> None:
    ours, theirs = http.get("/").json(), java.rest("GET", "/")[1]
    assert ours["kafka_cluster_id"] == theirs["kafka_cluster_id"] is not None
    assert set(ours) == set(theirs)  # version and commit are ours
