"""examples/plugin runs as its README says, and moves what it says it moves.

Its README's commands run as every example's do (`test_examples_run.Runner`: `reconciler` lines
in this process, on the session's SparkSession), with `tally` importable from examples/plugin
(tests/integration/conftest.py puts it on the path, as the README's `PYTHONPATH` does). Then
what moved is checked against Kafka and the files: each of the 1,000 numbers once in the topic
and once in the sink's files, the sink's group committed at the files' ends, and the source's
four stripes at their ends in the offsets topic.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from test_examples_run import EXAMPLES, Runner, blocks, columns
from run_support import committed_everything, topic_keys

from reconciler.cli.main import main
from reconciler.kafka.settings import KafkaSettings, Topics

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EXAMPLE = EXAMPLES / "plugin"
GROUP = "plugin-example"  # the README's RECONCILER_GROUP_ID
TOPIC = "plugin-numbers"
COUNT, STRIPES = 1000, 4  # pipeline.yaml's


def test_the_plugin_example_moves_each_number_once(
    kafka: Any,
    spark_session: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    copy = tmp_path / "plugin"
    shutil.copytree(EXAMPLE, copy)
    monkeypatch.chdir(copy)
    monkeypatch.setenv("RECONCILER_BOOTSTRAP_SERVERS", kafka.bootstrap)
    runner = Runner(copy, monkeypatch, capsys)
    for block in blocks(EXAMPLE / "README.md"):
        outputs = [runner.run(line) for line in block.commands]
        if block.expected is not None:
            assert columns(outputs[-1]) == columns(block.expected), outputs[-1]

    numbers = Counter(str(n).encode() for n in range(COUNT))
    settings = KafkaSettings(bootstrap_servers=kafka.bootstrap, group_id=GROUP, topics=Topics.for_group(GROUP))
    assert topic_keys(settings, TOPIC) == numbers, "each number once in the topic"
    files = sorted((copy / "out" / "lines").glob("*/*.txt"))
    lines = Counter(line.encode() for file in files for line in file.read_text().splitlines())
    assert lines == numbers, "each number once in the sink's files"
    assert committed_everything(settings, "connect-plugin-lines", TOPIC), "the group at the files' ends"

    capsys.readouterr()
    assert main(["offsets", "plugin-numbers"]) == 0
    stripes = {o["partition"]["stripe"]: o["offset"]["next"] for o in json.loads(capsys.readouterr().out)["offsets"]}
    assert stripes == dict.fromkeys(range(STRIPES), COUNT // STRIPES), "each stripe at its end"
