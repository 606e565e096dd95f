"""Bad offsets requests are caught by `reconciler validate`, with Connect's meaning and the exact
`file:line:col` of the offending key or value (acceptance cases B20 sink, B22 source,
docs/state-machine.md#acceptance-cases).

Each case writes one manifest; `at` is the text the diagnostic must point at (its first
occurrence after the `offsets:` key), so a wrong line or column fails the test.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.core import offsets_rules as rules
from reconciler.manifests import load_manifests

SINK_HEAD = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: orders-archive
spec:
  class: parquet-sink
  config: {topics: orders, path: /data}
"""
SOURCE_HEAD = SINK_HEAD.replace("parquet-sink", "file-source").replace("{topics: orders, path: /data}", "{path: /in, topic: t}")

# (case, body under `spec:`, field path, message, text the position points at)
SINK_CASES = [
    # The `offsets` key itself is missing: the diagnostic points at the request.
    ("no offsets list", "offsets: {id: a, action: alter}", "spec.offsets.offsets", rules.ALTER_NEEDS_OFFSETS, "offsets: {id"),
    ("empty list", "offsets: {id: a, action: alter, offsets: []}", "spec.offsets.offsets", rules.ALTER_NEEDS_OFFSETS, "[]"),
    (
        "missing partition",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - offset: {kafka_offset: 1}",
        "spec.offsets.offsets[0].partition",
        rules.SINK_PARTITION_MISSING,
        "offset: {kafka",
    ),
    (
        "null partition",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: null\n      offset: {kafka_offset: 1}",
        "spec.offsets.offsets[0].partition",
        rules.SINK_PARTITION_MISSING,
        "null",
    ),
    (
        "missing keys",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: orders}\n      offset: {kafka_offset: 1}",
        "spec.offsets.offsets[0].partition",
        rules.SINK_PARTITION_KEYS,
        "{kafka_topic: orders}",
    ),
    (
        "null topic",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: null, kafka_partition: 0}\n      offset: null",
        "spec.offsets.offsets[0].partition.kafka_topic",
        rules.SINK_TOPIC_NULL,
        "null, kafka_partition",
    ),
    (
        "non-numeric partition",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: orders, kafka_partition: zero}\n      offset: null",
        "spec.offsets.offsets[0].partition.kafka_partition",
        "Failed to parse the following Kafka partition value in the provided offsets: 'zero'. "
        "Partition values for sink connectors need to be integers.",
        "zero",
    ),
    (
        "offset without kafka_offset",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: orders, kafka_partition: 0}\n      offset: {}",
        "spec.offsets.offsets[0].offset",
        rules.SINK_OFFSET_KEY,
        "{}",
    ),
    (
        "non-numeric offset",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: orders, kafka_partition: 0}\n      offset: {kafka_offset: 12a}",
        "spec.offsets.offsets[0].offset.kafka_offset",
        "Failed to parse the following Kafka offset value in the provided offsets: '12a'. "
        "Offset values for sink connectors need to be integers.",
        "12a",
    ),
]

SOURCE_CASES = [
    ("empty list", "offsets: {id: a, action: alter, offsets: []}", "spec.offsets.offsets", rules.ALTER_NEEDS_OFFSETS, "[]"),
    (
        "partition of the wrong JSON type",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: [a, b]\n      offset: {pos: 1}",
        "spec.offsets.offsets[0].partition",
        "expected a mapping, got a list",
        "[a, b]",
    ),
    (
        "offset of the wrong JSON type",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {file: a}\n      offset: 17",
        "spec.offsets.offsets[0].offset",
        "expected a mapping or null, got an integer",
        "17",
    ),
    (
        "unknown field",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {file: a}\n      offset: {pos: 1}\n      offsets: {pos: 2}",
        "spec.offsets.offsets[0].offsets",
        "unknown field",
        "offsets: {pos: 2}",
    ),
    (
        "nested value",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {file: {name: a}}\n      offset: {pos: 1}",
        "spec.offsets.offsets[0].partition.file",
        "Offsets may only contain primitive types as values, but field file contains MAP",
        "{name: a}",
    ),
    (
        "empty partition",
        "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {}\n      offset: {pos: 1}",
        "spec.offsets.offsets[0].partition",
        rules.SOURCE_PARTITION_EMPTY,
        "{}",
    ),
    (
        "offsets on a reset",
        "offsets:\n  id: a\n  action: reset\n  offsets:\n    - partition: {file: a}\n      offset: null",
        "spec.offsets.offsets",
        rules.RESET_TAKES_NO_OFFSETS,
        "- partition",
    ),
]


def _position(text: str, at: str) -> tuple[int, int]:
    index = text.index(at, text.index("offsets:"))
    line = text.count("\n", 0, index) + 1
    return line, index - (text.rfind("\n", 0, index) + 1) + 1


def _check(tmp_path: Path, head: str, body: str, field_path: str, message: str, at: str) -> None:
    text = head + textwrap.indent(body, "  ") + "\n"
    path = tmp_path / "c.yaml"
    path.write_text(text)
    result = load_manifests([path])
    assert result.connectors == []  # nothing is applied from a bad manifest
    found = [(d.field_path, d.summary, d.source.line, d.source.column) for d in result.errors if d.source]
    assert (found[0][0], found[0][1][: len(message)], *found[0][2:]) == (field_path, message, *_position(text, at))


@pytest.mark.parametrize(("case", "body", "field_path", "message", "at"), SINK_CASES, ids=[c[0] for c in SINK_CASES])
def test_invalid_sink_bodies(tmp_path: Path, case: str, body: str, field_path: str, message: str, at: str) -> None:
    _check(tmp_path, SINK_HEAD, body, field_path, message, at)


@pytest.mark.parametrize(("case", "body", "field_path", "message", "at"), SOURCE_CASES, ids=[c[0] for c in SOURCE_CASES])
def test_invalid_source_bodies(tmp_path: Path, case: str, body: str, field_path: str, message: str, at: str) -> None:
    _check(tmp_path, SOURCE_HEAD, body, field_path, message, at)


def test_validate_prints_file_line_col_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = "offsets:\n  id: a\n  action: alter\n  offsets:\n    - partition: {kafka_topic: orders, kafka_partition: zero}\n      offset: null"
    path = tmp_path / "c.yaml"
    text = SINK_HEAD + textwrap.indent(body, "  ") + "\n"
    path.write_text(text)
    assert main(["validate", str(path)]) == 1
    out, err = capsys.readouterr()
    line, column = _position(text, "zero")
    assert f"{path}:{line}:{column}: spec.offsets.offsets[0].partition.kafka_partition: Failed to parse" in out + err
