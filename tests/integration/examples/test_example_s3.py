"""examples/s3 runs as its README says: the project's S3 helper started on the README's port,
the AWS variables exported, two `reconciler run --once` ticks (each its own process, so its
Spark workers get those variables, as a user's would), and the archive read back by pyarrow
from the store. Then the objects are checked with boto3: each of the 20,000 ids once, and
every object named by its offset range."""

from __future__ import annotations

import json
import shutil
import time
from collections import Counter
from pathlib import Path
from typing import Any

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_examples_run import EXAMPLES, Runner, blocks, columns

from reconciler.devtools.process import port_is_free

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EXAMPLE = EXAMPLES / "s3"
PORT = 19876  # the README's
COUNT = 20_000  # pipeline.yaml's


def test_the_s3_example_archives_each_order_once_in_the_store(
    kafka: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert port_is_free(PORT), f"the README's S3 port {PORT} is taken"
    copy = tmp_path / "s3"
    shutil.copytree(EXAMPLE, copy)
    monkeypatch.chdir(copy)
    monkeypatch.setenv("RECONCILER_BOOTSTRAP_SERVERS", kafka.bootstrap)
    runner = Runner(copy, monkeypatch, capsys, cli_in_subprocess=True)
    *scenario, stop = blocks(EXAMPLE / "README.md")
    try:
        for block in scenario:
            outputs = [runner.run(line) for line in block.commands]
            if block.expected is not None:
                assert columns(outputs[-1]) == columns(block.expected), outputs[-1]
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{PORT}", region_name="us-east-1",
                          aws_access_key_id="quickstart", aws_secret_access_key="quickstart-secret")
        names = [o["Key"] for o in s3.list_objects_v2(Bucket="quickstart", Prefix="orders-parquet/")["Contents"]]
        assert names and all(n.endswith(".parquet") and "/topic=s3-orders/partition=" in n for n in names), names
        ids: Counter[int] = Counter()
        for name in names:
            body = s3.get_object(Bucket="quickstart", Key=name)["Body"].read()
            values = pq.read_table(pa.BufferReader(body))
            ids.update(json.loads(v)["id"] for v in values.column("value").to_pylist())
        assert ids == Counter(range(COUNT))
    finally:
        for line in stop.commands:
            runner.run(line)
    deadline = time.monotonic() + 30
    while not port_is_free(PORT) and time.monotonic() < deadline:  # the README's `kill` stopped the store
        time.sleep(0.2)
    assert port_is_free(PORT)
