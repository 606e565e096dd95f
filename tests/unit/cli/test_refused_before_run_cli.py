"""From the command line: a bad topic name or client setting value is refused before anything
runs, at the manifest key's file:line:col (`validate`) or naming the `-X` setting as written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler import masking
from reconciler.cli.main import main

MANIFESTS = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: lines
spec:
  class: file-source
  config:
    path: /data/in
    topic: "my topic!"
    producer.override.linger.ms: abc
---
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: archive
spec:
  class: parquet-sink
  config:
    topics: orders,..
    path: /data/out
    consumer.override.max.poll.records: -5
"""


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    masking.forget_all()
    yield
    masking.forget_all()


def test_validate_points_at_each_bad_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(MANIFESTS)
    assert main(["validate", str(manifest)]) == 1
    assert capsys.readouterr().err.splitlines() == [
        f"{manifest}:9:12: spec.config.topic: invalid topic name: 'my topic!' contains one or more characters other"
        " than ASCII alphanumerics, '.', '_' and '-'",
        f'{manifest}:10:34: spec.config["producer.override.linger.ms"]: `linger.ms`: Invalid value for configuration'
        " property \"linger.ms\" (librdkafka: queue.buffering.max.ms); got 'abc'",
        f"{manifest}:19:13: spec.config.topics: invalid topic name: '..' is not allowed",
        f'{manifest}:21:41: spec.config["consumer.override.max.poll.records"]: `max.poll.records`: Configuration'
        ' property "max.poll.records" value -5 is outside allowed range 1..2147483647',
        "error: 4 problem(s) in 1 file(s)",
    ]


def test_x_names_the_setting_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["status", "-X", "linger.ms=abc", "--bootstrap-servers", "127.0.0.1:1", "--group-id", "g", "--timeout", "1"]
    assert main(argv) == 1
    assert capsys.readouterr().err.splitlines() == [
        "error: -X: `linger.ms`: Invalid value for configuration property \"linger.ms\""
        " (librdkafka: queue.buffering.max.ms); got 'abc'",
    ]
