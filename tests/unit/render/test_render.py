"""Renderers: text, Markdown and JSON from the same plan; secrets never printed; JSON round-trip."""

from __future__ import annotations

import json
from typing import Any

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.core.live import (
    AppliedRequests,
    ConnectTargetState,
    InstanceState,
    InstanceStatus,
    LiveConnector,
    LiveState,
)
from reconciler.core.models import ConnectorManifest, DesiredConnector, OffsetEntry
from reconciler.core.normalize import connector_properties
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.core.planner import build_plan
from reconciler.errors import ReconcilerError
from reconciler.render import render, render_json, render_markdown, render_text
from reconciler.render.json import load_plan_json

SECRETS = ("NEW-s3cret-value", "OLD-s3cret-value", "CREATE-s3cret", "DELETE-s3cret", "SENSITIVE-url-pw")


def connector(name: str, **spec: Any) -> DesiredConnector:
    spec.setdefault("class", "parquet-sink")
    doc = {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    return DesiredConnector(manifest=ConnectorManifest.model_validate(doc))


def busy_plan(prune: bool = True) -> Plan:
    """One plan with every kind of action, diagnostics and sections, and secrets everywhere."""
    desired = [
        connector("orders-archive", tasksMax=2, state="paused",
                  config={"topics": "orders", "db.password": "CREATE-s3cret"}),
        connector("updated", config={"batch.size": 500, "db.password": "NEW-s3cret-value", "url": "u2"},
                  sensitive=["url"], state="paused", restart={"id": "r1", "includeTasks": True, "onlyFailed": True}),
        connector("rewind", config={"topics": "orders"}, offsets={
            "id": "o1", "action": "alter", "offsets": [
                {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 1200}},
                {"partition": {"kafka_topic": "ordrs", "kafka_partition": 1}, "offset": None},
            ]}),
        connector("done", restart={"id": "r0"}),
    ]
    live = LiveState(
        connectors={
            "updated": LiveConnector(
                name="updated",
                config={"connector.class": "parquet-sink", "batch.size": "100", "db.password": "OLD-s3cret-value",
                        "url": "SENSITIVE-url-pw", "gone": "x"},
                connector_status=InstanceStatus(state=InstanceState.FAILED),
            ),
            "rewind": LiveConnector(name="rewind", config=connector_properties(desired[2]), task_count=1),
            "done": LiveConnector(name="done", config=connector_properties(desired[3])),
            "ours": LiveConnector(name="ours", config={"connector.class": "datagen", "api.token": "DELETE-s3cret"}),
            "theirs": LiveConnector(name="theirs", config={"connector.class": "datagen"},
                                    target_state=ConnectTargetState.PAUSED),
        },
        owned=["ours"],
        applied={"done": AppliedRequests(restart=["r0"])},
    )
    return build_plan(desired, live, PlanOptions(prune=prune, manifest_paths=("manifests/",)))


RENDERERS = {
    "text": lambda plan: render_text(plan),
    "text-colour": lambda plan: render_text(plan, colour=True),
    "markdown": render_markdown,
    "json": render_json,
}


@pytest.mark.parametrize("fmt", RENDERERS)
def test_secret_values_appear_in_no_format(fmt: str) -> None:
    plan = busy_plan()
    kinds = {a.kind for a in plan.actions}
    assert {ActionKind.CREATE, ActionKind.UPDATE_CONFIG, ActionKind.DELETE} <= kinds
    output = RENDERERS[fmt](plan)
    for secret in SECRETS:
        assert secret not in output
    assert "(sensitive" in output


def test_text_plan_reads_like_terraform() -> None:
    text = render_text(busy_plan())
    expected_lines = [
        '  + connector "orders-archive" will be created (state: paused, tasks.max: 2, class: parquet-sink)',
        '      + db.password: (sensitive)',
        '      + topics: "orders"',
        '  ~ connector "updated" config will be updated',
        '      ~ batch.size: "100" -> "500"',
        '      ~ db.password: (sensitive value changed)',
        '      - gone: "x"',
        '      ~ url: (sensitive value changed)',
        '      ~ state: running -> paused',
        '      ~ restart requested (id r1, includeTasks, onlyFailed)',
        '  ~ connector "rewind" offsets will be altered',
        '      ~ offsets request o1 (alter, sink connector):',
        '             {"kafka_topic": "orders", "kafka_partition": 0}: -> {"kafka_offset": 1200}',
        '             {"kafka_topic": "ordrs", "kafka_partition": 1}: -> null (offset removed)',
        '  - connector "ours" will be deleted',
        '      - api.token: (sensitive)',
        '  - theirs',
        '  - restart r0 on connector "done"',
        "Plan: 1 to create, 1 to update, 1 to delete, 1 state change, 1 restart, 1 offsets request.",
    ]
    lines = text.splitlines()
    for line in expected_lines:
        assert line in lines
    assert text.endswith("offsets request.\n")
    assert "\x1b[" not in text
    # Steps are numbered in execution order, the state change folded into "return".
    numbered = [line.strip()[:2] for line in lines if line.strip()[:2] in {"1.", "2.", "3.", "4.", "5."}]
    assert numbered == ["1.", "2.", "3.", "4.", "5."]
    assert "connect-rewind" in text
    assert "which this sink does not read" in text  # sink topic warning (ordrs)


HEADER_STARTS = {f"  {symbol} connector " for symbol in "+~-"}


def test_text_orders_connectors_as_they_will_run() -> None:
    headers = [line for line in render_text(busy_plan()).splitlines() if line[:14] in HEADER_STARTS]
    assert [h.split('"')[1] for h in headers] == ["orders-archive", "updated", "rewind", "ours"]


def test_text_lists_orphans_without_prune() -> None:
    text = render_text(busy_plan(prune=False))
    assert "deleted only with --prune" in text and "  - ours" in text
    assert 'connector "ours" will be deleted' not in text
    assert "0 to delete" in text


def test_orphans_a_refused_prune_left_do_not_ask_for_the_prune_given() -> None:
    """--prune with no manifests and no --allow-empty: the orphans stay, and say why."""
    live = LiveState(connectors={"ours": LiveConnector(name="ours", config={"connector.class": "datagen"})}, owned=["ours"])
    text = render_text(build_plan([], live, PlanOptions(prune=True)))
    assert "Orphaned connectors (created by this reconciler, in no manifest; not deleted: --prune with no " \
           "manifests needs --allow-empty):" in text
    assert "deleted only with --prune" not in text


def test_colour_only_on_request() -> None:
    coloured = render_text(busy_plan(), colour=True)
    assert "\x1b[32m  + connector \"orders-archive\"" in coloured
    assert "\x1b[31m  - connector \"ours\"" in coloured


def test_no_changes_in_every_format() -> None:
    desired = [connector("a")]
    plan = build_plan(desired, LiveState(connectors={"a": LiveConnector(name="a", config=connector_properties(desired[0]))}))
    assert render_text(plan) == "No changes. Live state matches the manifests.\n"
    assert "**No changes. Live state matches the manifests.**" in render_markdown(plan)
    assert "| Connector |" not in render_markdown(plan)
    doc = json.loads(render_json(plan))
    assert doc["has_changes"] is False and doc["summary"]["total"] == 0 and doc["actions"] == []


def test_markdown_has_summary_table_and_collapsible_diffs() -> None:
    md = render_markdown(busy_plan())
    assert md.startswith("## ")
    assert "| Connector | Action | Details |" in md
    assert "| `orders-archive` | create | state paused, tasks.max 2, class parquet-sink |" in md
    assert "| `updated` | pause | running → paused |" in md
    assert md.count("<details><summary>") == 4 and md.count("</details>") == 4
    assert "```diff\n+ connector.class: \"parquet-sink\"" in md
    assert "### Warnings" in md and "FAILED" in md
    assert "- `theirs`" in md
    assert "- restart `r0` on `done`" in md
    assert "\n\n\n" not in md


def test_markdown_fence_survives_backticks_in_values() -> None:
    desired = [connector("a", config={"note": "```"})]
    md = render_markdown(build_plan(desired, LiveState()))
    assert "````diff" in md


def test_markdown_table_escapes_pipes() -> None:
    plan = Plan(actions=[Action(kind=ActionKind.DELETE, connector="x", reason="a | b")])
    assert "| `x` | delete | a \\| b |" in render_markdown(plan)


def test_json_document_is_versioned_and_round_trips() -> None:
    plan = busy_plan()
    text = render_json(plan)
    doc = json.loads(text)
    assert list(doc)[:2] == ["format_version", "group_id"]
    assert doc["format_version"] == "2"
    assert doc["summary"] == {"create": 1, "update": 1, "delete": 1, "state": 1, "restart": 1, "offsets": 1,
                              "topics_reset": 0, "total": 6}
    assert load_plan_json(text) == plan
    assert render_json(load_plan_json(text)) == text  # stable


def test_json_keeps_current_offsets_for_from_to_display() -> None:
    entry = OffsetEntry(partition={"kafka_topic": "t", "kafka_partition": 0}, offset={"kafka_offset": 5})
    current = OffsetEntry(partition={"kafka_topic": "t", "kafka_partition": 0}, offset={"kafka_offset": 90})
    action = Action(kind=ActionKind.OFFSETS, connector="s", request_id="o", offsets=[entry], current_offsets=[current],
                    is_sink=True)
    plan = Plan(actions=[action])
    assert load_plan_json(render_json(plan)) == plan
    assert '{"kafka_topic": "t", "kafka_partition": 0}: {"kafka_offset": 90} -> {"kafka_offset": 5}' in render_text(plan)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ("[]", "expected a JSON object"),
        ('{"format_version": "99"}', "format version '99' is not supported"),
        ('{"format_version": "2", "actions": [{"kind": "explode", "connector": "x"}]}', "actions.0.kind"),
    ],
)
def test_load_plan_json_rejects_what_is_not_a_plan(text: str, message: str) -> None:
    with pytest.raises(ReconcilerError, match="saved.json") as info:
        load_plan_json(text, origin="saved.json")
    assert message in info.value.message


def test_render_dispatch_uses_the_same_plan() -> None:
    plan = busy_plan()
    assert render(plan, "text") == render_text(plan)
    assert render(plan, "markdown") == render_markdown(plan)
    assert render(plan, "json") == render_json(plan)
