"""A safe prune (issue 10, point 4), through the CLI on the real broker.

`--prune` with no manifest at all refuses to delete every owned connector unless
`--allow-empty` (Argo CD's `allowEmpty: false`), and the plan says so; an orphan left by a
deleted manifest without `--prune` is logged at every `run` tick.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from test_apply import cli, manifest, write


def live_names(settings: KafkaSettings) -> list[str]:
    return sorted(name for name, c in read_live_state(settings).connectors.items() if c.exists)


@pytest.fixture
def two_owned(capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path) -> Path:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    write(manifests / "a.yaml", manifest("a", state="paused", topic="t", count="1"))
    write(manifests / "b.yaml", manifest("b", state="paused", topic="t", count="1"))
    assert cli(capsys, kafka_settings, "apply", str(manifests))[0] == 0
    return manifests


def test_prune_of_an_empty_manifest_set_is_refused_unless_allow_empty(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, two_owned: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()  # a ConfigMap swapped for an empty one, an unmounted volume
    refusal = "--prune with no manifests would delete all 2 connector(s) this reconciler created (a, b); refusing"

    code, out, err = cli(capsys, kafka_settings, "plan", str(empty), "--prune")
    assert code == 1
    assert f"! error: {refusal}" in out and "add --allow-empty" in out
    assert out.rstrip().endswith("Plan refused: 1 error (see Diagnostics); `apply` would write nothing.")
    code, out, _ = cli(capsys, kafka_settings, "plan", str(empty), "--prune", "--format", "markdown")
    assert code == 1 and "### Errors (apply refuses this plan)" in out

    code, out, err = cli(capsys, kafka_settings, "apply", str(empty), "--prune")
    assert code == 1 and refusal in err and "nothing was applied" in err
    assert live_names(kafka_settings) == ["a", "b"]

    code, out, _ = cli(capsys, kafka_settings, "plan", str(empty), "--prune", "--allow-empty", "--detailed-exitcode")
    assert code == 2 and 'connector "a" will be deleted' in out and 'connector "b" will be deleted' in out
    code, out, _ = cli(capsys, kafka_settings, "apply", str(empty), "--prune", "--allow-empty")
    assert code == 0 and "Apply complete" in out
    assert live_names(kafka_settings) == []


def test_a_saved_plan_keeps_allow_empty(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, two_owned: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    refused, allowed = tmp_path / "refused.json", tmp_path / "allowed.json"
    assert cli(capsys, kafka_settings, "plan", str(empty), "--prune", "--out", str(refused))[0] == 1
    code, _, err = cli(capsys, kafka_settings, "apply", str(refused), "--allow-empty")
    assert code == 1 and "--allow-empty cannot be added to a saved plan" in err
    assert cli(capsys, kafka_settings, "apply", str(refused))[0] == 1
    assert live_names(kafka_settings) == ["a", "b"]
    assert cli(capsys, kafka_settings, "plan", str(empty), "--prune", "--allow-empty", "--out", str(allowed))[0] == 0
    assert cli(capsys, kafka_settings, "apply", str(allowed))[0] == 0
    assert live_names(kafka_settings) == []


def test_an_orphan_is_logged_at_every_tick(
    capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture, kafka_settings: KafkaSettings, two_owned: Path
) -> None:
    (two_owned / "b.yaml").unlink()  # the manifest is deleted; no --prune
    for tick in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="reconciler"):
            code, _, err = cli(capsys, kafka_settings, "run", str(two_owned), "--once")  # paused: no task runs
        assert code == 0, err
        orphan = [r.getMessage() for r in caplog.records if "orphan" in r.getMessage()]
        assert orphan == [
            "orphan: connector b is in no manifest and is left as it is (this reconciler created it): "
            "declare it again, or delete it with --prune"
        ], f"tick {tick}"
    assert live_names(kafka_settings) == ["a", "b"]
