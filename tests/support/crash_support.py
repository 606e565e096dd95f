"""Helpers for the crash tests that kill a Spark batch (no tests here): the batch runs in a
fresh process with a failpoint armed; it must die by SIGKILL there, and every process of it —
its JVM, its Python workers — must be gone soon after (the killed run leaves nothing behind).

The whole-CLI crash tests (`reconciler run --once` killed at each point) are in test_crash.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import asdict

import psutil

from reconciler import failpoints
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import TaskWork

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
