"""iceberg-sink with its warehouse on Azure (Azurite, `azurite`) and on Google Cloud Storage
(fake-gcs-server, `gcs_server`), configured only with Apache Iceberg's Java keys (ADLSFileIO's
shared key and per-account endpoint; GCSFileIO's service host and no-auth), as a manifest moved
from a Java Connect worker has them: two tasks' ranges written in process, committed by the
driver in one snapshot to an SQLite catalog, then read back by pyiceberg with pyiceberg's own
keys (written here, not translated): every record once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from delta_support import record, run_task
from iceberg_support import ICEBERG_SINK, event, id_counts, read_table, sink_config
from reconciler.connectors.iceberg.connector import IcebergSinkConnector
from reconciler.connectors.iceberg.task import IcebergSinkTask
from reconciler.devtools.azurite import RunningAzurite
from reconciler.devtools.gcs import RunningGcs

pytestmark = pytest.mark.integration
PER_PARTITION = 300


@dataclass(frozen=True)
class Lake:
    java: dict[str, str]  # iceberg.catalog.* as a Java worker's manifest has them
    pyiceberg: dict[str, str]  # the same store in pyiceberg's own names, for the reader


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


@pytest.mark.parametrize("store", ["azure", "gcs"])
def test_java_keys_write_a_table_pyiceberg_reads_with_its_own(store: str, request: pytest.FixtureRequest,
                                                              tmp_path: Path) -> None:
    lake = azure_lake(request.getfixturevalue("azurite")) if store == "azure" \
        else gcs_lake(request.getfixturevalue("gcs_server"))
    catalog = {"iceberg.catalog.type": "jdbc", "iceberg.catalog.uri": f"jdbc:sqlite:{tmp_path / 'catalog.db'}",
               **lake.java}
    cfg = sink_config("orders", catalog, name="ice", **{"connector.class": ICEBERG_SINK})
    assert IcebergSinkConnector().validate(cfg) == []

    written = [run_task(cfg, [record(i, event(i), partition=p) for i in range(p * PER_PARTITION, (p + 1) * PER_PARTITION)],
                        task=IcebergSinkTask()) for p in (0, 1)]
    IcebergSinkConnector().commit(cfg, written)

    table = read_table(catalog, **lake.pyiceberg, warehouse=lake.java["iceberg.catalog.warehouse"])
    assert id_counts(table) == (2 * PER_PARTITION, 2 * PER_PARTITION, {})
