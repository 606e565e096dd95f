"""`reconciler run --spark-master spark://…` on a real standalone cluster, and its faults; the
parquet-sink writes to the S3-compatible server (`s3_server`), not to a disk the hosts share.

One cluster for the session (`spark_cluster`: a master and two 1-core workers, separate
processes with their own work directories). The executors run the packed environment
(`executor_env`, venv-pack): confluent-kafka, pyarrow, numpy, pydantic, and no reconciler, so
everything of this project they run was shipped by the driver, and so was the `module:Class`
plugin. docs/clusters.md's recipe ships it through `spark.archives`; the lost-executor test names it
unpacked on the nodes instead (`installed_args`), the other way clusters get it. Each run is a
`reconciler run --once` subprocess: its own driver, application and executors.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.kafka.io.store import read_live_state
from reconciler.devtools.broker import free_port
from reconciler.kafka.io.consume import read_to_end
from recording import recorded
from run_support import Pipeline, child_env, committed_everything, ids, topic_keys
from s3_support import s3_keys, s3_parquet_keys

if TYPE_CHECKING:
    from reconciler.devtools.s3 import RunningS3
    from reconciler.devtools.spark_cluster import RunningCluster
    from tests.conftest import KafkaUnderTest

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[3]
PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
RUN_TIMEOUT_S = 300
COUNT = 600


@dataclass
class Run:
    code: int
    output: str
    seconds: float


def run_once(pipeline: Pipeline, *spark: str, env: dict[str, str] | None = None, timeout_s: float = RUN_TIMEOUT_S) -> Run:
    """`reconciler run DIR --once` as a subprocess, the plugins directory on its path."""
    settings = pipeline.settings
    command = [sys.executable, "-m", "reconciler.cli.main", "run", str(pipeline.dir), "--once",
               "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, *spark]
    started = time.monotonic()
    done = subprocess.run(
        command, cwd=ROOT, env=child_env(PYTHONPATH=str(PLUGINS), **(env or {})), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, timeout=timeout_s,
    )
    return Run(done.returncode, done.stdout, time.monotonic() - started)


def cluster_args(cluster: RunningCluster, executor_env: Path, *extra: str) -> list[str]:
    """docs/clusters.md's recipe: the packed environment as `spark.archives`, its Python for the workers."""
    shipped = [f"spark.archives={executor_env}#environment", "spark.pyspark.python=./environment/bin/python"]
    return _args(cluster, *shipped, *extra)


def installed_args(cluster: RunningCluster, executor_python: str, *extra: str) -> list[str]:
    """The other way a cluster gets the dependencies: installed on every node, named by path.
    For tests about something else than shipping: each application unpacks `spark.archives`
    on each executor, 10-15 s of a cluster run here."""
    return _args(cluster, f"spark.pyspark.python={executor_python}", *extra)


# The executors' JVMs start cold in every application; with the quick C1 JIT only (as our
# driver runs), an application of these tests took 24 s instead of 30 s here (the two
# executors' JIT threads no longer compete with their class loading on 2 cores). For the tests
# only: executors carry the data, and a long batch wants the optimising compiler.
QUICK_EXECUTORS = "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1"


def _args(cluster: RunningCluster, *conf: str) -> list[str]:
    args = ["--spark-master", cluster.master_url, "--spark-timeout", "60"]
    for item in ("spark.executor.memory=512m", "spark.driver.memory=512m", QUICK_EXECUTORS, *conf):
        args += ["--spark-conf", item]
    return args


def task_records_written(pipeline: Pipeline) -> list[str]:
    """Status records and task configs: what a tick writes for its tasks."""
    settings = pipeline.settings
    keys = [(m.key or b"").decode() for m in read_to_end(settings, settings.topics.status)]
    keys += [key for key, _ in pipeline.config_records("task-")] + [key for key, _ in pipeline.config_records("commit-")]
    return keys


def new_pipeline(kafka: KafkaUnderTest, root: Path) -> Pipeline:
    group = f"t-cluster-{uuid.uuid4().hex[:8]}"
    return Pipeline(kafka.settings(group), root)


# --- source -> topic -> sink, two ticks -----------------------------------------------------


@dataclass
class ClusterPipeline:
    pipeline: Pipeline
    topic: str
    runs: list[Run]
    prefix: str  # of the parquet-sink's dataset in the S3 server's bucket


@pytest.fixture(scope="module")
def two_ticks(
    kafka: KafkaUnderTest, spark_cluster: RunningCluster, executor_env: Path, executor_python: str,
    s3_server: RunningS3, tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ClusterPipeline]:
    """datagen -> topic -> parquet-sink (into the S3 server: shared storage, as a cluster of
    several hosts needs) and a shipped plugin sink, plus a plugin the executors cannot load, run
    as two `run --once` ticks on the cluster."""
    root = tmp_path_factory.mktemp("cluster")
    pipeline = new_pipeline(kafka, root)
    topic = pipeline.topic("orders", partitions=2)
    prefix = f"cluster-{uuid.uuid4().hex[:8]}"
    pipeline.connector("gen", "datagen", {"topic": topic, "count": COUNT, "shards": 4, "record.bytes": 60},
                       tasks_max=2)
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": s3_server.uri(prefix),
                                                   **s3_keys(s3_server)}, tasks_max=2)
    pipeline.connector("recorder", "recording:RecordingSink", {"topics": topic, "path": str(root / "recorded")})
    pipeline.connector("broken", "needs_driver_only:Sink", {"topics": topic})
    # `--allow-failed`: "broken" fails its task on purpose; the run still reports it (exit 0).
    # The first tick ships the environment as docs/clusters.md says; the second names it installed
    # on the nodes, the other way a cluster gets it (unpacking the archive again costs 10-15 s).
    runs = [run_once(pipeline, *cluster_args(spark_cluster, executor_env), "--allow-failed"),
            run_once(pipeline, *installed_args(spark_cluster, executor_python), "--allow-failed")]
    yield ClusterPipeline(pipeline, topic, runs, prefix)


def test_two_ticks_on_the_cluster_move_every_record_exactly_once(
    two_ticks: ClusterPipeline, s3_server: RunningS3
) -> None:
    pipeline, runs = two_ticks.pipeline, two_ticks.runs
    assert [r.code for r in runs] == [0, 0], "\n".join(r.output for r in runs)
    # The only trace shown is the one the failing plugin's task reports (one line per task).
    traces = [line for r in runs for line in r.output.splitlines() if "Traceback" in line]
    assert traces and all("needs_driver_only:Sink" in line for line in traces)
    assert topic_keys(pipeline.settings, two_ticks.topic) == ids(COUNT)
    assert s3_parquet_keys(s3_server, two_ticks.prefix) == ids(COUNT)  # read back from the store by pyarrow
    shipped = recorded(pipeline.root / "recorded")  # the module:Class plugin ran on the executors
    assert Counter(shipped.column("key").to_pylist()) == ids(COUNT)
    # `run --once` released what it ran on exit (UNASSIGNED); each connector's last batch succeeded.
    live = read_live_state(pipeline.settings)
    for name in ("gen", "archive", "recorder"):
        assert pipeline.states(name)[0] == "UNASSIGNED"
        assert set(pipeline.states(name)[1].values()) == {"UNASSIGNED"}
        assert live.last_batches[name].outcome == "succeeded"


def test_a_plugin_missing_on_the_executors_fails_its_tasks_with_the_module_named(two_ticks: ClusterPipeline) -> None:
    connector = two_ticks.pipeline.state("broken")
    [task] = connector.task_statuses.values()
    assert task.state.value == "FAILED"
    assert "needs_driver_only:Sink" in (task.trace or "") and "cannot be loaded on Spark executor" in (task.trace or "")
    assert "No module named 'driver_only_helper'" in (task.trace or "")
    assert any("broken: RUNNING; task 0 FAILED" in run.output for run in two_ticks.runs)


# --- faults ---------------------------------------------------------------------------------


def test_an_unreachable_master_fails_fast_naming_it_and_writes_nothing_for_tasks(
    kafka: KafkaUnderTest, tmp_path: Path
) -> None:
    pipeline = new_pipeline(kafka, tmp_path)
    pipeline.connector("gen", "datagen", {"topic": pipeline.topic("t", partitions=1), "count": 10})
    master = f"spark://127.0.0.1:{free_port()}"
    run = run_once(pipeline, "--spark-master", master, "--spark-timeout", "5", timeout_s=120)
    assert run.code == 1 and f"cannot reach the Spark master at {master}" in run.output
    assert "Traceback" not in run.output and run.seconds < 60
    assert task_records_written(pipeline) == []


def test_executors_without_the_tasks_modules_are_named_one_by_one(
    kafka: KafkaUnderTest, spark_cluster: RunningCluster, tmp_path: Path
) -> None:
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    pipeline = new_pipeline(kafka, tmp_path)
    pipeline.connector("gen", "datagen", {"topic": pipeline.topic("t", partitions=1), "count": 10})
    run = run_once(pipeline, *_args(spark_cluster, f"spark.pyspark.python={bare}/bin/python"))
    assert run.code == 1, run.output
    assert "Spark executor(s) cannot import what tasks need" in run.output
    lines = [line for line in run.output.splitlines() if line.strip().startswith("executor ")]
    assert lines and all("confluent_kafka: ModuleNotFoundError" in line for line in lines)
    assert "spark.archives" in run.output and "Traceback" not in run.output
    assert task_records_written(pipeline) == []


def test_an_executor_lost_mid_batch_loses_and_repeats_nothing(
    kafka: KafkaUnderTest, spark_cluster: RunningCluster, executor_python: str, s3_server: RunningS3, tmp_path: Path
) -> None:
    from run_support import create_topic

    pipeline = new_pipeline(kafka, tmp_path)
    topic = pipeline.topic("lost")
    create_topic(pipeline.settings, topic, 2)
    _produce_ids(pipeline, topic, 2000)
    prefix = f"lost-{uuid.uuid4().hex[:8]}"
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": s3_server.uri(prefix),
                                                   "flush.records": 100, **s3_keys(s3_server)}, tasks_max=2)
    pauses = tmp_path / "pauses"
    pauses.mkdir()
    failpoint = ["spark.executorEnv.RECONCILER_FAILPOINTS=sink.mid_write",
                 f"spark.executorEnv.RECONCILER_FAILPOINT_PAUSE_DIR={pauses}"]
    # Through Spark's Kafka data source (its jars shipped to the executors by spark.jars), in
    # Arrow batches of 200 records, so a range is written in several batches: a middle to pause in.
    reader = ["--sink-reader", "spark-kafka"]
    small = "spark.sql.execution.arrow.maxRecordsPerBatch=200"
    first = _run_in_background(pipeline, [*installed_args(spark_cluster, executor_python, small, *failpoint), *reader])
    killed = None
    try:
        marker = _wait_for(pauses / "sink.mid_write.paused", first)
        ancestors = {int(pid) for pid in marker.read_text().split()}
        killed = next(i for i, w in enumerate(spark_cluster.workers) if w.pid in ancestors)
        spark_cluster.kill_worker(killed)  # the paused task's machine is gone, mid-batch
        output, _ = first.communicate(timeout=RUN_TIMEOUT_S)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
        if killed is not None:
            spark_cluster.restart_worker(killed)
    assert first.returncode == 0, output
    assert s3_parquet_keys(s3_server, prefix) == ids(2000)  # 0 rows lost, 0 duplicated, read back from S3
    # ...and the next tick starts after the last record: Connect's group offset of each
    # partition is its last record + 1. (Checked here rather than by running that tick: the
    # parquet-sink trusts its files, so a tick from an offset too low would duplicate nothing.)
    assert committed_everything(pipeline.settings, "connect-archive", topic)


def _produce_ids(pipeline: Pipeline, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": pipeline.settings.bootstrap_servers, "partitioner": "murmur2_random"})
    for i in range(count):
        producer.produce(topic, b"%d" % i, b"%d" % i)
    assert producer.flush(30) == 0


def _run_in_background(pipeline: Pipeline, spark: list[str]) -> subprocess.Popen[str]:
    settings = pipeline.settings
    command = [sys.executable, "-m", "reconciler.cli.main", "run", str(pipeline.dir), "--once",
               "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, *spark]
    return subprocess.Popen(command, cwd=ROOT, env=child_env(PYTHONPATH=str(PLUGINS)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _wait_for(path: Path, process: subprocess.Popen[str], timeout_s: float = 240) -> Path:
    deadline = time.monotonic() + timeout_s
    while not (path.exists() and path.read_text().endswith("\n")):
        if process.poll() is not None:
            raise AssertionError(f"the run ended before pausing:\n{process.communicate()[0]}")
        assert time.monotonic() < deadline, f"no task paused at {path.name} within {timeout_s}s"
        time.sleep(0.2)
    return path

