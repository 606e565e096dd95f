"""Helpers for the crash tests that kill a Spark batch (no tests here): the batch runs in a
fresh process with a failpoint armed; it must die by SIGKILL there, and every process of it —
its JVM, its Python workers — must be gone soon after (the killed run leaves nothing behind).

`run_once` runs the whole CLI (`reconciler run --once`), killed at a failpoint or to its end, for
test_crash.py and the jdbc-sink's run tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from reconciler import failpoints
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import TaskWork
from run_support import child_env

if TYPE_CHECKING:
    from run_support import Pipeline

ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 240

BATCH_IN_A_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    from reconciler.kafka.settings import KafkaSettings, Topics
    from reconciler.runtime.executor import SparkExecutor
    from reconciler.runtime.batch.tasks import TaskWork
    bootstrap, group, works = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=20)
    executor = SparkExecutor(settings, master="local[2]")
    print(executor.run_batch([TaskWork(**w) for w in works]), flush=True)
    """
)


def run_killed_batch(settings: KafkaSettings, works: list[TaskWork], point: str) -> None:
    """Run the batch in a fresh process with `point` armed; it must die by SIGKILL, with its
    JVM and Python workers (found by a marker in their environment) gone soon after."""
    marker = f"crash-test-{uuid.uuid4().hex}"
    env = {**os.environ, failpoints.ENV_POINTS: f"{point},{marker}"}
    args = [settings.bootstrap_servers, settings.group_id, json.dumps([asdict(w) for w in works])]
    done = subprocess.run(
        [sys.executable, "-c", BATCH_IN_A_SUBPROCESS, *args], env=env, capture_output=True, timeout=240
    )
    assert done.returncode == -9, f"not killed at {point}:\n{done.stdout.decode()}\n{done.stderr.decode()[-3000:]}"
    deadline = time.monotonic() + 30
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left == [], f"processes of the killed run still alive: {left}"


def processes_with(marker: str) -> list[str]:
    found = []
    for process in psutil.process_iter(["pid", "name"]):
        try:
            if marker in process.environ().get(failpoints.ENV_POINTS, ""):
                found.append(f"{process.info['pid']} {process.info['name']}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def run_once(
    pipeline: Pipeline, failpoint: str | None, expected: int | None = None, *, path: str | None = None,
    env: dict[str, str] | None = None,
) -> str:
    """`reconciler run DIR --once` in a subprocess; with `failpoint`, it must die by SIGKILL there;
    without, exit `expected` (0 by default: 1 when an instance is to fail). `path`: a directory
    put first on its PYTHONPATH (plugins outside the package); `env`: more variables."""
    settings = pipeline.settings
    command = [sys.executable, "-m", "reconciler.cli.main", "run", str(pipeline.dir), "--once"]
    command += ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
    command += ["--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=768m"]
    extra = {**(env or {}), **({"RECONCILER_FAILPOINTS": failpoint} if failpoint else {})}
    if path is not None:
        extra["PYTHONPATH"] = os.pathsep.join(filter(None, [path, os.environ.get("PYTHONPATH")]))
    env = child_env(**extra)
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,  # its JVM and workers share the session: found and reaped below
    )
    try:
        output, _ = process.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        reap_session(process)
    if expected is None:
        expected = -signal.SIGKILL if failpoint else 0
    assert process.returncode == expected, f"exit {process.returncode}, expected {expected}:\n{output}"
    return output


def reap_session(process: subprocess.Popen[str]) -> None:
    """Kill what is left of the run's session (a killed driver's JVM exits by itself, but a
    test must not depend on it), then wait for it."""
    if process.poll() is None:
        process.kill()
        process.wait()
    leftovers = []
    for proc in psutil.process_iter():
        try:
            if proc.pid != os.getpid() and os.getsid(proc.pid) == process.pid:
                leftovers.append(proc)
        except (OSError, psutil.Error):
            continue
    for proc in leftovers:
        proc.kill()
    psutil.wait_procs(leftovers, timeout=30)
