"""`reconciler run --spark-remote sc://…` through a real Spark Connect server.

One server for the session (`spark_connect_server`, started from PySpark's own `spark-submit`
and jars, with Spark's Kafka data source on its classpath). Its Python workers run the packed
executors' environment, which has no reconciler: the driver ships the package and the
`module:Class` plugin as artifacts. Jobs are DataFrame `mapInArrow` jobs (Connect has no RDDs),
and sinks must read through the data source (`--sink-reader spark-kafka` insists on it).
A run attaches to the server session the run before set up, and starts a new one when the
server lost it (released, or the server restarted).
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


def test_source_to_sink_exactly_once_over_two_ticks_through_spark_connect(
    kafka: KafkaUnderTest, spark_connect_server: RunningConnectServer, tmp_path: Path
) -> None:
    pipeline = Pipeline(kafka.settings(f"t-connect-{uuid.uuid4().hex[:8]}"), tmp_path)
    topic = pipeline.topic("orders", partitions=2)
    pipeline.connector("gen", "datagen", {"topic": topic, "count": COUNT, "shards": 4, "record.bytes": 60},
                       tasks_max=2)
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": str(tmp_path / "parquet")}, tasks_max=2)
    pipeline.connector("recorder", "recording:RecordingSink", {"topics": topic, "path": str(tmp_path / "rec")})

    cache = {"XDG_CACHE_HOME": str(tmp_path / "cache")}  # the kept session of this test's runs only
    first = run_once(pipeline, "--spark-remote", spark_connect_server.url, "--sink-reader", "spark-kafka", "-v",
                     env=cache)
    second = run_once(pipeline, "--sink-reader", "spark-kafka", "-v", env={"SPARK_REMOTE": spark_connect_server.url,
                                                                           **cache})

    assert [first.code, second.code] == [0, 0], first.output + second.output
    assert "Traceback" not in first.output + second.output
    # The second run attached to the session the first set up: no upload, no preflight, and its
    # jobs imported the package the first run uploaded (docs/runtime.md#spark-connect).
    assert ", a new session) ready in" in first.output and ", the kept session) ready in" in second.output
    assert topic_keys(pipeline.settings, topic) == ids(COUNT)
    assert parquet_keys(tmp_path / "parquet") == ids(COUNT)
    assert Counter(recorded(tmp_path / "rec").column("key").to_pylist()) == ids(COUNT)
    # `run --once` released what it ran on exit (UNASSIGNED); each connector's last batch succeeded.
    live = read_live_state(pipeline.settings)
    for name in ("gen", "archive", "recorder"):
        assert pipeline.states(name) == ("UNASSIGNED", {task: "UNASSIGNED" for task in pipeline.states(name)[1]})
        assert live.last_batches[name].outcome == "succeeded"


def test_a_spark_connect_session_the_server_lost_is_replaced_by_a_new_one(
    kafka: KafkaUnderTest, spark_connect_server: RunningConnectServer, tmp_path: Path
) -> None:
    """One chain: a new session (shipped, checked) is kept; then released (SESSION_CLOSED, as
    after the server's idle timeout): the next run starts a new one; then the server restarts
    (it creates a new session under the kept id): the next run ships and checks again."""
    pipeline = Pipeline(kafka.settings(f"t-connect-{uuid.uuid4().hex[:8]}"), tmp_path)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}

    def run(step: int) -> str:  # a connector of its own each run, so each run's job moves records
        topic = pipeline.topic(f"t{step}", partitions=1)
        pipeline.connector(f"gen{step}", "datagen", {"topic": topic, "count": 3})
        done = run_once(pipeline, "--spark-remote", spark_connect_server.url, "-vv", env=env)
        assert done.code == 0 and "Traceback" not in done.output, done.output
        assert topic_keys(pipeline.settings, topic) == ids(3)
        return done.output

    first = run(1)
    assert "Spark Connect: shipping" in first and "reusing" not in first
    _release(spark_connect_server.url, _kept_session_id(tmp_path / "cache"))
    second = run(2)
    assert "is gone (" in second and "Spark Connect: shipping" in second
    spark_connect_server.restart()
    third = run(3)
    assert "the server holds a new session under the kept id" in third and "Spark Connect: shipping" in third


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
