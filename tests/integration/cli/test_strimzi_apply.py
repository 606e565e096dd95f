"""A directory of Strimzi `KafkaConnector` resources planned and applied on the real broker
(issue 27, item 10): the connectors, their target states and the restart annotation's one-shot
request land in Connect's topics; the next plan has nothing to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.core.live import ConnectTargetState
from reconciler.core.live import RequestKind
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from test_apply import cli

CONNECT = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnect
metadata:
  name: my-connect
  annotations:
    strimzi.io/use-connector-resources: "true"
spec:
  replicas: 1
  bootstrapServers: my-cluster-kafka-bootstrap:9093
"""
GENERATOR = """\
apiVersion: kafka.strimzi.io/v1
kind: KafkaConnector
metadata:
  name: strimzi-orders-gen
  namespace: kafka
  labels:
    strimzi.io/cluster: my-connect
  annotations:
    strimzi.io/restart: "includeTasks,onlyFailed"
spec:
  class: datagen
  tasksMax: 2
  state: running
  autoRestart:
    enabled: true
  config:
    topic: strimzi-orders
    count: 10
"""
PAUSED = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaConnector
metadata:
  name: strimzi-orders-copy
  labels:
    strimzi.io/cluster: my-connect
spec:
  class: datagen
  pause: true
  config:
    topic: strimzi-orders-copy
    count: 10
status:
  conditions:
    - type: Ready
      status: "True"
"""


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    (tmp_path / "connect.yaml").write_text(CONNECT)
    (tmp_path / "connectors.yaml").write_text(GENERATOR + "---\n" + PAUSED)
    return tmp_path


def test_kafkaconnectors_plan_and_apply(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, directory: Path
) -> None:
    code, out, err = cli(capsys, kafka_settings, "plan", str(directory), "--new-group", "--detailed-exitcode")
    assert code == 2, err
    assert '+ connector "strimzi-orders-gen" will be created (state: running, tasks.max: 2, class: datagen)' in out
    assert '+ connector "strimzi-orders-copy" will be created (state: paused, tasks.max: 1, class: datagen)' in out
    assert "skipped a Strimzi `KafkaConnect`" not in out  # an info line of `validate`, not part of the plan

    code, out, err = cli(capsys, kafka_settings, "apply", str(directory))
    assert code == 0, err
    live = read_live_state(kafka_settings)
    generator, copy = live.connectors["strimzi-orders-gen"], live.connectors["strimzi-orders-copy"]
    assert generator.config == {"connector.class": "datagen", "tasks.max": "2", "name": "strimzi-orders-gen",
                                "topic": "strimzi-orders", "count": "10"}
    assert (generator.target_state, copy.target_state) == (ConnectTargetState.STARTED, ConnectTargetState.PAUSED)
    # The annotation's request is recorded as applied: it never runs again while the value stays.
    request = "strimzi.io/restart=includeTasks,onlyFailed"
    assert live.is_applied("strimzi-orders-gen", RequestKind.RESTART, request)

    code, out, err = cli(capsys, kafka_settings, "plan", str(directory), "--detailed-exitcode")
    assert code == 0, out + err
    assert "No changes." in out
