"""Spark fixtures: ONE real local SparkSession for the whole test session; and the real stores
(`postgres`, `s3_server`, `gcs_server`, `azurite`, `azurite_entra`, `hdfs`), each started once
per session by the first test that asks.

Starting Spark costs seconds (6–10 s on a 2-core machine), so every test that runs tasks
shares `spark_session`; `spark_executor` is a cheap per-test `SparkExecutor` bound to the
test's own group (`kafka_settings`) that joins that session and never stops it.

`plugins/` (a connector outside the package, `unpackaged:PickySink`) and `examples/plugin/`
(`tally:CounterSource`, `tally:LinesSink`) are put on `sys.path` here,
at import time, so that they are on the driver's path before any session starts: a local
master hands the driver's import path to its Python workers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from azure_support import EntraAzurite
from reconciler.devtools.azurite import RunningAzurite, start_azurite
from reconciler.devtools.entra import IdentityEndpoint, make_tls
from reconciler.devtools.gcs import RunningGcs, start_gcs
from reconciler.devtools.hdfs import RunningHdfs, start_hdfs
from reconciler.devtools.postgres import RunningPostgres, start_postgres
from reconciler.devtools.s3 import RunningS3, start_s3
from reconciler.kafka.settings import KafkaSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from reconciler.devtools.spark_cluster import RunningCluster, RunningConnectServer

    from reconciler.runtime.executor import SparkExecutor

PLUGINS_DIR = Path(__file__).resolve().parent / "plugins"
# examples/plugin's `tally` module, as its README's `PYTHONPATH` puts it (test_example_plugin.py).
EXAMPLE_PLUGIN_DIR = Path(__file__).resolve().parents[2] / "examples" / "plugin"
for directory in (PLUGINS_DIR, EXAMPLE_PLUGIN_DIR):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))

TEST_MASTER = "local[2]"
TEST_LOGS = Path(__file__).resolve().parents[2] / ".test-logs"  # as tests/conftest.py keeps them


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    from reconciler.runtime.spark import cds_build
    from reconciler.runtime.spark.handle import Spark
    from reconciler.runtime.spark.session import active_spark, start_session, warm_up
    from reconciler.runtime.spark.data_source import with_kafka_jars

    cds_build.build()  # once per machine (cached): this session and every `reconciler` child start in half the time
    existing = active_spark()
    # With Spark's Kafka data source, as `reconciler run` starts it: sinks read through it.
    session = existing.session() if existing else start_session(TEST_MASTER, with_kafka_jars({}))
    warm_up(Spark.over(session))
    yield session
    if existing is None:
        session.stop()


@pytest.fixture(scope="session")
def spark(spark_session: SparkSession) -> SparkSession:
    """The same shared session under its shorter, older name."""
    return spark_session


@pytest.fixture
def spark_executor(spark_session: SparkSession, kafka_settings: KafkaSettings) -> Iterator[SparkExecutor]:
    from reconciler.runtime.executor import SparkExecutor

    executor = SparkExecutor(kafka_settings, master=TEST_MASTER)
    yield executor
    executor.close()


@pytest.fixture(params=["spark-kafka", "confluent-kafka"])
def reader_executor(request: pytest.FixtureRequest, spark_session: SparkSession, kafka_settings: KafkaSettings) -> Iterator[SparkExecutor]:
    """An executor for each sink reader: both must start, read and commit the same way."""
    from reconciler.runtime.executor import SparkExecutor

    executor = SparkExecutor(kafka_settings, master=TEST_MASTER, sink_reader=request.param)
    yield executor
    executor.close()


# --- a standalone cluster and a Spark Connect server, one each per test session -------------


@pytest.fixture(scope="session")
def executor_env() -> Path:
    """The executors' packed environment (confluent-kafka, pyarrow, numpy, pydantic, msgspec; no
    reconciler: the driver ships it), built once with venv-pack and cached in ~/.cache."""
    from reconciler.devtools.pack_env import cached_pack

    return cached_pack()


@pytest.fixture(scope="session")
def executor_python(executor_env: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The packed environment unpacked, as a Spark Connect server's workers run it: a Python
    with the dependencies but without this project, so only shipped code can be imported."""
    import tarfile

    target = tmp_path_factory.mktemp("executor-env")
    with tarfile.open(executor_env) as archive:
        archive.extractall(target, filter="tar")
    return str(target / "bin" / "python")


@pytest.fixture(scope="session")
def spark_cluster() -> Iterator[RunningCluster]:
    """A master and two workers (1 core, 1 GiB each), separate processes on loopback."""
    from reconciler.devtools.spark_cluster import start_cluster

    cluster = start_cluster(TEST_LOGS)
    try:
        yield cluster
    finally:
        cluster.kill()  # its applications are over: nothing to shut down cleanly


@pytest.fixture(scope="session")
def spark_connect_server(executor_python: str) -> Iterator[RunningConnectServer]:
    """A Spark Connect server (local[2]) with Spark's Kafka data source on its classpath."""
    from reconciler.devtools.spark_cluster import start_connect_server
    from reconciler.runtime.spark.data_source import kafka_source_jars

    server = start_connect_server(TEST_LOGS, jars=kafka_source_jars() or (), python=executor_python,
                                  conf={"spark.driver.memory": "768m"})
    try:
        yield server
    finally:
        server.kill()


# --- real stores, one each per test session: PostgreSQL, S3-, GCS- and Azure-compatible servers, HDFS


@pytest.fixture(scope="session")
def postgres() -> Iterator[RunningPostgres]:
    """A fresh PostgreSQL cluster (wal_level=logical) on loopback, with database `reconciler`;
    `postgres.dsn` for psycopg, `jdbc_url()` / `user` / `password` for Java, and
    `create_database(name)` for a test that needs its own."""
    server = start_postgres(TEST_LOGS)
    try:
        yield server
    finally:
        server.kill()  # a fast shutdown's checkpoint is for data nobody reads again
        server.stop()  # only removes its directory now


@pytest.fixture(scope="session")
def s3_server() -> Iterator[RunningS3]:
    """An S3-compatible server (moto) on loopback with bucket `reconciler`; `s3_server.env()`
    gives the AWS_* variables that point SDKs at it."""
    server = start_s3(TEST_LOGS)
    try:
        yield server
    finally:
        server.kill()  # its objects are dropped anyway: SIGTERM waits out werkzeug's 0.5 s poll


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[RunningGcs]:
    """A Google Cloud Storage server (fake-gcs-server) on loopback with bucket `reconciler`;
    `gcs_server.keys()` are the connector keys that reach it."""
    server = start_gcs(TEST_LOGS)
    try:
        yield server
    finally:
        server.kill()  # objects in memory: nothing to flush


@pytest.fixture(scope="session")
def azurite() -> Iterator[RunningAzurite]:
    """Azure Blob Storage (Azurite, installed by npm from the pinned lock file on first use) on
    loopback with account and container `reconciler`; `azurite.keys()` reach it."""
    server = start_azurite(TEST_LOGS)
    try:
        yield server
    finally:
        server.kill()  # objects in memory: nothing to flush


@pytest.fixture(scope="session")
def hdfs() -> Iterator[RunningHdfs]:
    """A real HDFS (Hadoop's MiniDFSCluster: a NameNode and a DataNode, jars from Maven Central)
    on loopback; `hdfs.uri(path)` names a directory in it."""
    server = start_hdfs(TEST_LOGS)
    try:
        yield server
    finally:
        server.kill()  # its files are dropped anyway (a fresh, formatted cluster each session)


@pytest.fixture(scope="session")
def azurite_entra_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EntraAzurite]:
    """A second Azurite, over HTTPS (a throwaway CA) and taking bearer tokens, beside App
    Service's managed identity endpoint (a thread of this process) that gives them out."""
    with IdentityEndpoint() as identity:
        server = start_azurite(TEST_LOGS, tls=make_tls(tmp_path_factory.mktemp("azurite-tls")))
        try:
            yield EntraAzurite(server=server, identity=identity)
        finally:
            server.kill()  # objects in memory: nothing to flush


@pytest.fixture
def azurite_entra(azurite_entra_server: EntraAzurite, monkeypatch: pytest.MonkeyPatch) -> EntraAzurite:
    """`azurite_entra_server`, reached from this process through DefaultAzureCredential (its
    variables set for the test) with a token cache of the test's own."""
    from reconciler.connectors.storage import upload

    for name, value in azurite_entra_server.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(upload, "AZURE_TOKENS", upload.AzureTokens())
    return azurite_entra_server
