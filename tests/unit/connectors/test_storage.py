"""The storage layer's pure parts: `path` URIs parsed or refused, the `s3.*` keys as one value
mapped for each library, and `validate` naming a bad `path` at file:line:col; plus the store on
a local disk (the object stores: tests/integration/stores/test_file_sinks_s3.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from reconciler.connectors.file_sink import FileSinkConnector
from reconciler.connectors.storage import BadLocation, Scheme, StoreOptions, open_store, parse_location
from reconciler.connectors.storage.reach import refusal
from reconciler.connectors.storage.store import StorageUnavailable

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("text", "scheme", "root", "bucket"),
    [
        ("/data/out", Scheme.FILE, "/data/out", ""),
        ("relative/dir", Scheme.FILE, "relative/dir", ""),
        ("file:///data/out", Scheme.FILE, "/data/out", ""),
        ("file://localhost/data/out", Scheme.FILE, "/data/out", ""),
        ("s3://bucket", Scheme.S3, "bucket", "bucket"),
        ("s3://my-bucket/a/b/", Scheme.S3, "my-bucket/a/b", "my-bucket"),
        ("s3a://my.bucket/a", Scheme.S3, "my.bucket/a", "my.bucket"),
        ("gs://gcs_bucket/p", Scheme.GS, "gcs_bucket/p", "gcs_bucket"),
        ("abfss://box@account1.dfs.core.windows.net/p", Scheme.ABFS, "box/p", "box"),
        ("hdfs://namenode:8020/data/out/", Scheme.HDFS, "/data/out", ""),
        ("hdfs://NameNode.example/data", Scheme.HDFS, "/data", ""),
        ("hdfs://nameservice1/data", Scheme.HDFS, "/data", ""),
        ("hdfs:///data", Scheme.HDFS, "/data", ""),
    ],
)
def test_paths_and_storage_uris_parse(text: str, scheme: Scheme, root: str, bucket: str) -> None:
    location = parse_location(text)
    assert (location.scheme, location.root, location.bucket) == (scheme, root, bucket)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("s3:bucket/x", "is not a URI: write s3://"),
        ("s3:/bucket/x", "is not a URI: write s3://"),
        ("s3:///x", "names no bucket"),
        ("s3://Bad_Bucket/x", "is not a valid S3 bucket name"),
        ("ftp://host/x", "scheme 'ftp', which is not a supported store"),
        ("http://host/x", "scheme 'http', which is not a supported store"),
        ("file://relative/x", "names host 'relative'"),
        ("file:relative", "is not a URI: write file://"),
        ("file:///", "is not an absolute directory"),
        ("hdfs://namenode:8020", "names no directory"),
        ("hdfs://namenode:8020/", "names no directory"),
        ("hdfs://user@namenode/data", "'user@namenode' is not a namenode"),
        ("abfs://account.blob.core.windows.net/x", "write abfs://container@account"),
        ("s3://bucket/x?versionId=1", "has a query or fragment"),
        ("", "is empty"),
    ],
)
def test_odd_uris_are_refused_with_the_reason(text: str, why: str) -> None:
    with pytest.raises(BadLocation, match=why.replace("?", r"\?")):
        parse_location(text)


def test_the_path_key_is_checked_by_the_connectors_validate() -> None:
    problems = FileSinkConnector().validate({"topics": "t", "path": "s3:bucket"})
    assert [(p.key, p.message) for p in problems] == [("path", "'s3:bucket' is not a URI: write s3://…")]


def test_validate_names_a_bad_path_at_file_line_col(tmp_path: Path) -> None:
    (tmp_path / "sink.yaml").write_text(
        "apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: archive\nspec:\n  class: parquet-sink\n"
        "  config:\n    topics: t\n    path: ftp://host/out\n    s3.endpoint: localhost:9000\n"
    )
    done = subprocess.run([sys.executable, "-m", "reconciler.cli.main", "validate", str(tmp_path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    out = done.stdout + done.stderr
    assert "sink.yaml:9:11: spec.config.path:" in out and "'ftp://host/out' is a URI of scheme 'ftp'" in out, out
    assert "sink.yaml:10:18: spec.config[\"s3.endpoint\"]" in out and "http:// or https:// URL" in out, out


def test_no_key_leaves_the_aws_chain_in_charge() -> None:
    options = StoreOptions.read({})
    assert options.pyarrow_s3_args() == {"force_virtual_addressing": False}
    assert options.botocore_args() == {}
    assert options.object_store_options() == {"AWS_CONDITIONAL_PUT": "etag"}
    assert options.pyiceberg_properties() == {}
    assert options.addressing == "auto"


def test_the_keys_mapped_for_each_library() -> None:
    options = StoreOptions.read({
        "s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1", "s3.path.style.access": "true",
        "s3.access.key.id": "AKIAX", "s3.secret.access.key": "s3cr3t-value",
    })
    assert options.pyarrow_s3_args() == {
        "force_virtual_addressing": False, "endpoint_override": "http://127.0.0.1:9000", "scheme": "http",
        "region": "eu-west-1", "access_key": "AKIAX", "secret_key": "s3cr3t-value"}
    assert options.botocore_args() == {"endpoint_url": "http://127.0.0.1:9000", "region_name": "eu-west-1",
                                       "aws_access_key_id": "AKIAX", "aws_secret_access_key": "s3cr3t-value"}
    assert options.addressing == "path"
    assert options.object_store_options() == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1",
        "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false", "AWS_ACCESS_KEY_ID": "AKIAX",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t-value", "AWS_CONDITIONAL_PUT": "etag"}
    assert options.pyiceberg_properties() == {
        "s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1", "s3.force-virtual-addressing": "false",
        "s3.access-key-id": "AKIAX", "s3.secret-access-key": "s3cr3t-value"}
    assert "s3cr3t-value" not in repr(options) and "s3cr3t-value" not in str(options)


def test_the_gcs_and_azure_keys_mapped_for_pyarrow() -> None:
    assert StoreOptions.read({}).pyarrow_gcs_args({}) == {"anonymous": False}
    assert StoreOptions.read({}).pyarrow_gcs_args({"STORAGE_EMULATOR_HOST": "localhost:4443"}) == {
        "anonymous": False, "scheme": "http", "endpoint_override": "localhost:4443"}
    gcs = StoreOptions.read({"gcs.endpoint": "https://gcs.example:8443/", "gcs.anonymous": "true"})
    assert gcs.pyarrow_gcs_args({}) == {"anonymous": True, "scheme": "https", "endpoint_override": "gcs.example:8443"}
    assert StoreOptions.read({}).pyarrow_azure_args("acct") == {"account_name": "acct"}
    azure = StoreOptions.read({"azblob.endpoint": "http://127.0.0.1:10000", "azblob.account.key": "k3y-value",
                               "azblob.sas.token": "sas-value"})
    assert azure.pyarrow_azure_args("acct") == {
        "account_name": "acct", "blob_storage_scheme": "http", "blob_storage_authority": "127.0.0.1:10000",
        "dfs_storage_scheme": "http", "dfs_storage_authority": "127.0.0.1:10000", "account_key": "k3y-value"}
    sas = StoreOptions.read({"azblob.sas.token": "sas-value"}).pyarrow_azure_args("acct")
    assert sas == {"account_name": "acct", "sas_token": "?sas-value"}  # pyarrow appends it to the URL as is
    assert StoreOptions.read({"azblob.sas.token": "?sas-value"}).pyarrow_azure_args("acct")["sas_token"] == "?sas-value"
    assert "k3y-value" not in repr(azure) and "sas-value" not in repr(azure)
    problems = FileSinkConnector().validate({"topics": "t", "path": "gs://bucket/p", "gcs.endpoint": "localhost:4443"})
    assert [p.key for p in problems] == ["gcs.endpoint"]


def test_the_secret_keys_are_passwords_so_masked() -> None:
    keys = FileSinkConnector.config_def.keys
    assert keys["s3.secret.access.key"].type == "password" and keys["s3.access.key.id"].type == "password"
    assert keys["azblob.account.key"].type == "password" and keys["azblob.sas.token"].type == "password"


def test_a_local_store_writes_whole_files_and_moves_them_aside(tmp_path: Path) -> None:
    store = open_store(str(tmp_path / "out"), {})
    assert store.names("a") == [] and store.walk() == {}
    assert store.write_new("a/one.txt", lambda out: out.write(b"1\n"))
    assert store.names("a") == ["one.txt"] and store.walk() == {"a/one.txt": 2}
    assert store.read("a/one.txt") == b"1\n" and store.read("a/one.txt", 1, 1) == b"\n"
    store.move("a/one.txt", "_superseded/a/one.txt")
    assert store.walk() == {"_superseded/a/one.txt": 2}
    assert open_store(f"file://{tmp_path}/out", {}).walk() == {"_superseded/a/one.txt": 2}


@pytest.mark.parametrize("call", ["walk", "size", "read", "is_dir", "write_new"])
def test_a_gcs_endpoint_that_refuses_connections_fails_at_once_not_after_googles_retries(
    monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    """Whatever the store is asked first."""
    for proxy in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        open_port = listening.getsockname()[1]
        assert refusal(f"http://127.0.0.1:{open_port}", 1.0) is None
    with socket.socket() as closed:  # bound, never listening: the port refuses
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        assert refusal(f"http://127.0.0.1:{port}", 1.0) == f"cannot connect to 127.0.0.1:{port}: Connection refused"
        store = open_store("gs://bucket/p", {"gcs.endpoint": f"http://127.0.0.1:{port}", "gcs.anonymous": "true"})
        with pytest.raises(StorageUnavailable, match=f"GCS endpoint http://127.0.0.1:{port}, bucket bucket: cannot connect"):
            if call == "write_new":
                store.write_new("a", lambda out: out.write(b"x"))
            else:
                getattr(store, call)(*(["a"] if call in ("size", "read") else []))
        assert refusal("minio:9000", 1.0) is None  # no host to name: the SDK's own error says what is wrong
        # through a proxy Google's client (libcurl) connects where this process may not: no refusal of ours
        monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
        assert refusal(f"http://127.0.0.1:{port}", 1.0) is None
