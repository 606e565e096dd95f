"""`reconciler drift` against the real broker: in sync after apply (0), drift after someone
changes a connector behind the manifests' back (2, the plan says how to undo it), and an
orphan once a manifest is removed (2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.kafka.settings import KafkaSettings

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "prune"


def reconciler(settings: KafkaSettings, *args: str) -> int:
    return main([*args, "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id])


def test_drift_detection_against_the_broker(
    kafka_settings: KafkaSettings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    declared = EXAMPLES / "1-two-connectors"
    assert reconciler(kafka_settings, "apply", str(declared)) == 0
    capsys.readouterr()
    assert reconciler(kafka_settings, "drift", str(declared)) == 0
    assert "No drift" in capsys.readouterr().out

    behind_our_back = tmp_path / "paused"
    behind_our_back.mkdir()
    text = (declared / "connectors.yaml").read_text()
    (behind_our_back / "connectors.yaml").write_text(text.replace("state: running", "state: paused", 1))
    assert reconciler(kafka_settings, "apply", str(behind_our_back)) == 0
    capsys.readouterr()
    assert reconciler(kafka_settings, "drift", str(declared), "--format", "json") == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["drift"] is True and [a["kind"] for a in doc["plan"]["actions"]] == ["resume"]

    assert reconciler(kafka_settings, "apply", str(declared)) == 0
    capsys.readouterr()
    assert reconciler(kafka_settings, "drift", str(EXAMPLES / "2-one-removed")) == 2
    assert "Drift: 0 change(s) to apply, 1 orphaned connector(s)." in capsys.readouterr().out
