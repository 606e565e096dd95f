"""`reconciler apply` killed half-way while a Java Connect worker runs the group.

The worker has no exactly-once support, so its config consumer reads uncommitted records: it
acts on the first n records of an apply that is then killed (failpoint `apply.after_record.<n>`,
SIGKILL with the transaction open) and whose transaction is aborted when the next apply claims
the id. At every n, the test checks that Java did act on that prefix, then applies again and
waits until Java's REST and our `status` both report the declared state:

- after the same manifests (the interrupted apply is completed), and
- after the manifests of before (it is abandoned): the next apply must also undo what Java took
  from the aborted records, though the committed records it plans from never held them.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from java_write_support import FILE_SOURCE, START_RACE, JavaGroup, log_length, unexpected_errors, unique, wait_for
from reconciler.core.live import ConnectTargetState
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.replay import ConfigReplay

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest

ROOT = Path(__file__).resolve().parents[3]
CRASH_TIMEOUT_S = 120
REST_STATE = {ConnectTargetState.STARTED: "RUNNING", ConnectTargetState.PAUSED: "PAUSED", ConnectTargetState.STOPPED: "STOPPED"}
DECLARED = {"running": ("RUNNING", {0: "RUNNING"}), "paused": ("PAUSED", {0: "PAUSED"}), "stopped": ("STOPPED", {})}


@pytest.fixture
def java(
    connect_worker: RunningConnect, kafka: KafkaUnderTest, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[JavaGroup]:
    """The session's worker, checked like `java_connect` does but for Java's own races: these
    applies change a connector's state and config at once, which makes Java log some
    (`java_write_support.JAVA_RACES`). Any other ERROR — a record it cannot parse — fails."""
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    before = log_length(connect_worker)
    group = JavaGroup(connect_worker, kafka.settings(connect_worker.group_id), manifests)
    yield group
    if getattr(request.node, "call_failed", False):
        abandon(group)
    logged = unexpected_errors(connect_worker, before)
    assert not logged, f"the Java Connect worker logged {len(logged)} error(s):\n" + "\n".join(logged[:20])


def abandon(java: JavaGroup) -> None:
    """After a scenario failed half-way: what the session worker's next tests must not inherit.
    A killed apply's transaction may be open (every read_committed read stops there until the
    broker's timeout), and Java may hold what it read of it (a plan of any other connector then
    also plans to undo that). An apply of no manifests with --prune aborts the one, by claiming
    the id, and ends the other by deleting every connector our applies created on that worker:
    the scenario's, and what earlier tests left (each test names its own connectors)."""
    for path in java.dir.glob("*.yaml"):
        path.unlink()
    java.apply("--prune", "--allow-empty")


class Scenario:
    """Four file sources; `before` and `after` differ in every way an apply can change them."""

    def __init__(self, java: JavaGroup, tmp_path: Path) -> None:
        self.java = java
        self.a, self.b, self.c, self.d = (unique(letter) for letter in "abcd")
        self.files = tmp_path

    def config(self, name: str, **extra: str) -> dict[str, str]:
        return {"file": str(self.files / f"{name}.txt"), "topic": f"{name}-lines", **extra}

    @property
    def before(self) -> dict[str, tuple[str, dict[str, str]] | None]:
        a, b, c, d = self.a, self.b, self.c, self.d
        return {a: ("running", self.config(a)), b: ("running", self.config(b)), c: ("running", self.config(c)), d: None}

    @property
    def after(self) -> dict[str, tuple[str, dict[str, str]] | None]:
        # a: paused with a new config; b: stopped; c: deleted (--prune); d: created stopped.
        a, b, c, d = self.a, self.b, self.c, self.d
        return {a: ("paused", self.config(a, **{"batch.size": "7"})), b: ("stopped", self.config(b)), c: None,
                d: ("stopped", self.config(d))}

    def declare(self, wanted: dict[str, tuple[str, dict[str, str]] | None]) -> None:
        for name, spec in wanted.items():
            path = self.java.dir / f"{name}.yaml"
            if spec is None:
                path.unlink(missing_ok=True)
            else:
                self.java.declare(name, FILE_SOURCE, spec[1], state=spec[0])

    def start(self) -> None:
        """`before`, one connector per apply: Java restarts a connector whose config record
        reaches it while the rebalance for another new one starts it, and logs that as an
        ERROR (`DistributedHerder.processConnectorConfigUpdates`), which the fixture forbids."""
        wanted: dict[str, tuple[str, dict[str, str]] | None] = {}
        for name, spec in self.before.items():
            wanted[name] = spec
            self.converge(wanted)

    def converge(self, wanted: dict[str, tuple[str, dict[str, str]] | None]) -> None:
        """Apply `wanted`; Java's REST and our status then report exactly it."""
        self.declare(wanted)
        self.java.apply("--prune")
        for name, spec in wanted.items():
            if spec is None:
                self.java.wait_gone(name)
                wait_for(f"{name} gone from our status", lambda n=name: self.java.our_status(n) is None or None)
            else:
                try:
                    self.java.wait_states(name, *DECLARED[spec[0]])
                except AssertionError:
                    if not restarted_after_start_race(self.java, name):
                        raise
                    self.java.wait_states(name, *DECLARED[spec[0]])
                self.java.agree(name)
            assert_config(self.java, name, None if spec is None else spec[1])

    def crash(self, wanted: dict[str, tuple[str, dict[str, str]] | None], after_records: int) -> None:
        """`apply --prune` of `wanted`, killed once its first `after_records` records are out;
        then wait until Java acted on them (as a replay of every record, aborted ones too, says)."""
        self.declare(wanted)
        settings = self.java.settings
        command = [sys.executable, "-m", "reconciler.cli.main", "apply", str(self.java.dir), "--prune",
                   "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
        env = {**os.environ, "RECONCILER_FAILPOINTS": f"apply.after_record.{after_records}"}
        env.pop("RECONCILER_DRIVER_PID", None)
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=CRASH_TIMEOUT_S)
        assert done.returncode == -signal.SIGKILL, f"exit {done.returncode}, expected a SIGKILL:\n{done.stdout}{done.stderr}"
        seen = java_view(self.java, list(wanted))
        for name, state in seen.items():
            wait_for(f"Java to act on the first {after_records} record(s): {name} {state}",
                     lambda n=name, s=state: acted_on(self.java, n, s))


def acted_on(java: JavaGroup, name: str, state: str | None) -> bool:
    """Java's REST shows `name` in `state` (None: gone) — or FAILED by Java's own start race
    (`START_RACE`), which is Java acting on the config record all the same."""
    code, body = java.worker.rest("GET", f"/connectors/{name}/status")
    if state is None or code != 200:  # 500: a rebalance under way, asked again
        return state is None and code == 404
    connector = body["connector"]
    return connector["state"] == state or (connector["state"] == "FAILED" and START_RACE in connector.get("trace", ""))


def restarted_after_start_race(java: JavaGroup, name: str) -> bool:
    """Java's `START_RACE` leaves a connector FAILED until its next config record or a restart
    (seen in CI on 2026-11-27: an abandoning apply deleted and re-created it during a rebalance,
    and the declared config was already there, so no record followed). Restarted through Java's
    REST, as its user would; True when it was."""
    code, body = java.worker.rest("GET", f"/connectors/{name}/status")
    if code != 200 or body["connector"]["state"] != "FAILED" or START_RACE not in body["connector"].get("trace", ""):
        return False
    java.rest("POST", f"/connectors/{name}/restart?includeTasks=true")
    return True


def java_view(java: JavaGroup, names: list[str]) -> dict[str, str | None]:
    """What a worker reading uncommitted records holds: every config record replayed."""
    replay = ConfigReplay()
    for message in read_to_end(java.settings, java.settings.topics.configs, isolation_level="read_uncommitted"):
        replay.apply(message.key, message.value, message.offset)
    return {
        name: REST_STATE[replay.target_states.get(name, ConnectTargetState.STARTED)] if name in replay.configs else None
        for name in names
    }


def assert_config(java: JavaGroup, name: str, config: dict[str, str] | None) -> None:
    """Java's REST holds the declared config (a stale one from an aborted apply would show here).
    Asked again while Java answers 500 for a rebalance under way."""
    code, body = wait_for(f"Java's REST to answer for {name}'s config",
                          lambda: answer if (answer := java.worker.rest("GET", f"/connectors/{name}/config"))[0] != 500 else None)
    if config is None:
        assert code == 404, f"{name} still has a config: {body}"
        return
    assert code == 200 and {k: body[k] for k in config} == config and body["connector.class"] == FILE_SOURCE


def test_apply_killed_after_each_record_converges_when_completed(java: JavaGroup, tmp_path: Path) -> None:
    """Alternately towards `after` (10 records: odd points) and back to `before` (8 records:
    even points), each completed by the next apply."""
    scenario = Scenario(java, tmp_path)
    scenario.start()
    for records in range(1, 11):
        if records % 2:
            scenario.crash(scenario.after, records)
            scenario.converge(scenario.after)
        else:
            scenario.crash(scenario.before, min(records, 8))
            scenario.converge(scenario.before)


def test_apply_killed_after_each_record_converges_when_abandoned(java: JavaGroup, tmp_path: Path) -> None:
    scenario = Scenario(java, tmp_path)
    scenario.start()
    for records in range(1, 11):
        scenario.crash(scenario.after, records)
        scenario.converge(scenario.before)
