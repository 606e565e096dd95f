"""SIGKILL the offsets executor at every step; the next run finishes the request exactly once.

A child process runs the pending requests with RECONCILER_FAILPOINTS naming one point
(`reconciler.offsets.model.FAILPOINTS`) and is killed there. The test then runs the executor
again in-process and checks the end state: the offsets are exactly the requested ones, the
rollback snapshot holds the offsets from *before* the request, the id is recorded once, the
progress record is gone, and after the connector has moved on, more runs change nothing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.kafka.io.store import LiveStore
from reconciler.core.live import ConnectTargetState
from reconciler.app.apply import apply_manifests
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from reconciler.offsets import model
from reconciler.app.offsets import run_pending_offsets_requests
from reconciler.offsets.sink import commit_offsets
from reconciler.kafka.io.store import read_view
from reconciler.offsets.state import current_body

from offsets_support import (
    child_env,
    PLAIN_SINK,
    PLAIN_SOURCE,
    PLUGINS_DIR,
    create_topic,
    manifest,
    run_tasks,
    write_raw,
)

CHILD = textwrap.dedent(
    """
    import sys
    from reconciler.kafka.io.store import LiveStore, read_live_state
    from reconciler.kafka.settings import KafkaSettings, Topics
    from reconciler.manifests import load_or_raise
    from reconciler.app.offsets import run_pending_offsets_requests
    bootstrap, group, path = sys.argv[1:4]
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=20)
    desired = load_or_raise([path])
    for outcome in run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    ):
        print(outcome.render(), flush=True)
    """
)


def killed_at(point: str, settings: KafkaSettings, manifests: Path) -> None:
    env = {**child_env(point), "PYTHONPATH": os.pathsep.join([str(PLUGINS_DIR), *sys.path])}
    child = subprocess.run(
        [sys.executable, "-c", CHILD, settings.bootstrap_servers, settings.group_id, str(manifests)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, f"not killed at {point}: {child.stdout}{child.stderr}"


def recover(settings: KafkaSettings, manifests: Path) -> list[model.OffsetsOutcome]:
    desired = load_or_raise([manifests])
    outcomes = run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    )
    assert all(o.status == "applied" for o in outcomes), [o.render() for o in outcomes]
    # Once applied, nothing is pending any more.
    assert run_pending_offsets_requests(
        settings, desired, read_live_state(settings), store=LiveStore.one_shot(settings)
    ) == []
    return outcomes


def hook_calls(path: Path) -> int:
    return len(path.read_text().splitlines()) if path.exists() else 0


@pytest.mark.parametrize("point", model.FAILPOINTS)
def test_sink_rewind_killed_at_each_step_is_applied_exactly_once(
    point: str, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    name = f"sink-{uuid.uuid4().hex[:8]}"
    group = f"connect-{name}"
    topic = f"{settings.group_id}-orders"
    create_topic(settings, topic, 2)
    calls = tmp_path / "calls.jsonl"
    config = {"topics": topic, "calls.file": str(calls)}
    path = tmp_path / "m.yaml"
    path.write_text(manifest(name, PLAIN_SINK, config, tasks=2))
    apply_manifests(settings, load_or_raise([path]), PlanOptions(), store=LiveStore.one_shot(settings))
    run_tasks(settings, name, 2)
    commit_offsets(settings, name, group, {(topic, 0): 50, (topic, 1): 70}, model.OffsetsAction.ALTER)
    request = f"{{id: rw-1, action: alter, offsets: [{{partition: {{kafka_topic: {topic}, kafka_partition: 0}}, offset: {{kafka_offset: 10}}}}, {{partition: {{kafka_topic: {topic}, kafka_partition: 1}}, offset: null}}]}}"
    path.write_text(manifest(name, PLAIN_SINK, config, tasks=2, offsets=request))

    killed_at(point, settings, path)
    recover(settings, path)

    assert sink_group_offsets(settings, group) == {(topic, 0): 10}
    state = read_view(settings)
    assert state.snapshot(name, "rw-1") == model.sink_body({(topic, 0): 50, (topic, 1): 70})
    assert state.live.is_applied(name, "offsets", "rw-1") and name not in state.progress
    assert state.live.connectors[name].target_state is ConnectTargetState.STARTED
    # The hook runs again only when the kill came after it and before the change was recorded.
    assert hook_calls(calls) == (2 if point in (model.AFTER_HOOK, model.AFTER_ALTER) else 1)
    # The connector runs on and commits further; the request never comes back.
    commit_offsets(settings, name, group, {(topic, 0): 200}, model.OffsetsAction.ALTER)
    assert run_pending_offsets_requests(
        settings, load_or_raise([path]), read_live_state(settings), store=LiveStore.one_shot(settings)
    ) == []
    assert sink_group_offsets(settings, group) == {(topic, 0): 200}


@pytest.mark.parametrize("point", model.FAILPOINTS)
def test_source_reset_killed_at_each_step_is_applied_exactly_once(
    point: str, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    settings = kafka_settings
    name = "jdbc-src"
    path = tmp_path / "m.yaml"
    path.write_text(manifest(name, PLAIN_SOURCE, {}, tasks=1))
    apply_manifests(settings, load_or_raise([path]), PlanOptions(), store=LiveStore.one_shot(settings))
    run_tasks(settings, name, 1)
    java = [(b'["jdbc-src",{"schema":"public","table":"orders"}]', b'{"incrementing":1300}')]
    write_raw(settings, settings.topics.offsets, java)
    path.write_text(manifest(name, PLAIN_SOURCE, {}, tasks=1, offsets="{id: rs-1, action: reset}"))

    killed_at(point, settings, path)
    recover(settings, path)

    assert current_body(settings, name, {}) == []
    state = read_view(settings)
    assert state.snapshot(name, "rs-1") == [
        {"partition": {"table": "orders", "schema": "public"}, "offset": {"incrementing": 1300}}
    ]
    assert state.live.is_applied(name, "offsets", "rs-1") and name not in state.progress
    # The task runs on from scratch and commits a new offset; the reset is not repeated.
    write_raw(settings, settings.topics.offsets, [(java[0][0], b'{"incrementing":3}')])
    assert run_pending_offsets_requests(
        settings, load_or_raise([path]), read_live_state(settings), store=LiveStore.one_shot(settings)
    ) == []
    assert current_body(settings, name, {}) == [
        {"partition": {"table": "orders", "schema": "public"}, "offset": {"incrementing": 3}}
    ]
