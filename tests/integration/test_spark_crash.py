"""Crash tests: a batch SIGKILLed at a failpoint, then a fresh batch; the output holds exactly
the input (ids compared: none lost, none twice) and the killed run leaves no process behind.

Each test starts its own Spark in a subprocess (the failpoint kills the driver), so there are
few of them: one per crash point kind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

import psutil
import pytest

from reconciler.kafka.io.admin import ensure_topics
from reconciler.kafka.io.consume import end_offsets
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler import failpoints
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.tasks import TaskWork

from test_spark_runtime import create_topic, datagen_works, dataset_rows, produce_ids, sink_works, topic_ids

pytestmark = pytest.mark.spark

BATCH_IN_A_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    from reconciler.kafka.settings import KafkaSettings, Topics
    from reconciler.runtime.executor import SparkExecutor
    from reconciler.runtime.tasks import TaskWork
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


def test_sink_killed_after_its_files_before_the_group_commit_writes_nothing_twice(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    create_topic(kafka_settings, "payments", partitions=2)
    produce_ids(kafka_settings, "payments", range(2000))
    # Several files per partition, so a restart meets a mix of finished files and new ranges.
    works = sink_works("vault", "parquet-sink", 2, topics="payments", path=str(tmp_path), **{"flush.records": "300"})

    run_killed_batch(kafka_settings, works, failpoints.SINK_AFTER_FILES)

    assert dataset_rows(tmp_path), "the killed batch wrote no file: the failpoint came too early"
    assert sink_group_offsets(kafka_settings, "connect-vault") == {}  # files first, commit never came
    outcomes = spark_executor.run_batch(works)

    assert [o.error for o in outcomes] == [None, None]
    assert Counter(int(r["key"]) for r in dataset_rows(tmp_path)) == Counter(range(2000))
    ends = {("payments", p): end for p, end in end_offsets(kafka_settings, "payments").items()}
    assert sink_group_offsets(kafka_settings, "connect-vault") == ends


def test_source_killed_before_its_commit_produces_each_record_once(
    kafka: Any, kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    ensure_topics(kafka_settings)
    create_topic(kafka_settings, "events", partitions=2)
    works = datagen_works("events-gen", "events", count=3000, tasks=1)

    run_killed_batch(kafka_settings, works, failpoints.SOURCE_BEFORE_COMMIT)
    outcomes = spark_executor.run_batch(works)

    assert [o.error for o in outcomes] == [None]
    assert topic_ids(kafka_settings, "events") == Counter(range(3000))
    # The new producer's init_transactions aborted the killed run's transaction, records and
    # offsets alike, so the retry produced everything again — once.
    assert outcomes[0].records == 3000
