"""Helpers for the "our manifests → Java obeys" tests (no tests here).

A `JavaGroup` is the session's Java Connect worker seen from our side: manifests written to a
temporary directory and applied with our CLI (`--group-id` = the worker's group), Java's REST
polled with short sleeps against a deadline, and the config, status and offsets topics read
back to compare what each side wrote. Connector names are unique per test (the worker is
shared by the session).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from reconciler.cli.main import main
from reconciler.render.connect_rest import connector_status
from reconciler.devtools.connect import RunningConnect
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings

FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
DEADLINE_S = 45.0
POLL_S = 0.2

T = TypeVar("T")
Record = tuple[bytes, bytes | None]  # key, value


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def wait_for(what: str, probe: Callable[[], T | None], deadline_s: float = DEADLINE_S) -> T:
    """Poll `probe` until it returns something other than None/False; fail naming `what`."""
    deadline = time.monotonic() + deadline_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {deadline_s:g}s waiting for {what} (last: {last!r})")


def manifest(
    name: str,
    connector_class: str,
    config: dict[str, str],
    *,
    state: str = "running",
    restart: dict[str, Any] | None = None,
    offsets: dict[str, Any] | None = None,
) -> str:
    spec: dict[str, Any] = {"class": connector_class, "tasksMax": 1, "state": state, "config": config}
    if restart is not None:
        spec["restart"] = restart
    if offsets is not None:
        spec["offsets"] = offsets
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return json.dumps(doc, indent=2)  # JSON is YAML


def rest_config(name: str, connector_class: str, config: dict[str, str]) -> dict[str, str]:
    """The config a manifest stores, in our key order, for Java's REST (which keeps the order
    it is given and appends `name` only when missing)."""
    full = {**config, "connector.class": connector_class, "tasks.max": "1", "name": name}
    return dict(sorted(full.items()))


@dataclass
class JavaGroup:
    worker: RunningConnect
    settings: KafkaSettings
    dir: Path

    # --- our side ----------------------------------------------------------------------------

    def declare(self, name: str, connector_class: str, config: dict[str, str], **spec: Any) -> None:
        (self.dir / f"{name}.yaml").write_text(manifest(name, connector_class, config, **spec))

    def forget(self, name: str) -> None:
        (self.dir / f"{name}.yaml").unlink()

    def apply(self, *extra: str) -> None:
        args = ["apply", str(self.dir), *extra]
        args += ["--bootstrap-servers", self.settings.bootstrap_servers, "--group-id", self.settings.group_id]
        assert main(args) == 0, "reconciler apply failed"

    def our_status(self, name: str) -> dict[str, Any] | None:
        connector = read_live_state(self.settings, task_configs=False).connector(name)
        return None if connector is None else connector_status(connector)

    # --- Java's side -------------------------------------------------------------------------

    def rest(self, method: str, path: str, body: Any = None, *, expect: Iterable[int] = (200, 201, 202, 204)) -> Any:
        code, answer = self.worker.rest(method, path, body)
        assert code in tuple(expect), f"{method} {path}: {code} {answer}"
        return answer

    def states(self, name: str) -> tuple[str, dict[int, str]] | None:
        """(connector state, {task id: state}) from Java's REST; None when it answers 404."""
        code, body = self.worker.rest("GET", f"/connectors/{name}/status")
        if code == 404:
            return None
        assert code == 200, f"GET status of {name}: {code} {body}"
        return body["connector"]["state"], {t["id"]: t["state"] for t in body["tasks"]}

    def wait_states(self, name: str, connector: str, tasks: dict[int, str]) -> None:
        wanted = (connector, tasks)
        seen: list[object] = []

        def reached() -> bool | None:
            seen[:] = [self.states(name)]
            return seen[0] == wanted or None

        try:
            wait_for(f"{name} to be {wanted} in Java's REST", reached)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; Java's REST says {seen[0] if seen else 'nothing'}") from None

    def wait_gone(self, name: str) -> None:
        wait_for(f"{name} to be deleted in Java's REST", lambda: self.states(name) is None or None)

    def agree(self, name: str) -> dict[str, Any]:
        """Java's REST and our `status` report the same states, workers and type (Java also
        writes its `version`, which our status read leaves out)."""

        seen: list[str] = []

        def same() -> dict[str, Any] | None:
            code, java = self.worker.rest("GET", f"/connectors/{name}/status")
            ours = self.our_status(name)
            seen[:] = [f"Java's REST said {code} {java!r}, ours {ours!r}"]
            if code != 200 or ours is None:
                return None
            return java if _comparable(java) == _comparable(ours) else None

        try:
            return wait_for(f"our status of {name} to agree with Java's REST", same)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; {seen[0] if seen else 'nothing read'}") from None

    # --- topics --------------------------------------------------------------------------------

    def config_end(self) -> int:
        return _end(self.settings, self.settings.topics.configs)

    def config_records(self, name: str, since: int) -> list[Record]:
        """The config-topic records about connector `name` from offset `since` on, in order."""
        return self.records(self.settings.topics.configs, since, lambda key: _about(key, name))

    def records(self, topic: str, since: int, wanted: Callable[[bytes], bool]) -> list[Record]:
        return [
            (m.key or b"", m.value)
            for m in read_to_end(self.settings, topic)
            if m.offset >= since and wanted(m.key or b"")
        ]

    def status_values(self, key: str) -> list[dict[str, Any]]:
        """Every value written to status key `key`, oldest first (tombstones left out)."""
        wanted = key.encode()
        return [
            json.loads(m.value)
            for m in read_to_end(self.settings, self.settings.topics.status)
            if m.key == wanted and m.value is not None
        ]

    def topic_values(self, topic: str) -> list[str]:
        return [(m.value or b"").decode() for m in read_to_end(self.settings, topic)]


# Java's own races, logged at ERROR though the connector recovers by itself: a connector's
# config record (which restarts it) and a target-state change or a rebalance starting it reach
# the herder together (`WorkerConnector.doTransitionTo` / `doShutdown`). They happen whenever
# one apply changes both a connector's state and its config, or creates several connectors.
# Also a REST read of a connector's config during a rebalance, which Java answers 500 and logs.
# And `START_RACE`: a connector deleted and created again under the same name while the
# rebalance for the deletion is under way is assigned from one config snapshot and started from
# another that lacks it (`DistributedHerder.startConnector` hands `Worker.startConnector` a null
# config): Java marks it FAILED until its next config record (seen once in ~10 CI runs, in
# test_java_connect_crash, whose abandoned applies do exactly that).
START_RACE = 'because "connProps" is null'
JAVA_RACES = (
    "has pre-empted this one",
    "as the connector has been scheduled for shutdown",
    "Request cannot be completed because a rebalance is expected",
    START_RACE,
)


def unexpected_errors(worker: RunningConnect, after_line: int) -> list[str]:
    """ERROR entries the worker logged after line `after_line`, except Java's own races."""
    text = worker.log_path.read_text(errors="replace").splitlines()[after_line:]
    entries: list[list[str]] = []
    for line in text:
        if "] ERROR " in line:
            entries.append([line])
        elif entries and not line.startswith("["):  # the stack trace of the entry above
            entries[-1].append(line)
    return [e[0] for e in entries if not any(race in line for line in e for race in JAVA_RACES)]


def log_length(worker: RunningConnect) -> int:
    return len(worker.log_path.read_text(errors="replace").splitlines())


def renamed(records: list[Record], old: str, new: str) -> list[Record]:
    """`records` as they read for connector `new` (names, and file paths made from them)."""
    swap = (old.encode(), new.encode())
    return [(key.replace(*swap), None if value is None else value.replace(*swap)) for key, value in records]


def normalised(records: list[Record]) -> list[tuple[bytes, object]]:
    """Task configs parsed: Java writes them from a `HashMap`, whose order is its own (the
    only values compared as data rather than bytes). A generation of task configs that repeats
    the one before it is dropped (`without_repeated_generations`)."""
    return [
        (key, json.loads(value) if key.startswith(b"task-") and value else value)
        for key, value in without_repeated_generations(records)
    ]


def without_repeated_generations(records: list[Record]) -> list[Record]:
    """`records` less each generation (`task-…` records and the `commit-…` that ends them)
    that equals, parsed, the generation just before it.

    Java writes the same generation twice now and then: `DistributedHerder.publishConnectorTaskConfigs`
    compares the new task configs with its config snapshot, which catches up with its own write
    only once the worker has read it back, so a connector started twice in quick succession (by
    the rebalance and the config update of two connectors created together, as an apply does)
    writes it again. A reader's state is the same after either; which side of a comparison gets
    the repeat is Java's timing, not ours."""
    kept: list[Record] = []
    pending: list[Record] = []
    previous: list[tuple[bytes, object]] | None = None
    for key, value in records:
        if key.startswith(b"task-"):
            pending.append((key, value))
            continue
        if not key.startswith(b"commit-"):
            kept.extend(pending)
            kept.append((key, value))
            pending, previous = [], None  # a repeat counts only right after its twin
            continue
        generation = pending + [(key, value)]
        parsed = [(k, json.loads(v) if v else v) for k, v in generation]
        if parsed != previous:
            kept.extend(generation)
        previous, pending = parsed, []
    return kept + pending


def _about(key: bytes, name: str) -> bool:
    text = key.decode("utf-8", "replace")
    return text.endswith("-" + name) or (text.startswith("task-" + name + "-") and text.rsplit("-", 1)[-1].isdigit())


def _end(settings: KafkaSettings, topic: str) -> int:
    from reconciler.kafka.io.consume import end_offsets

    return end_offsets(settings, topic)[0]


def _comparable(doc: dict[str, Any]) -> tuple[object, ...]:
    def instance(entry: dict[str, Any]) -> tuple[object, ...]:
        return entry.get("id"), entry["state"], entry["worker_id"], entry.get("trace")

    tasks = sorted(instance(t) for t in doc.get("tasks", []))
    return doc["name"], instance(doc["connector"]), tuple(tasks), doc.get("type")
