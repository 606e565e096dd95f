"""A `reconciler` process for the loop tests (no tests here): `Running` starts `run` or `watch`
and collects its output lines as they come; `eventually`/`until` poll a condition instead of
sleeping a fixed time; `manifest`/`write` make the datagen manifests these tests edit;
`served_url` reads the REST API's address from the process's output.
"""

from __future__ import annotations

import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import polling
import psutil
import yaml

from reconciler.kafka.settings import KafkaSettings
from run_support import child_env

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 90.0


def manifest(name: str, config: dict[str, Any], *, state: str = "running", tasks_max: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": name},
        "spec": {"class": "datagen", "tasksMax": tasks_max, "state": state, "config": config},
    }


class Running:
    """A `reconciler` subprocess whose output lines are collected as they come."""

    def __init__(self, args: list[str], settings: KafkaSettings, env: dict[str, str] | None = None) -> None:
        command = [sys.executable, "-m", "reconciler.cli.main", *args]
        command += ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env if env is not None else child_env(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.pumps = [
            threading.Thread(target=self._pump, args=(stream,), daemon=True)
            for stream in (self.process.stdout, self.process.stderr)
        ]
        for pump in self.pumps:
            pump.start()

    def _pump(self, stream: IO[str] | None) -> None:
        assert stream is not None
        for line in stream:
            self.lines.put(line.rstrip("\n"))

    def wait_for_line(self, needle: str, timeout_s: float = WAIT_S) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                assert self.process.poll() is None, f"exited early ({self.process.returncode}):\n" + self.output()
                continue
            self.seen.append(line)
            if needle in line:
                return line
        raise AssertionError(f"no line with {needle!r} within {timeout_s}s:\n" + self.output())

    def output(self) -> str:
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return "\n".join(self.seen)

    def stop(self, signum: int) -> int:
        """Send `signum`, wait for the exit, and check every descendant (JVM, workers) is gone."""
        family = psutil.Process(self.process.pid).children(recursive=True)
        self.process.send_signal(signum)
        code = self.process.wait(timeout=WAIT_S)
        _gone, alive = psutil.wait_procs(family, timeout=30)
        assert not alive, f"left running: {alive}"
        return code

    def close(self) -> None:
        """Kill the process if it still runs; collect the rest of its output; close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pump in self.pumps:
            pump.join(timeout=10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def eventually(check: Callable[[], bool], timeout_s: float = WAIT_S) -> None:
    polling.until(check, timeout_s, 0.3)


def write(path: Path, doc: dict[str, Any]) -> None:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


URL_LINE = re.compile(r"REST API \(read-only\) on (http://\S+):")
API_WAIT_S = 120.0  # `until`'s default: test_api_watch's wait, as it was there


def served_url(process: Running) -> str:
    match = URL_LINE.search(process.wait_for_line("REST API (read-only) on"))
    assert match is not None
    return match.group(1)


def until(check: Callable[[], Any], timeout_s: float = API_WAIT_S, every_s: float = 0.05) -> Any:
    """`check()`'s first truthy result."""
    return polling.until(check, timeout_s, every_s)
