"""`reconciler run --spark-remote sc://…` through a real Spark Connect server.

One server for the session (`spark_connect_server`, started from PySpark's own `spark-submit`
and jars, with Spark's Kafka data source on its classpath). Its Python workers run the packed
executors' environment, which has no reconciler: the driver ships the package and the
`module:Class` plugin as artifacts. Jobs are DataFrame `mapInArrow` jobs (Connect has no RDDs),
and sinks must read through the data source (`--sink-reader spark-kafka` insists on it).
A run attaches to the server session the run before set up, and starts a new one when the
server lost it (released, or the server restarted): one chain of four runs shows both.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.kafka.io.store import read_live_state
from reconciler.devtools.broker import free_port
from recording import recorded
from run_support import Pipeline, child_env, ids, parquet_keys, topic_keys
from test_spark_cluster import run_once, task_records_written

if TYPE_CHECKING:
    from reconciler.devtools.spark_cluster import RunningConnectServer
    from tests.conftest import KafkaUnderTest

pytestmark = pytest.mark.spark

COUNT = 600


def test_source_to_sink_exactly_once_through_spark_connect_and_a_session_the_server_lost_is_replaced(
    kafka: KafkaUnderTest, spark_connect_server: RunningConnectServer, tmp_path: Path
) -> None:
    """One chain of `run --once` ticks. 1: a new session (shipped, checked) is kept, datagen
    fills the topic; 2: the kept session is attached to as it was (no upload, no preflight) and
    the sinks move every record; then the session is released (SESSION_CLOSED, as after the
    server's idle timeout): 3 starts a new one; then the server restarts (it creates a new session
    under the kept id): 4 ships and checks again. Each of 3 and 4 adds a datagen of its own, so
    its jobs move records; the sinks' records stay exactly once through all four."""
    pipeline = Pipeline(kafka.settings(f"t-connect-{uuid.uuid4().hex[:8]}"), tmp_path)
    topic = pipeline.topic("orders", partitions=2)
    pipeline.connector("gen", "datagen", {"topic": topic, "count": COUNT, "shards": 4, "record.bytes": 60},
                       tasks_max=2)
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": str(tmp_path / "parquet")}, tasks_max=2)
    pipeline.connector("recorder", "recording:RecordingSink", {"topics": topic, "path": str(tmp_path / "rec")})
    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # the kept session of this test's runs only
    remote = ["--spark-remote", spark_connect_server.url]

    def run(step: int, *target: str, env: dict[str, str] | None = None) -> str:
        own = pipeline.topic(f"t{step}", partitions=1) if step > 2 else None
        if own is not None:  # a connector of its own, so this run's job moves records
            pipeline.connector(f"gen{step}", "datagen", {"topic": own, "count": 3})
        done = run_once(pipeline, *target, "--sink-reader", "spark-kafka", "-vv", env={**cache, **(env or {})})
        assert done.code == 0 and "Traceback" not in done.output, done.output
        assert own is None or topic_keys(pipeline.settings, own) == ids(3)
        return done.output

    first = run(1, *remote)
    assert ", a new session) ready in" in first and "Spark Connect: shipping" in first and "reusing" not in first
    second = run(2, env={"SPARK_REMOTE": spark_connect_server.url})
    # The second run attached to the session the first set up: no upload, no preflight, and its
    # jobs imported the package the first run uploaded (docs/runtime.md#spark-connect).
    assert ", the kept session) ready in" in second and "Spark Connect: shipping" not in second
    _release(spark_connect_server.url, _kept_session_id(tmp_path / "cache"))
    third = run(3, *remote)
    assert "is gone (" in third and "Spark Connect: shipping" in third
    spark_connect_server.restart()
    fourth = run(4, *remote)
    assert "the server holds a new session under the kept id" in fourth and "Spark Connect: shipping" in fourth

    assert topic_keys(pipeline.settings, topic) == ids(COUNT)
    assert parquet_keys(tmp_path / "parquet") == ids(COUNT)
    assert Counter(recorded(tmp_path / "rec").column("key").to_pylist()) == ids(COUNT)
    # `run --once` released what it ran on exit (UNASSIGNED); each connector's last batch succeeded.
    live = read_live_state(pipeline.settings)
    for name in ("gen", "archive", "recorder"):
        assert pipeline.states(name) == ("UNASSIGNED", {task: "UNASSIGNED" for task in pipeline.states(name)[1]})
        assert live.last_batches[name].outcome == "succeeded"


def _kept_session_id(cache: Path) -> str:
    (kept,) = (cache / "connect-reconciler" / "spark-connect").glob("*.json")
    session_id: str = json.loads(kept.read_text())["session_id"]
    return session_id


# In a process of its own: a Connect session made in the tests' process would leave PySpark's
# Connect mode switched on in its environment (SPARK_CONNECT_MODE_ENABLED), and every later
# classic session there, and every `run --once` it starts, would try to reach a server.
RELEASE = """import sys
from pyspark.sql.connect.session import SparkSession
session = SparkSession.builder.remote(sys.argv[1]).create()
session.client.release_session()
session.client.close()
"""


def _release(url: str, session_id: str) -> None:
    """What a session's owner or the server's idle timeout does: the session closes for good."""
    subprocess.run([sys.executable, "-c", RELEASE, f"{url}/;session_id={session_id}"], check=True, timeout=120,
                   env=child_env(), capture_output=True)


def test_a_spark_connect_server_that_is_down_fails_fast_naming_it_and_writes_nothing_for_tasks(
    kafka: KafkaUnderTest, tmp_path: Path
) -> None:
    pipeline = Pipeline(kafka.settings(f"t-connect-{uuid.uuid4().hex[:8]}"), tmp_path)
    pipeline.connector("gen", "datagen", {"topic": pipeline.topic("t", partitions=1), "count": 10})
    url = f"sc://127.0.0.1:{free_port()}"
    run = run_once(pipeline, "--spark-remote", url, "--spark-timeout", "5", timeout_s=120)
    assert run.code == 1 and f"cannot reach the Spark Connect server at {url}" in run.output
    assert "Traceback" not in run.output and run.seconds < 60
    assert task_records_written(pipeline) == []
