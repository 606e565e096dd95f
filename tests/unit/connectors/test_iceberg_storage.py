"""iceberg-sink's ADLS and GCS keys: Apache Iceberg's Java names (AzureProperties, GCPProperties)
as pyiceberg's, for the one storage account pyiceberg reaches; what pyiceberg cannot honour is a
problem naming the key, never a secret; and our FileIO's paths and anonymous GCS."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from reconciler.connectors.iceberg.catalog import catalog_problems, one_line
from reconciler.connectors.iceberg.fileio import ReconcilerFileIO
from reconciler.connectors.iceberg.storage import FILE_IO, file_io_properties

HOST = "acct.dfs.core.windows.net"
WAREHOUSE = {"warehouse": f"abfss://lake@{HOST}/wh"}
SHARED = {"adls.auth.shared-key.account.name": "acct", "adls.auth.shared-key.account.key": "S3CRETKEY=="}
TAKEN = {"py-io-impl": FILE_IO, **WAREHOUSE}


def translated(**java: str) -> dict[str, str]:
    props, problem = file_io_properties({**WAREHOUSE, **java})
    assert problem is None, problem
    return props


@pytest.mark.parametrize(("java", "expected"), [
    ({}, {"adls.account-name": "acct"}),  # DefaultAzureCredential for the warehouse's account
    (SHARED, {"adls.account-name": "acct", "adls.account-key": "S3CRETKEY=="}),
    ({f"adls.sas-token.{HOST}": "sv=1&sig=x"}, {"adls.account-name": "acct", "adls.sas-token": "?sv=1&sig=x"}),
    ({**SHARED, f"adls.sas-token.{HOST}": "?sv=1&sig=x"},  # Java: the account's SAS token before the shared key
     {"adls.account-name": "acct", "adls.sas-token": "?sv=1&sig=x"}),
    ({**SHARED, f"adls.connection-string.{HOST}": "http://127.0.0.1:10000/acct"},  # an emulator, path style
     {"adls.account-name": "acct", "adls.account-key": "S3CRETKEY==", "adls.blob-storage-scheme": "http",
      "adls.dfs-storage-scheme": "http", "adls.blob-storage-authority": "127.0.0.1:10000",
      "adls.dfs-storage-authority": "127.0.0.1:10000"}),
    ({f"adls.connection-string.{HOST}": "https://acct.privatelink.dfs.core.windows.net?sv=2&sig=y"},
     {"adls.account-name": "acct", "adls.sas-token": "?sv=2&sig=y", "adls.blob-storage-scheme": "https",
      "adls.dfs-storage-scheme": "https", "adls.blob-storage-authority": ".privatelink.blob.core.windows.net",
      "adls.dfs-storage-authority": ".privatelink.dfs.core.windows.net"}),
])
def test_javas_adls_keys_become_pyicebergs_for_the_warehouses_account(java: dict[str, str],
                                                                      expected: dict[str, str]) -> None:
    assert translated(**java) == {**TAKEN, **expected}


def test_the_account_is_the_one_the_keys_name_when_the_warehouse_is_not_on_adls() -> None:
    props, problem = file_io_properties({"warehouse": "lakehouse", f"adls.sas-token.{HOST}": "sv=1"})
    assert problem is None and props["adls.account-name"] == "acct" and props["adls.sas-token"] == "?sv=1"
    props, _ = file_io_properties({"uri": "http://rest", **SHARED})
    assert props == {"uri": "http://rest", "py-io-impl": FILE_IO, "adls.account-name": "acct",
                     "adls.account-key": "S3CRETKEY=="}


@pytest.mark.parametrize(("java", "key", "words"), [
    ({"adls.auth.shared-key.account.name": "acct"}, "adls.auth.shared-key.account.key", "is required with"),
    ({"adls.auth.shared-key.account.key": "S3CRETKEY=="}, "adls.auth.shared-key.account.name", "is required with"),
    ({f"adls.sas-token.{HOST}": "a", "adls.sas-token.other.dfs.core.windows.net": "b"},
     "adls.sas-token.other.dfs.core.windows.net", "one storage account, the warehouse's (acct.dfs.core.windows.net)"),
    ({"adls.connection-string.other.dfs.core.windows.net": "https://other.dfs.core.windows.net"},
     "adls.connection-string.other.dfs.core.windows.net", "one storage account"),
    ({f"adls.connection-string.{HOST}": "127.0.0.1:10000"}, f"adls.connection-string.{HOST}", "endpoint URL"),
    ({f"adls.connection-string.{HOST}": "http://azurite:10000"}, f"adls.connection-string.{HOST}", "names no account"),
    ({f"adls.connection-string.{HOST}": "http://h:1/acct/lake"}, f"adls.connection-string.{HOST}", "endpoint URL"),
    ({**SHARED, "adls.auth.shared-key.account.name": "elsewhere"}, "adls.auth.shared-key.account.name",
     "names account 'elsewhere', but the warehouse's account is 'acct'"),
    ({"warehouse": f"abfss://{HOST}/wh"}, "warehouse", "must name its container"),
    ({"adls.token": "bearer"}, "adls.token", "takes no bearer token"),
    ({"gcs.encryption-key": "k"}, "gcs.encryption-key", "customer-supplied key"),
    ({"gcs.no-auth": "TRUE", "gcs.oauth2.token": "t"}, "gcs.no-auth", "cannot be true with"),
])
def test_what_pyiceberg_cannot_honour_is_a_problem_naming_the_key(java: dict[str, str], key: str,
                                                                  words: str) -> None:
    config = {"type": "jdbc", "uri": "jdbc:sqlite:/c.db", **WAREHOUSE, **java}
    [problem] = catalog_problems(config)
    assert problem.key == f"iceberg.catalog.{key}" and words in problem.message, problem
    assert "S3CRETKEY" not in problem.message


def test_gcs_keys_keep_their_names_and_a_token_without_expiry_never_expires() -> None:
    java = {"warehouse": "gs://b/wh", "gcs.service.host": "http://127.0.0.1:4443", "gcs.project-id": "p",
            "gcs.no-auth": "true"}
    assert file_io_properties(java) == ({**java, "py-io-impl": FILE_IO}, None)
    props, _ = file_io_properties({"gcs.oauth2.token": "t"})
    assert props["gcs.oauth2.token-expires-at"] == "4102444800000"
    assert file_io_properties({"gcs.oauth2.token": "t", "gcs.oauth2.token-expires-at": "5"})[0][
        "gcs.oauth2.token-expires-at"] == "5"
    assert file_io_properties({"py-io-impl": "pyiceberg.io.fsspec.FsspecFileIO"})[0]["py-io-impl"] == \
        "pyiceberg.io.fsspec.FsspecFileIO"


def test_errors_hide_the_account_key_and_an_endpoints_sas_token() -> None:
    java = {**SHARED, f"adls.connection-string.{HOST}": "https://acct.dfs.core.windows.net?sv=2&sig=SIGNED"}
    text = one_line(OSError("403 for key S3CRETKEY== at https://acct.dfs.core.windows.net?sv=2&sig=SIGNED"), java)
    assert "S3CRETKEY" not in text and "SIGNED" not in text and "https://acct.dfs.core.windows.net" in text


@pytest.mark.parametrize(("location", "path"), [
    (f"abfss://lake@{HOST}/wh/d.parquet", "lake/wh/d.parquet"),
    ("wasbs://lake@acct.blob.core.windows.net/wh/d.parquet", "lake/wh/d.parquet"),
    ("s3://bucket/wh/d.parquet", "bucket/wh/d.parquet"),
    ("gs://bucket/wh/d.parquet", "bucket/wh/d.parquet"),
])
def test_our_fileio_gives_pyarrow_adls_paths_without_the_account(location: str, path: str) -> None:
    assert ReconcilerFileIO.parse_location(location)[2] == path


def test_our_fileio_reaches_gcs_anonymously_with_javas_no_auth() -> None:
    io = ReconcilerFileIO({"gcs.no-auth": "true", "gcs.service.host": "http://127.0.0.1:4443"})
    fs = io.fs_by_scheme("gs", "bucket")
    assert isinstance(fs, pafs.GcsFileSystem) and fs.equals(
        pafs.GcsFileSystem(anonymous=True, scheme="http", endpoint_override="127.0.0.1:4443"))
