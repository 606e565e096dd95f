"""Every example scenario is validated and planned, step after step, so the examples cannot rot.

Each step is planned against the live state the previous steps leave behind: the plan's records
(`plan_to_records`) are replayed through the same state machines that read Connect's topics, so
this walks the real apply path minus the broker. Re-planning a step after applying it must say
"No changes" (idempotence).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.cli.main import main
from reconciler.core.live import LiveState
from reconciler.core.models import DesiredConnector
from reconciler.core.plan import ActionKind, Plan
from reconciler.core.planner import build_plan
from reconciler.kafka.formats.changes import plan_to_records
from reconciler.kafka.formats.records import Record
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state
from reconciler.manifests import load_manifests

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

# scenario → for each step, the action kinds its plan must contain (prune applies with --prune).
BOTH = [ActionKind.CREATE, ActionKind.CREATE]  # a datagen source and the sink archiving its topic
EXPECTED: dict[str, list[list[ActionKind]]] = {
    "quickstart": [BOTH],
    "s3": [BOTH],
    "pause-resume": [BOTH, [ActionKind.PAUSE], [ActionKind.RESUME]],
    "stop": [BOTH, [ActionKind.STOP], [ActionKind.RESUME]],
    "restart": [BOTH, [ActionKind.RESTART]],
    "offsets-rewind": [BOTH, [ActionKind.OFFSETS]],
    "prune": [BOTH, [ActionKind.DELETE]],
    "plugin": [BOTH],  # a source and a sink of its own, named `tally:Class`
    "postgres": [BOTH],  # jdbc-source and jdbc-sink on one database
    "lakehouse": [[ActionKind.CREATE] * 3],  # datagen, delta-sink and iceberg-sink
}
# The plugin example's module is imported from its directory, as its README's PYTHONPATH says.
PLUGIN_DIR = EXAMPLES / "plugin"


def steps(scenario: str) -> list[Path]:
    root = EXAMPLES / scenario
    numbered = sorted(p for p in root.iterdir() if p.is_dir() and p.name[0].isdigit())
    return numbered or [root]


def apply_offline(records: list[Record], history: list[Record]) -> LiveState:
    history.extend(records)
    config, status, ours = ConfigReplay(), StatusReplay(), ReconcilerReplay()
    for offset, record in enumerate(history):
        target = {"configs": config, "reconciler": ours}.get(record.topic_role)
        if target is not None:
            target.apply(record.key, record.value, offset)
    return build_live_state(config, status, ours, "examples")


def plan_step(step: Path, live: LiveState, prune: bool) -> tuple[Plan, dict[str, DesiredConnector]]:
    result = load_manifests([step])
    assert [d.render() for d in result.diagnostics] == []
    desired = {d.name: d for d in result.connectors}
    return build_plan(result.connectors, live, PlanOptions(prune=prune, manifest_paths=(str(step),))), desired


# Not scenarios: the GitOps kit (tests/unit/project/test_gitops_kit.py checks those).
KITS = {"ci", "kubernetes"}


def test_every_scenario_has_expectations() -> None:
    scenarios = {p.name for p in EXAMPLES.iterdir() if p.is_dir()} - KITS
    assert scenarios == set(EXPECTED)
    for scenario, expected in EXPECTED.items():
        assert len(steps(scenario)) == len(expected), scenario
        assert (EXAMPLES / scenario / "README.md").is_file(), scenario


@pytest.mark.parametrize("scenario", sorted(EXPECTED))
def test_scenario_plans_and_converges(scenario: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    live = LiveState()
    history: list[Record] = []
    prune = scenario == "prune"
    for step, expected in zip(steps(scenario), EXPECTED[scenario], strict=True):
        plan, desired = plan_step(step, live, prune)
        assert sorted(a.kind for a in plan.actions) == sorted(expected), step
        records = plan_to_records(plan, desired, live, now_ms=0)
        live = apply_offline(records, history)
        again, _ = plan_step(step, live, prune)
        pending = [a for a in again.actions if a.kind is ActionKind.OFFSETS]
        # Offsets requests stay pending until `run` executes them (never marked done by apply).
        assert [a.kind for a in again.actions] == [a.kind for a in pending], step


@pytest.mark.parametrize("step", [s for name in sorted(EXPECTED) for s in steps(name)], ids=str)
def test_cli_validates_and_plans_every_example(
    step: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    assert main(["validate", str(step)]) == 0
    assert main(["plan", str(step), "--detailed-exitcode"]) == 2  # empty live state: creates
    out = capsys.readouterr().out
    assert "to create" in out
