"""Strimzi `KafkaConnector` resources read as manifests (issue 27, item 10): the fields of
Strimzi's KafkaConnectorSpec, restart annotations as one-shot requests, file:line:col errors
for what is refused, other Strimzi kinds skipped."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.core.diagnostics import Severity
from reconciler.core.models import TargetState
from reconciler.manifests import load_manifests

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


def connector(version: str = "v1", *, annotations: str = "", spec: str = "", name: str = "orders-sink") -> str:
    lines = [f"apiVersion: kafka.strimzi.io/{version}", "kind: KafkaConnector", "metadata:", f"  name: {name}",
             "  namespace: kafka", "  labels:", "    strimzi.io/cluster: my-connect"]
    if annotations:
        lines += ["  annotations:", *textwrap.indent(textwrap.dedent(annotations).strip(), "    ").splitlines()]
    lines += ["spec:", "  class: file-sink", "  tasksMax: 2", "  config:", "    topics: orders", "    path: /tmp/strimzi"]
    if spec:
        lines += textwrap.indent(textwrap.dedent(spec).strip(), "  ").splitlines()
    lines += ["status:", "  conditions: []", "  tasksMax: 2"]
    return "\n".join(lines) + "\n"


def load(tmp_path: Path, *documents: str) -> tuple[Path, object]:
    path = tmp_path / "connectors.yaml"
    path.write_text("---\n".join(documents))
    return path, load_manifests([path], cache=False)


@pytest.mark.parametrize("version", ["v1", "v1beta2"])
def test_a_kafkaconnector_is_a_connector(tmp_path: Path, version: str) -> None:
    spec = "state: stopped\nautoRestart:\n  enabled: true\n  maxRestarts: 3"
    path, result = load(tmp_path, CONNECT, connector(version, spec=spec))
    assert result.ok and [d.severity for d in result.diagnostics] == [Severity.INFO]  # KafkaConnect skipped
    [desired] = result.connectors
    assert (desired.name, desired.spec.connector_class, desired.spec.tasksMax) == ("orders-sink", "file-sink", 2)
    assert desired.spec.config == {"topics": "orders", "path": "/tmp/strimzi"}
    assert desired.spec.state is TargetState.STOPPED and desired.spec.restart is None
    assert desired.spec.autoRestart is not None and desired.spec.autoRestart.maxRestarts == 3
    assert desired.manifest.metadata.labels == {"strimzi.io/cluster": "my-connect"}
    assert str(desired.source) == f"{path}:11:1"


@pytest.mark.parametrize(
    ("pause", "state", "expected"),
    [("true", None, TargetState.PAUSED), ("false", None, TargetState.RUNNING), ("true", "running", TargetState.RUNNING)],
)
def test_v1beta2_pause_with_state_winning(tmp_path: Path, pause: str, state: str | None, expected: TargetState) -> None:
    spec = f"pause: {pause}" + (f"\nstate: {state}" if state else "")
    _, result = load(tmp_path, connector("v1beta2", spec=spec))
    assert result.ok and result.connectors[0].spec.state is expected
    warnings = [d for d in result.diagnostics if d.severity is Severity.WARNING]
    assert len(warnings) == (1 if state else 0)  # Strimzi warns when both are set, and `state` wins


@pytest.mark.parametrize(
    ("annotations", "request_id", "include_tasks", "only_failed"),
    [
        ('strimzi.io/restart: "true"', "strimzi.io/restart=true", False, False),
        ('strimzi.io/restart: "includeTasks,onlyFailed"', "strimzi.io/restart=includeTasks,onlyFailed", True, True),
        ('strimzi.io/restart: "onlyFailed"', "strimzi.io/restart=onlyFailed", False, True),
        ('strimzi.io/restart-task: "1"', "strimzi.io/restart-task=1", True, False),
        ('strimzi.io/restart: "true"\nstrimzi.io/restart-task: "0"', "strimzi.io/restart=true+strimzi.io/restart-task=0",
         True, False),
    ],
)
def test_restart_annotations_are_one_shot_requests(
    tmp_path: Path, annotations: str, request_id: str, include_tasks: bool, only_failed: bool
) -> None:
    _, result = load(tmp_path, connector(annotations=annotations))
    assert result.ok, [d.render() for d in result.diagnostics]
    restart = result.connectors[0].spec.restart
    assert restart is not None
    assert (restart.id, restart.includeTasks, restart.onlyFailed) == (request_id, include_tasks, only_failed)


@pytest.mark.parametrize("value", ['"false"', '""'])
def test_a_restart_annotation_that_asks_for_nothing(tmp_path: Path, value: str) -> None:
    _, result = load(tmp_path, connector(annotations=f"strimzi.io/restart: {value}"))
    assert result.ok and result.connectors[0].spec.restart is None


@pytest.mark.parametrize(
    ("version", "annotations", "spec", "where", "message"),
    [
        ("v1", "", 'version: "3.9.0"', "14:3: spec.version", "is not supported"),
        ("v1", "", "listOffsets:\n  toConfigMap: {name: offsets}", "14:3: spec.listOffsets", "ConfigMap"),
        ("v1", "", "alterOffsets:\n  fromConfigMap: {name: offsets}", "14:3: spec.alterOffsets", "ConfigMap"),
        ("v1", "", "pause: true", "14:3: spec.pause", "not part of kafka.strimzi.io/v1"),
        ("v1", "", "sensitive: [path]", "14:3: spec.sensitive", "not a field of Strimzi's KafkaConnector"),
        ("v1", 'strimzi.io/restart: "yes"', "", '9:25: metadata.annotations["strimzi.io/restart"]', "must be `true`"),
        ("v1", "strimzi.io/restart: true", "", '9:25: metadata.annotations["strimzi.io/restart"]', "are strings"),
        ("v1", 'strimzi.io/restart-task: "2"', "", '9:30: metadata.annotations["strimzi.io/restart-task"]',
         "task 2 does not exist"),
        ("v1", 'strimzi.io/connector-offsets: "list"', "", '9:5: metadata.annotations["strimzi.io/connector-offsets"]',
         "not supported"),
        ("v1", 'strimzi.io/pause-reconciliation: "true"', "",
         '9:5: metadata.annotations["strimzi.io/pause-reconciliation"]', "not supported"),
        ("v1alpha1", "", "", "1:13: apiVersion", "not a KafkaConnector version"),
        ("v1", "", "tasksMax: 0", "13:13: spec.tasksMax", ""),
    ],
)
def test_what_is_refused_is_an_error_at_its_place(
    tmp_path: Path, version: str, annotations: str, spec: str, where: str, message: str
) -> None:
    text = connector(version, annotations=annotations, spec=spec)
    if spec.startswith("tasksMax"):
        text = text.replace("  tasksMax: 2\n", "").replace("status:", f"  {spec}\nstatus:")
    path, result = load(tmp_path, text)
    rendered = [d.render() for d in result.errors]
    assert not result.ok and not result.connectors
    assert any(line.startswith(f"{path}:{where}: ") and message in line for line in rendered), rendered


def test_plan_on_a_directory_of_kafkaconnectors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "connect.yaml").write_text(CONNECT)
    (tmp_path / "a.yaml").write_text(connector(annotations='strimzi.io/restart: "true"', spec="state: paused"))
    (tmp_path / "b.yaml").write_text(connector("v1beta2", name="orders-copy", spec="pause: true"))
    assert main(["plan", "--detailed-exitcode", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert '+ connector "orders-sink" will be created (state: paused, tasks.max: 2, class: file-sink)' in out
    assert '+ connector "orders-copy" will be created (state: paused' in out
    assert "id strimzi.io/restart=true" in out
    assert "Plan: 2 to create" in out


def test_the_pre_commit_file_check_reads_them_too(tmp_path: Path) -> None:
    from reconciler.manifests.schema_check import check_file

    path = tmp_path / "c.yaml"
    path.write_text("---\n".join([CONNECT, connector(spec='version: "1"')]))
    count, found = check_file(str(path))
    assert count == 1 and [d.field_path for d in found] == ["spec.version"]


def test_from_the_cache_or_a_worker_the_same_connector(tmp_path: Path) -> None:
    """Data read back without its YAML nodes (manifest cache, forked worker) is translated too."""
    import yaml

    from reconciler.core.models import SourceRef
    from reconciler.manifests.validate import clean_connector

    text = connector("v1beta2", annotations='strimzi.io/restart-task: "1"', spec="pause: true")
    _, result = load(tmp_path, text)
    source = SourceRef(file="x.yaml", line=1, column=1)
    again = clean_connector(yaml.safe_load(text), source, {})
    assert again is not None and again.manifest == result.connectors[0].manifest
    assert clean_connector(yaml.safe_load(connector(spec='version: "1"')), source, {}) is None
