"""An alter request the connector refuses (`validate_offsets`, KIP-875's `alterOffsets` checks)
is an error of `validate`, `plan` and `apply` at the entry's `file:line:col`, beside every other
problem, and nothing is written (docs/plugins.md#offsets-requests)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.connectors.api import ConnectorConfig, OffsetsRefused, TopicPartition
from reconciler.connectors.file_sink import FileSinkConnector
from reconciler.manifests import load_manifests

DATAGEN = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: orders-gen
spec:
  class: datagen
  config: {topic: orders, count: 1000, shards: 4}
  offsets:
    id: rewind-1
    action: alter
    offsets:
      - partition: {shard: 3}
        offset: {position: 10}
      - partition: {kafka_topic: orders, kafka_partition: 0}
        offset: {kafka_offset: 5}
      - partition: {shard: 4}
        offset: {position: 1}
      - partition: {kafka_topic: orders, kafka_partition: 1}
        offset: null
"""
FILES = """\
---
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: events-in
spec:
  class: file-source
  config: {path: /in, topic: events}
  offsets:
    id: rewind-1
    action: alter
    offsets:
      - partition: {filename: /in/a.jsonl}
        offset: {position: 0}
"""
SINK_SHAPED = (
    "the connector refuses this entry: Partition objects should contain the key 'shard' and no other; "
    'got {"kafka_partition": 0, "kafka_topic": "orders"}'
)


def _at(text: str, marker: str) -> tuple[int, int]:
    index = text.index(marker)
    return text.count("\n", 0, index) + 1, index - (text.rfind("\n", 0, index) + 1) + 1


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "connectors.yaml"
    path.write_text(text)
    return path


def test_validate_reports_every_refused_entry_at_its_position(tmp_path: Path) -> None:
    # A reset is not judged: its partitions are the connector's own, known when it runs.
    reset = "---\n" + DATAGEN[: DATAGEN.index("    action: alter")].replace("orders-gen", "gen-2") + "    action: reset\n"
    text = DATAGEN + FILES + reset
    result = load_manifests([_write(tmp_path, text)])
    assert [c.name for c in result.connectors] == ["gen-2"]
    found = sorted((d.source.line, d.source.column, d.field_path, d.summary) for d in result.errors if d.source)
    assert found == [
        (*_at(text, "partition: {kafka_topic: orders, kafka_partition: 0}"), "spec.offsets.offsets[1]", SINK_SHAPED),
        (
            *_at(text, "partition: {shard: 4}"),
            "spec.offsets.offsets[2]",
            "the connector refuses this entry: The value for the 'shard' key in the partition should be between "
            "0 and 3 (the connector's shards is 4); got 4",
        ),
        (
            *_at(text, "partition: {filename: /in/a.jsonl}"),
            "spec.offsets.offsets[0]",
            "the connector refuses this entry: The value for the 'filename' key in the partition should be a "
            "file's path relative to the connector's 'path' (/in), as the tasks name files: no leading '/', "
            'no \'.\' or \'..\' parts, no hidden names; got "/in/a.jsonl"',
        ),
    ]
    # The hint names the connector, so it can be run as it is.
    assert all(d.hint and f"`reconciler offsets {d.connector}`" in d.hint for d in result.errors)


@pytest.mark.parametrize("command", ["validate", "plan", "apply"])
def test_commands_refuse_a_datagen_request_with_sink_partitions_and_write_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    monkeypatch.delenv("RECONCILER_BOOTSTRAP_SERVERS", raising=False)
    path = _write(tmp_path, DATAGEN)
    # apply is pointed at a port nothing listens on: it must refuse before it would connect.
    extra = ["--bootstrap-servers", "127.0.0.1:9"] if command == "apply" else []
    assert main([command, str(path), *extra]) == 1
    out, err = capsys.readouterr()
    line, column = _at(DATAGEN, "partition: {kafka_topic: orders, kafka_partition: 0}")
    assert f"{path}:{line}:{column}: spec.offsets.offsets[1]: {SINK_SHAPED}" in out + err
    if command == "plan":
        assert out == "" and "no plan was made" in err
    if command == "apply":
        assert "nothing was applied" in err


# --- the hook's answers, through plugins of its own ------------------------------------------


class PairSink(FileSinkConnector):
    """Refuses partition 2 of `orders`, and an alter of partitions 0 and 1 together."""

    def validate_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> None:
        if ("orders", 2) in offsets:
            raise OffsetsRefused("partition 2 is not ours")
        if {("orders", 0), ("orders", 1)} <= set(offsets):
            raise OffsetsRefused("partitions 0 and 1 cannot move together")


class BuggySink(FileSinkConnector):
    def validate_offsets(self, config: ConnectorConfig, offsets: Mapping[TopicPartition, int | None]) -> None:
        raise KeyError("oops")


def _sink(class_name: str, partitions: list[int]) -> str:
    entries = "".join(
        f"      - partition: {{kafka_topic: orders, kafka_partition: {p}}}\n        offset: {{kafka_offset: 5}}\n"
        for p in partitions
    )
    return textwrap.dedent(
        f"""\
        apiVersion: reconciler.io/v1
        kind: Connector
        metadata:
          name: orders-out
        spec:
          class: '{class_name}'
          config: {{topics: orders, path: /out}}
          offsets:
            id: rewind-1
            action: alter
            offsets:
        """
    ) + entries


@pytest.mark.parametrize(
    ("class_name", "partitions", "field_path", "message"),
    [
        (f"{__name__}:PairSink", [0, 2], "spec.offsets.offsets[1]", "the connector refuses this entry: partition 2 is not ours"),
        (  # no entry alone is refused: the request as a whole is
            f"{__name__}:PairSink", [1, 0], "spec.offsets.offsets",
            "the connector refuses the request: partitions 0 and 1 cannot move together",
        ),
        (f"{__name__}:BuggySink", [0], "spec.offsets.offsets", "the plugin's validate_offsets() raised KeyError: 'oops'"),
    ],
)
def test_sink_plugins_refusals_and_bugs_are_findings(
    tmp_path: Path, class_name: str, partitions: list[int], field_path: str, message: str
) -> None:
    result = load_manifests([_write(tmp_path, _sink(class_name, partitions))])
    assert [(d.field_path, d.summary) for d in result.errors] == [(field_path, message)]


