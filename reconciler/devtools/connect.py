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
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from reconciler.devtools.broker import HOST, free_port
from reconciler.devtools.jvm import die_with_parent, JvmError, java_command, kafka_classpath
from reconciler.errors import ReconcilerError
from reconciler.kafka.settings import Topics

READY_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 20.0


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


@dataclass
class RunningConnect:
    """A started Connect worker; `rest()` talks to its REST API."""

    url: str
    group_id: str
    pid: int
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    def alive(self) -> bool:
        return self.process.poll() is None

    def rest(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]:
        """One REST call: (status code, parsed JSON body or None)."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                raw = response.read()
                return response.status, json.loads(raw) if raw else None
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            return exc.code, json.loads(raw) if raw else None

    def log_errors(self) -> list[str]:
        """ERROR lines the worker logged (a parse error of one of our records shows up here)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if "] ERROR " in line]

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (the worker leaves its group cleanly), then SIGKILL. Idempotent."""
        if self.process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> RunningConnect:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_connect(
    bootstrap: str,
    group_id: str,
    log_dir: Path | None = None,
    *,
    extra: dict[str, str] | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> RunningConnect:
    """Start a distributed worker of `group_id` and wait until it has joined and answers REST."""
    try:
        classpath = kafka_classpath()
    except JvmError as exc:
        raise ConnectStartError(exc.message, hint=exc.hint) from exc
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-connect-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = log_dir / f"connect-{group_id}-{port}.properties"
    config.write_text(worker_properties(bootstrap, group_id, port, extra or {}))
    log_path = log_dir / f"connect-{group_id}-{port}.log"
    with (log_dir / f"connect-{group_id}-{port}.out").open("wb") as out:
        process = subprocess.Popen(
            java_command(classpath, "org.apache.kafka.connect.cli.ConnectDistributed", str(config),
                         log_file=log_path),
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )
    worker = RunningConnect(f"http://{HOST}:{port}", group_id, process.pid, log_path, process)
    _wait_until_ready(worker, ready_timeout_s)
    return worker


def _wait_until_ready(worker: RunningConnect, timeout_s: float) -> None:
    # GET /connectors answers 200 only once the herder has joined the group and read the config
    # topic to its end (before that it answers 503 or refuses the connection).
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not worker.alive():
            raise ConnectStartError(f"the Connect worker exited with code {worker.process.returncode}",
                                    hint=f"log: {worker.log_path}")
        try:
            status, _ = worker.rest("GET", "/connectors", timeout_s=2.0)
            if status == 200:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.2)
    worker.stop()
    raise ConnectStartError(f"the Connect worker did not answer on {worker.url} within {timeout_s:g}s",
                            hint=f"log: {worker.log_path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.connect",
        description="Run a Java Kafka Connect worker (distributed mode) until interrupted; prints its REST URL.",
    )
    parser.add_argument("bootstrap", help="the Kafka cluster, host:port")
    parser.add_argument("group_id", help="the Connect group; names the internal topics")
    parser.add_argument("--log-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        worker = start_connect(args.bootstrap, args.group_id, args.log_dir)
    except ConnectStartError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    stop = False

    def _request_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    print(worker.url, flush=True)
    print(f"Connect worker pid {worker.pid}, log {worker.log_path}; Ctrl-C stops it", file=sys.stderr, flush=True)
    with worker:
        while not stop and worker.alive():
            time.sleep(0.2)
    return 0 if stop else 1


if __name__ == "__main__":
    sys.exit(main())
