"""The test S3 server (reconciler.devtools.s3): S3's HTTP API for pyarrow and boto3, path-style,
conditional writes refused with 412, the standard AWS variables, stopped by PID."""

from __future__ import annotations

import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from pyarrow import fs

from reconciler.devtools.s3 import RunningS3, S3StartError, start_s3


def _client(server: RunningS3) -> Any:
    return boto3.client("s3", endpoint_url=server.endpoint, region_name=server.region,
                        aws_access_key_id=server.access_key_id, aws_secret_access_key=server.secret_access_key)


@pytest.fixture
def prefix() -> str:
    """A prefix of the session's bucket of the test's own."""
    return f"t-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def aws_env(s3_server: RunningS3, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for key, value in s3_server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    yield


def test_pyarrow_writes_lists_and_reads_objects(s3_server: RunningS3, prefix: str) -> None:
    store = fs.S3FileSystem(access_key=s3_server.access_key_id, secret_key=s3_server.secret_access_key,
                            region=s3_server.region, endpoint_override=s3_server.endpoint)
    table = pa.table({"offset": [0, 1, 2], "value": [b"a", b"b", b"c"]})
    pq.write_table(table, f"{s3_server.bucket}/{prefix}/part-0.parquet", filesystem=store)
    with store.open_output_stream(f"{s3_server.bucket}/{prefix}/notes.txt") as out:
        out.write(b"hello")
    listed = store.get_file_info(fs.FileSelector(f"{s3_server.bucket}/{prefix}", recursive=True))
    assert sorted(info.base_name for info in listed) == ["notes.txt", "part-0.parquet"]
    assert pq.read_table(f"{s3_server.bucket}/{prefix}/part-0.parquet", filesystem=store).equals(table)


@pytest.mark.usefixtures("aws_env")
def test_the_standard_aws_variables_are_enough(s3_server: RunningS3, prefix: str) -> None:
    """No endpoint or key in code: AWS_ENDPOINT_URL and the credential variables reach both SDKs."""
    boto3.client("s3").put_object(Bucket=s3_server.bucket, Key=f"{prefix}/from-boto3", Body=b"1")
    store, path = fs.FileSystem.from_uri(s3_server.uri(prefix))
    assert [info.base_name for info in store.get_file_info(fs.FileSelector(path))] == ["from-boto3"]


def test_a_conditional_put_of_an_existing_key_is_refused(s3_server: RunningS3, prefix: str) -> None:
    s3 = _client(s3_server)
    key = f"{prefix}/batch-00000000000000000000.parquet"
    s3.put_object(Bucket=s3_server.bucket, Key=key, Body=b"first", IfNoneMatch="*")
    with pytest.raises(ClientError) as refused:
        s3.put_object(Bucket=s3_server.bucket, Key=key, Body=b"zombie", IfNoneMatch="*")
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    body = s3.get_object(Bucket=s3_server.bucket, Key=key)["Body"].read()
    assert body == b"first"


def test_a_conditional_multipart_upload_of_an_existing_key_is_refused(s3_server: RunningS3, prefix: str) -> None:
    """Large files go up in parts; the condition is checked when the upload completes."""
    s3 = _client(s3_server)
    key = f"{prefix}/big"
    s3.put_object(Bucket=s3_server.bucket, Key=key, Body=b"first")
    upload = s3.create_multipart_upload(Bucket=s3_server.bucket, Key=key)["UploadId"]
    part = s3.upload_part(Bucket=s3_server.bucket, Key=key, UploadId=upload,
                          PartNumber=1, Body=b"zombie")
    with pytest.raises(ClientError) as refused:
        s3.complete_multipart_upload(
            Bucket=s3_server.bucket, Key=key, UploadId=upload, IfNoneMatch="*",
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": part["ETag"]}]})
    assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 412
    assert s3.get_object(Bucket=s3_server.bucket, Key=key)["Body"].read() == b"first"


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    with start_s3(tmp_path, bucket="own-bucket") as server:
        assert server.alive()
        assert server.log_path.parent == tmp_path
        names = [bucket["Name"] for bucket in _client(server).list_buckets()["Buckets"]]
        assert names == ["own-bucket"]
    assert not server.alive()
    with pytest.raises(EndpointConnectionError):
        _client(server).list_buckets()
    server.stop()  # idempotent


def test_a_taken_port_is_a_clear_error(s3_server: RunningS3) -> None:
    with pytest.raises(S3StartError) as excinfo:
        start_s3(port=s3_server.port)
    assert excinfo.value.message == f"port {s3_server.port} on 127.0.0.1 is already in use"


def test_module_prints_endpoint_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler.devtools.s3", "--log-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().strip()
        assert endpoint.startswith("http://127.0.0.1:")
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                              aws_access_key_id="any", aws_secret_access_key="any")
        assert [bucket["Name"] for bucket in client.list_buckets()["Buckets"]] == ["reconciler"]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert f"AWS_ENDPOINT_URL={endpoint}" in err
