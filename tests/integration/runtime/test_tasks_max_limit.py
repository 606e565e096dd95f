"""A connector at the runtime's limit of tasks (`checks.MAX_TASKS`) runs: its task configs,
statuses and `batch/<name>` record are records Kafka accepts (100,000 tasks made a batch
record too large for the broker at every batch, issue 27). Measured figures: checks.MAX_TASKS."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reconciler.connectors.checks import MAX_TASKS
from run_support import Pipeline, pipeline

__all__ = ["pipeline"]  # the fixture

pytestmark = pytest.mark.spark


def test_a_file_sink_with_the_most_tasks_the_runtime_serves_runs_a_batch(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("in", 1)
    pipeline.connector("big", "file-sink", {"topics": topic, "path": str(tmp_path / "out")}, tasks_max=MAX_TASKS)
    started = time.monotonic()
    report = pipeline.tick()
    elapsed = time.monotonic() - started
    (connector,) = report.connectors
    assert connector.state.value == "RUNNING" and len(connector.tasks) == MAX_TASKS
    assert pipeline.state("big").task_count == MAX_TASKS
    assert elapsed < 120, f"a tick of {MAX_TASKS} tasks took {elapsed:.0f} s"
