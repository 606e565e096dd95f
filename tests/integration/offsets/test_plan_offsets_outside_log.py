"""`plan` warns about a sink alter to an offset its partition does not hold, on the real broker.

Connect writes such an alter as given; the task's consumer then resets it by
`auto.offset.reset` (docs/runtime.md#offset-ranges): with Connect's `earliest`, the whole
partition is read again. The reviewer should see that before `apply`, not in a run's log.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.kafka.io import admin
from reconciler.kafka.settings import KafkaSettings


def kafka_args(settings: KafkaSettings) -> list[str]:
    return ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, "--timeout", "20"]


def sink(name: str, topic: str, path: Path, offsets: str = "", policy: str = "") -> str:
    lines = ["apiVersion: reconciler.io/v1", "kind: Connector", f"metadata: {{name: {name}}}", "spec:",
             "  class: parquet-sink", "  state: stopped", "  config:", f"    topics: {topic}", f"    path: {path}"]
    if policy:
        lines.append(f"    consumer.override.auto.offset.reset: {policy}")
    return "\n".join(lines) + "\n" + offsets


def alter(topic: str, *offsets: int) -> str:
    lines = ["  offsets:", "    id: rewind-1", "    action: alter", "    offsets:"]
    for partition, offset in enumerate(offsets):
        lines.append(f"      - partition: {{kafka_topic: {topic}, kafka_partition: {partition}}}")
        lines.append(f"        offset: {{kafka_offset: {offset}}}")
    return "\n".join(lines) + "\n"


def produce(settings: KafkaSettings, topic: str, per_partition: int, partitions: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    for partition in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, b"%d" % i, b"%d" % i, partition=partition)
    assert producer.flush(settings.timeout_s) == 0


@pytest.mark.parametrize(
    ("policy", "consequence"),
    [("", "auto.offset.reset earliest: the whole partition is read again from its log start"),
     ("latest", "auto.offset.reset latest: only records written after the next batch starts are read")],
)
def test_plan_warns_about_each_sink_alter_outside_the_log_and_says_what_the_reset_does(
    kafka_settings: KafkaSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path, policy: str, consequence: str
) -> None:
    topic, name = f"outside-{uuid.uuid4().hex[:8]}", f"outside-sink-{uuid.uuid4().hex[:6]}"
    admin.create_topic(kafka_settings, topic, 2)
    produce(kafka_settings, topic, 30, 2)
    manifest = tmp_path / "sink.yaml"
    manifest.write_text(sink(name, topic, tmp_path / "out", policy=policy))
    assert main(["apply", str(manifest), *kafka_args(kafka_settings)]) == 0
    capsys.readouterr()

    # Partition 0 to 5000 (its log ends at 30), partition 1 to 30 (its end: nothing to read yet).
    manifest.write_text(sink(name, topic, tmp_path / "out", alter(topic, 5000, 30), policy=policy))
    code = main(["plan", str(manifest), *kafka_args(kafka_settings)])
    out = capsys.readouterr().out
    assert code == 0, out
    warnings = [line.strip() for line in out.splitlines() if line.strip().startswith("! warning")]
    assert warnings == [
        f"! warning: {manifest}:1:1: spec.offsets.offsets[0]: offset 5000 for {topic}[0] is past its end (30): "
        f"the task's consumer will reset it ({consequence}) (hint: the log holds offsets 0 to 30 now; "
        f"`reconciler offsets {name}` shows the committed ones)"
    ], out


def test_an_alter_on_a_topic_that_does_not_exist_plans_without_a_warning(
    kafka_settings: KafkaSettings, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    name, topic = f"absent-sink-{uuid.uuid4().hex[:6]}", f"absent-{uuid.uuid4().hex[:8]}"
    manifest = tmp_path / "sink.yaml"
    manifest.write_text(sink(name, topic, tmp_path / "out"))
    assert main(["apply", str(manifest), *kafka_args(kafka_settings)]) == 0
    manifest.write_text(sink(name, topic, tmp_path / "out", alter(topic, 5000)))
    capsys.readouterr()
    assert main(["plan", str(manifest), *kafka_args(kafka_settings)]) == 0
    assert "! warning" not in capsys.readouterr().out
