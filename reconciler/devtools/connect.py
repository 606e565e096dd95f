"""Start and stop a real Java Kafka Connect worker (distributed mode) on loopback.

The compatibility tests and the head-to-head benchmark run Apache Kafka Connect itself beside
the reconciler, on the same group's internal topics (`<group>-configs`, `-status`, `-offsets`),
so what Java writes and reads is the reference (docs/compatibility.md). The worker comes from
the same pinned pom.xml as the broker (`connect-runtime`, `connect-json`, `connect-file`), its
REST API listens on a free loopback port, and it is stopped by its PID.

    python -m reconciler.devtools.connect BOOTSTRAP GROUP   # prints the REST URL, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from reconciler.devtools.jvm import JvmError, java_command, kafka_classpath
from reconciler.devtools.process import (
    HOST,
    ManagedProcess,
    free_port,
    launch,
    serve_in_foreground,
    wait_ready,
)
from reconciler.errors import ReconcilerError
from reconciler.kafka.settings import Topics

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0
# Java's cause of a connector start that a restart overtook (`WorkerConnector.doShutdown`).
RACE = "Could not begin changing connector state to STARTED as the connector has been scheduled for shutdown"
# The worker settings that give a Java worker the config providers our runtime has (KIP-297),
# so it resolves the placeholders our `apply` keeps in the config topic (docs/secrets.md).
CONFIG_PROVIDERS = {
    "config.providers": "env,file,directory",
    "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
    "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
    "config.providers.directory.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
}


class ConnectStartError(ReconcilerError):
    """The Java Connect worker could not be started or did not answer on its REST port."""


def worker_properties(bootstrap: str, group_id: str, rest_port: int, extra: dict[str, str]) -> str:
    topics = Topics.for_group(group_id)
    settings = {
        "bootstrap.servers": bootstrap,
        "group.id": group_id,
        "config.storage.topic": topics.configs,
        "offset.storage.topic": topics.offsets,
        "status.storage.topic": topics.status,
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": str(topics.offsets_partitions),
        "status.storage.partitions": str(topics.status_partitions),
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "listeners": f"http://{HOST}:{rest_port}",
        "rest.advertised.host.name": HOST,
        "rest.advertised.port": str(rest_port),
        # Tests and benchmarks want offsets committed and work rebalanced promptly.
        "offset.flush.interval.ms": "1000",
        "scheduled.rebalance.max.delay.ms": "0",
        "plugin.discovery": "service_load",
        **extra,
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


@dataclass(kw_only=True)
class RunningConnect:
    """A started Connect worker; `rest()` talks to its REST API."""

    url: str
    group_id: str
    log_path: Path  # the worker's own log (log4j); its stdout goes beside it, `.out`
    process: ManagedProcess = field(repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.alive()

    def rest(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]:
        """One REST call: (status code, parsed JSON body or None)."""
        return rest_call(self.url, method, path, body, timeout_s)

    def answers(self) -> bool:
        """Whether it has joined: GET /connectors answers 200 only once the herder has joined
        the group and read the config topic to its end (before, 503 or a refused connection)."""
        try:
            return self.rest("GET", "/connectors", timeout_s=2.0)[0] == 200
        except (OSError, ValueError):
            return False

    def log_errors(self) -> list[str]:
        """ERROR lines the worker logged (a parse error of one of our records shows up here), but
        the one Java logs for its own start/restart race: a connector config record read just
        after a rebalance started the connector makes the herder restart it while it starts
        ("Handling connector-only config update by restarting connector"), and the start then
        fails with `RACE` as its cause, before the restart starts it again (seen once in CI)."""
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        return [line for n, line in enumerate(lines)
                if "] ERROR " in line and not any(RACE in later for later in lines[n + 1:n + 16])]

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (the worker leaves its group cleanly), then SIGKILL. Idempotent."""
        self.process.stop(timeout_s)

    def kill(self) -> None:
        """SIGKILL, as a lost machine looks to the group. Idempotent."""
        self.process.kill()

    def __enter__(self) -> RunningConnect:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def rest_call(url: str, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]:
    """One call to a Connect worker's REST API at `url`: (status code, parsed JSON body or None);
    an error status is returned, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        raw = exc.read()
        return exc.code, json.loads(raw) if raw else None


def start_connect(
    bootstrap: str,
    group_id: str,
    log_dir: Path | None = None,
    *,
    extra: dict[str, str] | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
    environment: dict[str, str] | None = None,
    plugin_path: Sequence[Path] = (),
) -> RunningConnect:
    """Start a distributed worker of `group_id` and wait until it has joined and answers REST.
    `environment`: variables added to ours for the worker (what its `env` provider reads);
    `plugin_path`: plugin directories (`devtools.connect_plugins`), each in its own class loader."""
    try:
        classpath = kafka_classpath()
    except JvmError as exc:
        raise ConnectStartError(exc.message, hint=exc.hint) from exc
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-connect-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = log_dir / f"connect-{group_id}-{port}.properties"
    settings = dict(extra or {})
    if plugin_path:
        settings["plugin.path"] = ",".join(str(directory) for directory in plugin_path)
    config.write_text(worker_properties(bootstrap, group_id, port, settings))
    log_path = log_dir / f"connect-{group_id}-{port}.log"
    command = java_command(classpath, "org.apache.kafka.connect.cli.ConnectDistributed", str(config),
                           log_file=log_path)
    process = launch("the Connect worker", command, log_dir / f"connect-{group_id}-{port}.out",
                     env=None if environment is None else {**os.environ, **environment})
    worker = RunningConnect(url=f"http://{HOST}:{port}", group_id=group_id, log_path=log_path, process=process)
    wait_ready(process, worker.answers, timeout_s=ready_timeout_s, error=ConnectStartError,
               what=f"did not answer on {worker.url}", log_path=log_path, poll_s=0.2)
    return worker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.connect",
        description="Run a Java Kafka Connect worker (distributed mode) until interrupted; prints its REST URL.",
    )
    parser.add_argument("bootstrap", help="the Kafka cluster, host:port")
    parser.add_argument("group_id", help="the Connect group; names the internal topics")
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_connect(args.bootstrap, args.group_id, args.log_dir), ConnectStartError,
        address=lambda worker: worker.url,
        about=lambda worker: f"Connect worker pid {worker.pid}, log {worker.log_path}; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
