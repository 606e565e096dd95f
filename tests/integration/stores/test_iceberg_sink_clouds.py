"""iceberg-sink with its warehouse on an object store: S3 (`s3_server`), Azure (Azurite,
`azurite`) and Google Cloud Storage (fake-gcs-server, `gcs_server`), configured only with Apache
Iceberg's Java keys (S3FileIO's endpoint and keys; ADLSFileIO's shared key and per-account
endpoint; GCSFileIO's service host and no-auth), as a manifest moved from a Java Connect worker
has them. Every table is read back by pyiceberg with pyiceberg's own keys (written here, not
translated): every record once.

- On each store, `reconciler run --once` SIGKILLed at each step of a batch (between two data
  files of a task; data files written, not committed; the table committed, the group not), then
  a run that converges.
- On Azure and GCS, two tasks' ranges written in process and committed by the driver in one
  snapshot: the translation of the keys alone, in a second."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from crash_support import run_once
from delta_support import record, run_task
from iceberg_support import ICEBERG_SINK, event, id_counts, read_table, sink_config, sqlite_catalog
from java_read_support import produce_raw
from reconciler.connectors.iceberg.connector import IcebergSinkConnector
from reconciler.connectors.iceberg.task import IcebergSinkTask
from reconciler.devtools.azurite import RunningAzurite
from reconciler.devtools.gcs import RunningGcs
from reconciler.devtools.s3 import RunningS3
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything

pytestmark = pytest.mark.integration
PER_PARTITION = 300
CHAIN_RECORDS = 2000


@dataclass(frozen=True)
class Lake:
    java: dict[str, str]  # iceberg.catalog.* as a Java worker's manifest has them
    pyiceberg: dict[str, str]  # the same store in pyiceberg's own names, for the reader


def s3_lake(server: RunningS3) -> Lake:
    java = {"iceberg.catalog.warehouse": server.uri(f"lake-{uuid.uuid4().hex[:8]}"),
            "iceberg.catalog.s3.endpoint": server.endpoint, "iceberg.catalog.s3.access-key-id": server.access_key_id,
            "iceberg.catalog.s3.secret-access-key": server.secret_access_key,
            "iceberg.catalog.s3.path-style-access": "true", "iceberg.catalog.client.region": server.region}
    return Lake(java, {"s3.endpoint": server.endpoint, "s3.access-key-id": server.access_key_id,
                       "s3.secret-access-key": server.secret_access_key, "s3.region": server.region})


def azure_lake(azurite: RunningAzurite) -> Lake:
    host = f"{azurite.account}.dfs.core.windows.net"
    java = {"iceberg.catalog.warehouse": azurite.uri(f"lake-{uuid.uuid4().hex[:8]}"),
            "iceberg.catalog.adls.auth.shared-key.account.name": azurite.account,
            "iceberg.catalog.adls.auth.shared-key.account.key": azurite.account_key,
            f"iceberg.catalog.adls.connection-string.{host}": f"{azurite.endpoint}/{azurite.account}"}
    authority = f"{azurite.host}:{azurite.port}"
    # pyiceberg 0.12's own PyArrowFileIO cannot read abfs://container@host/ paths (fileio.py).
    return Lake(java, {"py-io-impl": "reconciler.connectors.iceberg.fileio.ReconcilerFileIO",
                       "adls.account-name": azurite.account, "adls.account-key": azurite.account_key,
                       "adls.blob-storage-authority": authority, "adls.dfs-storage-authority": authority,
                       "adls.blob-storage-scheme": "http", "adls.dfs-storage-scheme": "http"})


def gcs_lake(server: RunningGcs) -> Lake:
    java = {"iceberg.catalog.warehouse": server.uri(f"lake-{uuid.uuid4().hex[:8]}"),
            "iceberg.catalog.gcs.service.host": server.endpoint, "iceberg.catalog.gcs.project-id": "test",
            "iceberg.catalog.gcs.no-auth": "true"}
    # pyiceberg's GCS filesystem is never anonymous: a token the server does not check.
    return Lake(java, {"gcs.service.host": server.endpoint, "gcs.oauth2.token": "unchecked",
                       "gcs.oauth2.token-expires-at": "4102444800000"})


def lake_on(store: str, request: pytest.FixtureRequest) -> Lake:
    if store == "s3":
        return s3_lake(request.getfixturevalue("s3_server"))
    if store == "azure":
        return azure_lake(request.getfixturevalue("azurite"))
    return gcs_lake(request.getfixturevalue("gcs_server"))


@pytest.mark.timeout(900)  # three `reconciler run --once` processes, each starting Spark
@pytest.mark.parametrize("store", ["s3", "azure", "gcs"])
def test_a_warehouse_on_each_object_store_killed_at_each_step_converges_to_the_topic(
        store: str, request: pytest.FixtureRequest, kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    lake = lake_on(store, request)
    pipeline = Pipeline(kafka_settings, tmp_path)
    topic = pipeline.topic("crash", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, event(i)) for i in range(CHAIN_RECORDS)])
    catalog = {**sqlite_catalog(tmp_path), **lake.java}  # the lake's warehouse, not the one on disk
    # Partitioned, so each flush writes several files: `iceberg.mid_files` falls between two.
    pipeline.connector("ice", ICEBERG_SINK, sink_config(topic, catalog, **{"iceberg.tables.default-partition-by": "kind"}),
                       tasks_max=2)

    def table() -> tuple[int, int, dict[int, int]]:
        return id_counts(read_table(catalog, **lake.pyiceberg, warehouse=lake.java["iceberg.catalog.warehouse"]))

    secrets = [value for key, value in lake.java.items() if key.endswith(("secret-access-key", "account.key"))]
    for point in ("iceberg.mid_files", "sink.after_files", "sink.after_table_commit"):
        output = run_once(pipeline, point)
        assert not any(secret in output for secret in secrets), point
        assert not committed_everything(pipeline.settings, "connect-ice", topic), point
    # The table holds the batch once (no stray file of the earlier kills in it); the group does not know.
    assert table()[:2] == (CHAIN_RECORDS, CHAIN_RECORDS)

    pipeline.converge()
    assert table() == (CHAIN_RECORDS, CHAIN_RECORDS, {})
    assert committed_everything(pipeline.settings, "connect-ice", topic)


@pytest.mark.parametrize("store", ["azure", "gcs"])
def test_java_keys_write_a_table_pyiceberg_reads_with_its_own(store: str, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:
    lake = lake_on(store, request)
    catalog = {**sqlite_catalog(tmp_path), **lake.java}  # the lake's warehouse, not the one on disk
    cfg = sink_config("orders", catalog, name="ice", **{"connector.class": ICEBERG_SINK})
    assert IcebergSinkConnector().validate(cfg) == []

    written = [run_task(cfg, [record(i, event(i), partition=p) for i in range(p * PER_PARTITION, (p + 1) * PER_PARTITION)],
                        task=IcebergSinkTask()) for p in (0, 1)]
    IcebergSinkConnector().commit(cfg, written)

    table = read_table(catalog, **lake.pyiceberg, warehouse=lake.java["iceberg.catalog.warehouse"])
    assert id_counts(table) == (2 * PER_PARTITION, 2 * PER_PARTITION, {})
