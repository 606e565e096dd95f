"""The driver-side commit of a table sink (`TableSinkConnector`, `runtime.sink.tables`) under
`reconciler run --once`, through the tiny table sink `plugins/ledger.py` (real broker and Spark):
SIGKILLed with the files written and no table commit, then after the table commit and before the
group commit, the next runs leave the table exactly the topic (0 lost, 0 duplicated), orphan
files unreferenced and the group following the table; a commit fenced by another writer fails
the task and commits nothing to the group."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from crash_support import run_once
from java_read_support import produce_raw
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything, topic_keys

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
LEDGER = "ledger:LedgerSink"


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path, spark_session: SparkSession) -> Iterator[Pipeline]:
    """Each run that is killed, or whose output is under test, is a `reconciler run --once`
    subprocess; the runs after the kills are ticks in this process (`Pipeline.converge`), on the
    session's SparkSession, whose workers find the ledger plugin on the path conftest gave them."""
    made = Pipeline(kafka_settings, tmp_path)
    try:
        yield made
    finally:
        made.worker.close()


def table_keys(path: Path) -> Counter[bytes]:
    """The keys of the rows the ledger's log references (what its readers see)."""
    from ledger import referenced_files

    keys: Counter[bytes] = Counter()
    for file in referenced_files(path):
        keys.update(pa.ipc.open_file(str(file)).read_all().column("key").to_pylist())
    return keys


def test_killed_before_and_after_the_table_commit_the_table_converges_to_the_topic(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    from ledger import held_offsets, log_entries, referenced_files

    topic = pipeline.topic("ledger", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, b"v") for i in range(2000)])
    table = tmp_path / "table"
    pipeline.connector("ledger", LEDGER, {"topics": topic, "path": str(table)}, tasks_max=2)
    group = "connect-ledger"

    run_once(pipeline, "sink.after_files", path=str(PLUGINS))  # files written, no table commit
    orphans = list((table / "data").glob("*.arrow"))
    assert orphans and log_entries(table) == []
    run_once(pipeline, "sink.after_table_commit", path=str(PLUGINS))  # the table holds it, the group does not
    assert len(log_entries(table)) == 1 and table_keys(table) == topic_keys(pipeline.settings, topic)
    assert not committed_everything(pipeline.settings, group, topic)

    pipeline.converge()
    assert len(log_entries(table)) == 1  # nothing new to write: the group followed the table
    assert committed_everything(pipeline.settings, group, topic)
    assert not set(orphans) & set(referenced_files(table))  # the killed batch's files stay orphans

    produce_raw(pipeline.settings, topic, [(b"%d" % i, b"v") for i in range(2000, 2500)])
    pipeline.converge()
    keys = table_keys(table)
    assert keys == topic_keys(pipeline.settings, topic) and len(keys) == 2500 and set(keys.values()) == {1}
    assert sum(held_offsets(table).values()) == 2500 and committed_everything(pipeline.settings, group, topic)


def test_a_table_moved_by_another_writer_fences_the_commit_and_fails_the_task(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    from ledger import log_entries

    topic = pipeline.topic("fenced", 1)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, b"v") for i in range(300)])
    table, pause = tmp_path / "table", tmp_path / "pause"
    pause.mkdir()
    pipeline.connector("fenced", LEDGER, {"topics": topic, "path": str(table)})
    outputs: list[str] = []
    run = threading.Thread(target=lambda: outputs.append(run_once(
        pipeline, "sink.after_files", expected=1, path=str(PLUGINS),
        env={"RECONCILER_FAILPOINT_PAUSE_DIR": str(pause)})))
    run.start()
    deadline = time.monotonic() + 180
    while not (pause / "sink.after_files.paused").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (pause / "sink.after_files.paused").exists(), "the batch never paused with its files written"
    # Another writer commits the same partition meanwhile.
    (table / "_log").mkdir(parents=True)
    (table / "_log" / "0.json").write_text(json.dumps({"files": [], "offsets": [[topic, 0, 300]]}))
    (pause / "sink.after_files.resume").touch()
    run.join(timeout=240)
    assert outputs, "the run did not end"

    assert len(log_entries(table)) == 1  # only the other writer's commit
    task = pipeline.state("fenced").task_statuses[0]
    assert task.state.value == "FAILED" and task.trace is not None
    last = task.trace.strip().splitlines()[-1]
    assert f"{topic}[0] is at offset 300 in the table, past 0 where this batch started" in last, task.trace
    assert not committed_everything(pipeline.settings, "connect-fenced", topic)
    assert os.listdir(table / "data")  # the fenced batch's file: written, never referenced
