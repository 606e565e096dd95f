"""Validation before deploy, end to end against the broker: `apply` refuses what the plugin refuses
and writes nothing; a connector of an unknown class that reached the config topic another way
fails with its real error in the tick summary and in `status`, typed `unknown` as Connect does;
client settings from RECONCILER_* variables and Java names reach the broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.io.store import prepare, read_live_state
from reconciler.kafka.settings import KafkaSettings

BAD = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: fine
spec:
  class: datagen
  config: {topic: orders, count: 10}
---
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: bad
spec:
  class: datagen
  config:
    topic: orders
    count: lots
"""


def kafka_args(settings: KafkaSettings) -> list[str]:
    return ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]


def test_apply_refuses_a_config_its_plugin_refuses_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    prepare(kafka_settings)
    path = tmp_path / "c.yaml"
    path.write_text(BAD)
    assert main(["apply", str(path), *kafka_args(kafka_settings)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:17:12: spec.config.count: must be an integer; got 'lots'" in err
    assert err.rstrip().endswith("nothing was applied")
    assert read_live_state(kafka_settings).connectors == {}  # not even the valid one


def test_an_unknown_class_in_the_topics_fails_with_its_real_error(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """Written by another tool (no manifest could carry it): the worker reports it FAILED, and
    the tick summary and `status` keep the actual error, not only its hint."""
    prepare(kafka_settings)
    props = {"connector.class": "nosuch-connector", "name": "ghost", "tasks.max": "1", "topic": "t"}
    with TransactionalWriter(kafka_settings, transactional_id=f"other-{kafka_settings.group_id}") as writer:
        writer.write([rec.connector_config_record("ghost", props)])
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "other.yaml").write_text(BAD.split("---")[0])
    main(["run", str(manifests), "--once", *kafka_args(kafka_settings)])  # exit code: another issue's business
    out = capsys.readouterr().out
    assert "  ghost: FAILED\n    connector: unknown connector class 'nosuch-connector'; hint: use a registered name" in out

    assert main(["status", *kafka_args(kafka_settings)]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()]
    assert ["ghost", "unknown", "running", "FAILED", "0/0", "-"] in [row[:6] for row in rows]
    assert main(["status", "ghost", *kafka_args(kafka_settings)]) == 0
    assert "note: ghost: FAILED: unknown connector class 'nosuch-connector'; hint:" in capsys.readouterr().out


def test_client_settings_from_variables_and_java_names_reach_the_broker(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The group, the bootstrap address and client settings all from the environment; Java names
    translated (a setting librdkafka did not take would fail the client before any output)."""
    prepare(kafka_settings)
    monkeypatch.setenv("RECONCILER_BOOTSTRAP_SERVERS", kafka_settings.bootstrap_servers)
    monkeypatch.setenv("RECONCILER_GROUP_ID", kafka_settings.group_id)
    monkeypatch.setenv("RECONCILER_KAFKA_CLIENT_ID", "from-env")
    monkeypatch.setenv("RECONCILER_KAFKA_RECEIVE_BUFFER_BYTES", "65536")  # Java's name
    config = tmp_path / "client.properties"
    config.write_text("max.request.size=${env:MAX_REQUEST}\n")  # Java's name, value from the environment
    monkeypatch.setenv("MAX_REQUEST", "2000000")
    assert main(["status", "--kafka-config", str(config)]) == 0
    assert capsys.readouterr().out.strip() == "No connectors."
    monkeypatch.setenv("RECONCILER_KAFKA_SSL_TRUSTSTORE_LOCATION", "/etc/kafka/truststore.jks")
    assert main(["status"]) == 1
    assert "RECONCILER_KAFKA_SSL_TRUSTSTORE_LOCATION: `ssl.truststore.location`" in capsys.readouterr().err
