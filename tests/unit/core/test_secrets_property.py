"""Property: no planted secret survives into any output the pure layers make (docs/secrets.md).

Random connector configs carry secrets planted every way the rule covers (secret-looking keys,
`${env:…}` values under plain keys, credentials inside URLs and JDBC strings, JAAS configs,
`spec.sensitive`, `${file:…}` placeholders). Each example goes through the plan (text,
Markdown, JSON) against an empty and a live state, the snapshot (connector and task configs),
a plan against that snapshot, a status trace the runtime writes, and free-text scrubbing —
and none may hold a secret. The CLI end to end: tests/integration/cli/test_secrets.py.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planted_secrets import CLASS, Planted, leaks, planted_connector, rotated, secret_pool
from reconciler import masking
from reconciler.core.live import InstanceState, LiveConnector, LiveState, dump_snapshot, load_snapshot
from reconciler.core.models import DesiredConnector
from reconciler.core.normalize import connector_properties
from reconciler.core.planner import build_plan
from reconciler.manifests import load_manifests
from reconciler.render import render
from reconciler.runtime.batch.statuses import Report, StatusBook

@st.composite
def scenario(draw: st.DrawFn) -> tuple[list[Planted], list[Planted]]:
    """(connectors as applied, the same connectors with every secret rotated)."""
    count, pool = draw(st.integers(min_value=1, max_value=3)), secret_pool(draw)
    before = [draw(planted_connector(f"c{index}", pool)) for index in range(count)]
    return before, [rotated(p, [next(pool) for _ in p.secrets]) for p in before]


def load(planted: list[Planted], directory: Path) -> list[DesiredConnector]:
    directory.mkdir(parents=True, exist_ok=True)
    for p in planted:
        doc = p.manifest(CLASS)
        doc["spec"]["config"].update({"topic": "t", "count": "1"})
        (directory / f"{p.name}.yaml").write_text(yaml.safe_dump(doc))
    env = {k: v for p in planted for k, v in p.env.items()}
    result = load_manifests([directory], env=env, cache=False)
    assert result.ok, [d.render() for d in result.diagnostics]
    return result.connectors


def applied(desired: list[DesiredConnector]) -> LiveState:
    """What `apply` (config, our sensitive-keys record) and a worker (task configs copied from
    the connector's) leave in the topics for these connectors."""
    connectors = {}
    for connector in desired:
        props = connector_properties(connector)
        connectors[connector.name] = LiveConnector(name=connector.name, config=props, task_count=1, task_configs=[props])
    sensitive = {c.name: sorted(c.sensitive_keys) for c in desired if c.sensitive_keys}
    return LiveState(group_id="g", connectors=connectors, owned=sorted(connectors), sensitive=sensitive)


def changed_keys(desired: list[DesiredConnector], live: LiveState) -> set[tuple[str, str, str]]:
    plan = build_plan(desired, live, fingerprints=False)
    return {(a.connector, c.key, c.op) for a in plan.actions for c in a.changes}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_no_planted_secret_in_plans_snapshots_traces_or_messages(data: tuple[list[Planted], list[Planted]]) -> None:
    before, after = data
    secrets = set().union(*(p.secrets for p in before + after))
    with tempfile.TemporaryDirectory() as tmp:
        old = load(before, Path(tmp) / "before")
        new = load(after, Path(tmp) / "after")
    live = applied(old)
    outputs: dict[str, str] = {}
    for label, plan in (("create", build_plan(old, LiveState(), fingerprints=False)), ("rotate", build_plan(new, live))):
        for fmt in ("text", "markdown", "json"):
            outputs[f"plan {label} {fmt}"] = render(plan, fmt)
    outputs["snapshot"] = snapshot = dump_snapshot(live)
    offline = load_snapshot(snapshot)
    # The sealed snapshot still plans like the live state: the same fields change.
    assert changed_keys(new, offline) == changed_keys(new, live)
    outputs["plan against the snapshot"] = render(build_plan(new, offline, fingerprints=False), "text")

    book = StatusBook(live, "w:1")
    for connector in old:
        trace = "InvalidConfig: " + "; ".join(f"got {v!r}" for v in (connector.spec.config or {}).values())
        records = book.connector(connector.name, Report(InstanceState.FAILED, trace))
        outputs[f"status trace {connector.name}"] = b"".join(r.value or b"" for r in records).decode()

    masking.forget_all()  # what a fresh `reconciler status` process knows: the live state only
    masking.remember_live(offline.model_copy(update={"connectors": live.connectors}))
    message = "error: " + ", ".join(str(v) for c in old for v in c.spec.config.values())
    outputs["error message"] = masking.scrub(message)
    masking.forget_all()

    assert leaks(outputs, secrets) == []
    # Not by showing nothing: the plain values are all there in the plan.
    for p in before:
        for value in p.plain.values():
            assert value in outputs["plan create text"]
