"""Helpers for the tests of the file connectors on S3 (no tests here): the connector keys that
point at the test server, and readers of what the sinks left there, through the store's own
clients (boto3 for objects, pyarrow's S3 filesystem for Parquet)."""

from __future__ import annotations

from collections import Counter

import boto3
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from reconciler.devtools.s3 import RunningS3


def s3_keys(server: RunningS3) -> dict[str, str]:
    """The per-connector keys (not the AWS chain) that reach the test server."""
    return {"s3.endpoint": server.endpoint, "s3.region": server.region, "s3.path.style.access": "true",
            "s3.access.key.id": server.access_key_id, "s3.secret.access.key": server.secret_access_key}


def client(server: RunningS3):  # type: ignore[no-untyped-def]
    return boto3.client("s3", endpoint_url=server.endpoint, region_name=server.region,
                        aws_access_key_id=server.access_key_id, aws_secret_access_key=server.secret_access_key)


def objects(server: RunningS3, prefix: str) -> dict[str, bytes]:
    """Every object under `prefix` (relative key → content)."""
    s3, found = client(server), {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=server.bucket, Prefix=prefix.rstrip("/") + "/"):
        for item in page.get("Contents", []):
            body = s3.get_object(Bucket=server.bucket, Key=item["Key"])["Body"].read()
            found[item["Key"][len(prefix.rstrip("/")) + 1:]] = body
    return found


def in_dataset(relative: str) -> bool:
    """Part of what readers see: not moved aside (`_superseded/`) nor hidden."""
    return not any(part[0] in "._" for part in relative.split("/"))


def s3_parquet_keys(server: RunningS3, prefix: str) -> Counter[bytes]:
    """How many times each key is in a parquet-sink dataset on S3, read by pyarrow."""
    fs = pafs.S3FileSystem(endpoint_override=server.endpoint, scheme="http", region=server.region,
                           access_key=server.access_key_id, secret_key=server.secret_access_key)
    keys: Counter[bytes] = Counter()
    selector = pafs.FileSelector(f"{server.bucket}/{prefix}", recursive=True, allow_not_found=True)
    for info in fs.get_file_info(selector):
        relative = info.path[len(f"{server.bucket}/{prefix}/"):]
        if info.is_file and relative.endswith(".parquet") and in_dataset(relative):
            keys.update(pq.read_table(info.path, columns=["key"], filesystem=fs).column("key").to_pylist())
    return keys


def s3_text_lines(server: RunningS3, prefix: str) -> Counter[bytes]:
    """How many times each line is in a file-sink's text files on S3, read by boto3."""
    lines: Counter[bytes] = Counter()
    for relative, body in objects(server, prefix).items():
        if relative.endswith(".txt") and in_dataset(relative):
            lines.update(body.splitlines())
    return lines
