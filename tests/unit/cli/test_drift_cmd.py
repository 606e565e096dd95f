"""`reconciler drift` against live-state snapshots: 0 in sync, 2 on changes or orphans, 1 on error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.cli.main import main
from reconciler.core.live import LiveState, dump_snapshot
from reconciler.core.planner import build_plan
from reconciler.kafka.formats.changes import plan_to_records
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.manifests import load_or_raise

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
APPLIED = EXAMPLES / "prune" / "1-two-connectors"  # prune-orders-ingest and prune-orders-archive
ONE_REMOVED = EXAMPLES / "prune" / "2-one-removed"


def applied_snapshot(manifests: Path, out: Path) -> Path:
    """The live state after `apply manifests`, through the same records and state machines."""
    desired = load_or_raise([manifests])
    plan = build_plan(desired, LiveState(), PlanOptions(prune=False, manifest_paths=(str(manifests),)))
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    for offset, record in enumerate(plan_to_records(plan, {d.name: d for d in desired}, LiveState(), now_ms=0)):
        target = {"configs": config, "reconciler": ours}.get(record.topic_role)
        if target is not None:
            target.apply(record.key, record.value, offset)
    out.write_text(dump_snapshot(build_live_state(config, status, ours, "drift")))
    return out


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    return applied_snapshot(APPLIED, tmp_path / "live.json")


def drift(*args: str) -> int:
    return main(["drift", *args])


def test_in_sync_exits_0_and_says_so_once(snapshot: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert drift(str(APPLIED), "--live-state", str(snapshot)) == 0
    assert capsys.readouterr().out == "No drift: the cluster matches the manifests (2 connector(s)).\n"
    assert drift(str(APPLIED), "--live-state", str(snapshot), "--format", "markdown") == 0
    out = capsys.readouterr().out
    assert out == "## Connector reconciler plan\n\n**No drift: the cluster matches the manifests (2 connector(s)).**\n"


def test_a_changed_manifest_is_drift(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    changed = tmp_path / "changed"
    changed.mkdir()
    text = (APPLIED / "connectors.yaml").read_text()
    (changed / "connectors.yaml").write_text(text.replace("state: running", "state: paused", 1))
    assert drift(str(changed), "--live-state", str(snapshot)) == 2
    out = capsys.readouterr().out
    assert "Drift: 1 change(s) to apply, 0 orphaned connector(s)." in out and "paused" in out
    assert "Plan: 0 to create, 0 to update, 0 to delete, 1 state change" in out  # the plan's own summary stays


def test_an_orphan_is_drift_and_prune_plans_its_deletion(snapshot: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert drift(str(ONE_REMOVED), "--live-state", str(snapshot), "--format", "json") == 2
    doc = json.loads(capsys.readouterr().out)
    assert doc["drift"] is True and doc["changes"] == 0 and doc["orphans"] == ["prune-orders-ingest"]
    assert doc["plan"]["actions"] == []
    assert drift(str(ONE_REMOVED), "--live-state", str(snapshot), "--prune", "--format", "markdown") == 2
    out = capsys.readouterr().out
    assert out.startswith("## Connector reconciler plan") and "**Drift: 1 change(s) to apply" in out


def test_errors_exit_1(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: reconciler.io/v1\nkind: Connector\n")
    assert drift(str(broken), "--live-state", str(snapshot)) == 1
    assert capsys.readouterr().err.rstrip().endswith("problem(s) in manifests; drift was not checked")
    assert drift(str(APPLIED), "--live-state", str(tmp_path / "missing.json")) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_a_plan_apply_would_refuse_exits_1_not_drift(snapshot: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--prune` of every connector without `--allow-empty`: `plan` exits 1 (apply refuses it);
    so does drift, which a scheduled workflow would otherwise report as drift to fix."""
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["plan", str(empty), "--live-state", str(snapshot), "--prune"]) == 1
    capsys.readouterr()
    assert drift(str(empty), "--live-state", str(snapshot), "--prune") == 1
    assert "--allow-empty" in capsys.readouterr().out
