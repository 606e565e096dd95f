"""Helpers for the "Java writes, we read" compatibility tests (no tests here).

`JavaSide` drives the session's Java Connect worker through its REST API and polls it with
short sleeps and a deadline. `OurSide` runs our CLI in-process (`status`, `offsets`,
`snapshot`, `plan`) against the same group and parses what it prints. `produce_raw` writes raw
records to the worker's internal topics, as another client might have.

Wait for a state on the status endpoints: Java serves them from its status store. Requests that
go through its herder (`GET /connectors/{name}`, `…/tasks`, restarts, offsets changes) fail
while a rebalance is expected, and Java logs that as an ERROR, which fails the test.
"""

from __future__ import annotations

import contextlib
import io
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from polling import until

from reconciler.cli.main import main
from reconciler.core.live import LiveConnector, LiveState, load_snapshot
from reconciler.devtools.connect import RunningConnect
from reconciler.kafka.settings import KafkaSettings

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
DEADLINE_S = 30.0
POLL_S = 0.1
# Connect's REST says RUNNING for what the config topic stores as STARTED.
REST_TO_TARGET = {"RUNNING": "STARTED", "PAUSED": "PAUSED", "STOPPED": "STOPPED"}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def wait_until(what: str, check: Callable[[], Any], deadline_s: float = DEADLINE_S) -> Any:
    """Call `check` until it returns something truthy; fail naming `what` after the deadline."""
    return until(check, deadline_s, POLL_S, what=what)


@dataclass
class JavaSide:
    worker: RunningConnect

    def call(self, method: str, path: str, body: Any = None, *, expect: int | tuple[int, ...]) -> Any:
        status, answer = self.worker.rest(method, path, body)
        wanted = (expect,) if isinstance(expect, int) else expect
        assert status in wanted, f"{method} {path} → {status} {answer}"
        return answer

    def get(self, path: str) -> tuple[int, Any]:
        return self.worker.rest("GET", path)

    def status(self, name: str) -> Any:
        return self.call("GET", f"/connectors/{name}/status", expect=200)

    def offsets(self, name: str) -> Any:
        return self.call("GET", f"/connectors/{name}/offsets", expect=200)

    def states(self, name: str) -> tuple[str | None, list[str]]:
        code, body = self.get(f"/connectors/{name}/status")
        if code != 200:
            return None, []
        return body["connector"]["state"], [task["state"] for task in body["tasks"]]

    def wait_for_states(self, name: str, connector: str, tasks: list[str]) -> None:
        wait_until(f"{name} to report {connector} with tasks {tasks}", lambda: self.states(name) == (connector, tasks))

    def create(self, name: str, config: dict[str, str], initial_state: str | None = None) -> None:
        body: dict[str, Any] = {"name": name, "config": config}
        if initial_state is not None:
            body["initial_state"] = initial_state
        self.call("POST", "/connectors", body, expect=201)

    def delete(self, name: str) -> None:
        self.call("DELETE", f"/connectors/{name}", expect=204)


@dataclass
class OurSide:
    settings: KafkaSettings

    def run(self, *args: str) -> tuple[int, str]:
        """One CLI command in this process: (exit code, stdout)."""
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main([*args, "--bootstrap-servers", self.settings.bootstrap_servers, "--group-id", self.settings.group_id])
        return code, out.getvalue()

    def status(self, name: str) -> Any:
        code, out = self.run("status", name, "--format", "json")
        return json.loads(out) if code == 0 and out else None

    def offsets(self, name: str) -> Any:
        code, out = self.run("offsets", name, "--format", "json")
        return json.loads(out) if code == 0 and out else None

    def snapshot(self) -> LiveState:
        code, out = self.run("snapshot")
        assert code == 0
        return load_snapshot(out)

    def connector(self, name: str) -> LiveConnector | None:
        return self.snapshot().connector(name)

    def plan(self, manifests: Path) -> tuple[int, str]:
        return self.run("plan", str(manifests), "--detailed-exitcode")


def same_eventually(what: str, java: Callable[[], Any], ours: Callable[[], Any]) -> Any:
    """Java's answer and ours, asked in turn until they agree (Java's REST moves on while we
    read); returns the agreed answer, or fails showing both."""
    last: list[Any] = [None, None]

    def agree() -> Any:
        last[:] = [java(), ours()]
        return last[0] == last[1] and last[0] is not None and (last[0],)

    try:
        return wait_until(what, agree)[0]
    except AssertionError:
        raise AssertionError(f"{what}: Java says {last[0]!r}, we say {last[1]!r}") from None


def by_partition(body: Any) -> list[str]:
    """An offsets body's entries, in a canonical order: Java lists them in HashMap order."""
    return sorted(json.dumps(entry, sort_keys=True) for entry in body["offsets"])


def java_info(java: JavaSide, name: str) -> dict[str, Any]:
    """What Java's REST says about a connector's config, target state and committed tasks."""
    info = java.call("GET", f"/connectors/{name}", expect=200)
    tasks = java.call("GET", f"/connectors/{name}/tasks", expect=200)
    state = java.call("GET", f"/connectors/{name}/status", expect=200)["connector"]["state"]
    return {
        "config": info["config"],
        "tasks": [task["task"] for task in info["tasks"]],
        "task_configs": [task["config"] for task in tasks],
        "state": state,
    }


def our_info(ours: OurSide, name: str) -> dict[str, Any] | None:
    """The same from our snapshot (target state in REST's words, as a status would say it)."""
    connector = ours.connector(name)
    if connector is None or connector.config is None or connector.connector_status is None:
        return None
    return {
        "config": connector.config,
        "tasks": list(range(len(connector.task_configs))),
        "task_configs": connector.task_configs,
        "state": connector.connector_status.state.value,
        "target": connector.target_state.value,
    }


def assert_same_connector(java: JavaSide, ours: OurSide, name: str, rest_state: str) -> None:
    """Status, config, target state (`rest_state`, as REST names it), task list and task
    configs agree with Java's REST."""
    same_eventually(f"status of {name}", lambda: java.status(name), lambda: ours.status(name))

    def theirs() -> dict[str, Any]:
        return {**java_info(java, name), "target": REST_TO_TARGET[rest_state]}

    same_eventually(f"config, tasks and state of {name}", theirs, lambda: our_info(ours, name))


def manifest(directory: Path, name: str, cls: str, config: dict[str, str], state: str, tasks_max: int = 1) -> Path:
    """A manifest declaring what Java holds, in our format."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": name},
        "spec": {"class": cls, "tasksMax": tasks_max, "state": state, "config": config},
    }
    (directory / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return directory


def produce_raw(settings: KafkaSettings, topic: str, records: list[tuple[bytes, bytes | None]]) -> None:
    """Records as any client could write them (Java's partitioner, murmur2, for the keys), in
    order within each partition (idempotence: a retry never reorders them)."""
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": settings.bootstrap_servers, "partitioner": "murmur2_random", "enable.idempotence": True}
    )
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(settings.timeout_s) == 0
