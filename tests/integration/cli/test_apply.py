"""`reconciler apply` end to end on the real broker: converge, idempotence, saved plans, races, crashes."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.core.plan import PlanOptions
from reconciler.kafka.io.store import LiveStore
from reconciler.cli.main import main
from reconciler.core.live import ConnectTargetState, LiveState
from reconciler.errors import Fenced
from reconciler.app.apply import apply_manifests, apply_writer
from reconciler.kafka.io.consume import end_offsets, read_to_end
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.io.store import prepare, read_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest

ROOT = Path(__file__).resolve().parents[3]
QUICKSTART = ROOT / "examples" / "quickstart"


def kafka_args(settings: KafkaSettings) -> list[str]:
    return ["--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, "--timeout", "20"]


def cli(capsys: pytest.CaptureFixture[str], settings: KafkaSettings, *args: str) -> tuple[int, str, str]:
    code = main([*args, *kafka_args(settings)])
    out, err = capsys.readouterr()
    return code, out, err


def manifest(name: str, *, state: str = "running", extra: str = "", **config: str) -> str:
    """One Connector document; `extra` = more `spec` fields, as YAML indented from column 0."""
    config.setdefault("count", "10")  # datagen requires it
    lines = [
        "apiVersion: reconciler.io/v1",
        "kind: Connector",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  class: datagen",
        f"  state: {state}",
        "  config:" + ("" if config else " {}"),
        *(f"    {key}: {json.dumps(value)}" for key, value in config.items()),
    ]
    return "\n".join(lines) + "\n" + textwrap.indent(textwrap.dedent(extra), "  ")


def write(path: Path, *docs: str) -> Path:
    path.write_text("---\n".join(docs))
    return path


def config_end(settings: KafkaSettings) -> int:
    return end_offsets(settings, settings.topics.configs)[0]


def test_quickstart_apply_status_change_plan_apply_no_changes(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    code, out, _ = cli(capsys, kafka_settings, "apply", str(QUICKSTART))
    assert code == 0
    assert out.rstrip().endswith("Apply complete: 4 records written")  # 2 configs + 2 ownership records

    code, out, _ = cli(capsys, kafka_settings, "status")
    assert code == 0
    assert "quickstart-orders-archive" in out and "quickstart-orders-datagen" in out

    changed = tmp_path / "pipeline.yaml"
    shutil.copy(QUICKSTART / "pipeline.yaml", changed)
    changed.write_text(changed.read_text().replace("count: 20000", "count: 30000"))
    code, out, _ = cli(capsys, kafka_settings, "plan", str(changed), "--format", "json")
    plan = json.loads(out)
    assert [(a["kind"], a["connector"]) for a in plan["actions"]] == [("update-config", "quickstart-orders-datagen")]
    [change] = plan["actions"][0]["changes"]
    assert (change["op"], change["key"], change["old"], change["new"]) == ("change", "count", "20000", "30000")

    code, out, _ = cli(capsys, kafka_settings, "apply", str(changed))
    assert code == 0 and out.rstrip().endswith("Apply complete: 1 record written")

    code, out, _ = cli(capsys, kafka_settings, "plan", str(changed))
    assert code == 0 and out.strip() == "No changes. Live state matches the manifests."

    before = config_end(kafka_settings)
    code, out, _ = cli(capsys, kafka_settings, "apply", str(changed))
    assert code == 0
    assert out.strip() == "No changes. Live state matches the manifests."
    assert config_end(kafka_settings) == before  # the second apply wrote zero records


def test_lifecycle_converges_and_is_idempotent_at_every_step(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = tmp_path / "c.yaml"
    steps = [
        ("paused", ConnectTargetState.PAUSED),  # created paused: target state written first
        ("running", ConnectTargetState.STARTED),
        ("stopped", ConnectTargetState.STOPPED),
        ("running", ConnectTargetState.STARTED),
    ]
    for state, connect_state in steps:
        write(path, manifest("life", state=state, topic="t"))
        assert cli(capsys, kafka_settings, "apply", str(path))[0] == 0
        live = read_live_state(kafka_settings).connectors["life"]
        assert live.target_state is connect_state
        assert cli(capsys, kafka_settings, "apply", str(path))[1].strip().endswith("No changes. Live state matches the manifests.")
    assert read_live_state(kafka_settings).connectors["life"].task_count == 0  # from the stop


def test_restart_request_is_applied_exactly_once(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = write(tmp_path / "c.yaml", manifest("rs", topic="t"))
    assert cli(capsys, kafka_settings, "apply", str(path))[0] == 0
    restart = "restart: {id: r-1, includeTasks: true, onlyFailed: true}\n"
    write(path, manifest("rs", topic="t", extra=restart))

    code, out, _ = cli(capsys, kafka_settings, "apply", str(path))
    assert code == 0 and "Apply complete: 2 records written" in out  # restart record + applied id

    restarts = [m for m in read_to_end(kafka_settings, kafka_settings.topics.configs) if m.key == b"restart-connector-rs"]
    assert [m.value for m in restarts] == [b'{"include-tasks":true,"only-failed":true}']
    assert read_live_state(kafka_settings).is_applied("rs", "restart", "r-1")
    assert cli(capsys, kafka_settings, "apply", str(path))[1].strip().endswith("No changes. Live state matches the manifests.")


def test_prune_deletes_only_owned_orphans(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = write(tmp_path / "c.yaml", manifest("keep", topic="t"), manifest("drop", topic="t"))
    assert cli(capsys, kafka_settings, "apply", str(path))[0] == 0
    from reconciler.kafka.formats.records import connector_config_record

    with TransactionalWriter(kafka_settings, transactional_id=f"connect-{kafka_settings.group_id}") as connect:
        connect.write([connector_config_record("by-connect", {"connector.class": "X", "name": "by-connect"})])
    write(path, manifest("keep", topic="t"))

    code, out, _ = cli(capsys, kafka_settings, "apply", str(path))
    assert code == 0 and set(read_live_state(kafka_settings).connectors) >= {"keep", "drop", "by-connect"}

    code, out, _ = cli(capsys, kafka_settings, "apply", str(path), "--prune")
    assert code == 0
    live = read_live_state(kafka_settings)
    assert live.connector("drop") is None or not live.connectors["drop"].exists
    assert live.connectors["by-connect"].exists  # not ours: never deleted
    assert "drop" not in live.owned


def test_offsets_request_runs_in_apply_only_for_a_connector_it_creates(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """Created STOPPED by this apply, the connector never had a task: the whole request runs.
    Otherwise apply cannot know that no `run` batch is in flight: it stops the connector and
    leaves the rest to the next `run` tick, never marking the id applied (reconciler.offsets)."""
    path = write(tmp_path / "c.yaml", manifest("src", topic="t", count="10", extra="offsets: {id: rewind-1, action: reset}\n"))
    code, out, err = cli(capsys, kafka_settings, "apply", str(path))
    assert code == 0, out + err
    assert (
        "offsets request rewind-1 (reset) for src: applied: The offsets for this connector have been reset "
        "successfully" in out  # datagen validates its offsets and confirms, as Connect's own connectors do
    )
    live = read_live_state(kafka_settings)
    assert live.is_applied("src", "offsets", "rewind-1")
    assert live.connectors["src"].target_state is ConnectTargetState.STARTED

    write(tmp_path / "c.yaml", manifest("src", topic="t", count="10", extra="offsets: {id: rewind-2, action: reset}\n"))
    # The first apply stops the connector (zero-task commit, STOPPED, the request's progress
    # record: 3 records, in the request's own transaction); the second finds it stopped.
    for written in ("3 records written (0 for the plan's changes, 3 by offsets requests)", "0 records written"):
        code, out, _ = cli(capsys, kafka_settings, "apply", str(path))
        assert code == 0
        assert "offsets request rewind-2 (reset) for src: waiting: the connector is stopped; its offsets change " in out
        assert out.rstrip().endswith(f"Apply complete: {written}")
        live = read_live_state(kafka_settings)
        assert not live.is_applied("src", "offsets", "rewind-2")
        assert live.connectors["src"].target_state is ConnectTargetState.STOPPED


def test_saved_plan_is_applied_while_current_and_refused_once_stale(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = write(tmp_path / "c.yaml", manifest("saved", topic="t"))
    plan_file = tmp_path / "plan.json"
    prepare(kafka_settings)  # `plan` reads only: the group's topics must exist
    assert cli(capsys, kafka_settings, "plan", str(path), "--out", str(plan_file))[0] == 0
    code, out, _ = cli(capsys, kafka_settings, "apply", str(plan_file))
    assert code == 0 and "Apply complete" in out

    # Live state moves after planning: the saved plan is refused.
    write(path, manifest("saved", topic="t", state="paused"))
    assert cli(capsys, kafka_settings, "plan", str(path), "--out", str(plan_file))[0] == 0
    other = write(tmp_path / "other.yaml", manifest("saved", topic="t2"))
    assert cli(capsys, kafka_settings, "apply", str(other))[0] == 0
    before = config_end(kafka_settings)
    code, _, err = cli(capsys, kafka_settings, "apply", str(plan_file))
    assert code == 1
    assert "live state moved since the plan was made; run `reconciler plan` again" in err
    assert config_end(kafka_settings) == before

    # The manifests change after planning: refused too.
    assert cli(capsys, kafka_settings, "plan", str(path), "--out", str(plan_file))[0] == 0
    write(path, manifest("saved", topic="t3"))
    code, _, err = cli(capsys, kafka_settings, "apply", str(plan_file))
    assert code == 1 and "the manifests changed since the plan was made" in err


def test_a_saved_plan_for_another_group_is_refused_before_any_topic_is_created(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """A typo in `--group-id` must not leave a stray group's internal topics behind."""
    from reconciler.kafka.io.client import new_admin
    from reconciler.kafka.settings import Topics

    path = write(tmp_path / "c.yaml", manifest("grouped", topic="t"))
    plan_file = tmp_path / "plan.json"
    prepare(kafka_settings)
    assert cli(capsys, kafka_settings, "plan", str(path), "--out", str(plan_file))[0] == 0
    group = f"{kafka_settings.group_id}-typo"
    typo = dataclasses.replace(kafka_settings, group_id=group, topics=Topics.for_group(group))
    code, _, err = cli(capsys, typo, "apply", str(plan_file))
    assert code == 1 and f"the plan was made for group {kafka_settings.group_id}, not {typo.group_id}" in err
    existing = set(new_admin(kafka_settings).list_topics(timeout=10).topics)
    assert kafka_settings.topics.configs in existing
    assert not {typo.topics.configs, typo.topics.status, typo.topics.offsets, typo.topics.reconciler} & existing


def test_a_saved_plan_finds_its_manifests_from_any_directory(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paths given relative to where `plan` ran; `apply` runs elsewhere, even after the checkout
    (manifests and plan file together) moved: paths are kept relative to the plan file."""
    repo = tmp_path / "checkout"
    (repo / "manifests").mkdir(parents=True)
    (repo / "plans").mkdir()
    write(repo / "manifests" / "c.yaml", manifest("from-anywhere", topic="t"))
    prepare(kafka_settings)
    monkeypatch.chdir(repo)
    assert cli(capsys, kafka_settings, "plan", "manifests", "--out", "plans/plan.json")[0] == 0
    saved = json.loads((repo / "plans" / "plan.json").read_text())
    assert saved["manifest_paths"] == [os.path.join("..", "manifests")]

    moved = tmp_path / "ci-workspace-2"
    shutil.move(repo, moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # neither the old nor the new checkout
    code, out, err = cli(capsys, kafka_settings, "apply", str(moved / "plans" / "plan.json"))
    assert code == 0, err
    assert "Apply complete" in out
    assert read_live_state(kafka_settings).connectors["from-anywhere"].exists


def test_a_plan_printed_as_json_keeps_absolute_paths(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "c.yaml", manifest("json-plan", topic="t"))
    prepare(kafka_settings)
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli(capsys, kafka_settings, "plan", "c.yaml", "--format", "json")
    assert code == 0 and json.loads(out)["manifest_paths"] == [str(tmp_path / "c.yaml")]
    elsewhere = tmp_path / "sub" / "dir"
    elsewhere.mkdir(parents=True)
    (elsewhere / "plan.json").write_text(out)  # `plan --format json > …/plan.json`
    monkeypatch.chdir(elsewhere)
    assert cli(capsys, kafka_settings, "apply", "plan.json")[0] == 0
    assert read_live_state(kafka_settings).connectors["json-plan"].exists


def test_no_create_topics_refuses_and_writes_nothing(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = write(tmp_path / "c.yaml", manifest("x", topic="t"))
    code, out, err = cli(capsys, kafka_settings, "apply", str(path), "--no-create-topics")
    assert code == 1 and out == ""
    assert f"{kafka_settings.topics.configs} (configs)" in err and "--no-create-topics" in err


def test_racing_applies_exactly_one_wins(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    mine = load_or_raise([write(tmp_path / "a.yaml", manifest("race", topic="from-a"), manifest("only-a", topic="t"))])
    theirs = load_or_raise([write(tmp_path / "b.yaml", manifest("race", topic="from-b"))])

    def the_other_apply_runs_now(_plan: object) -> None:
        # After our claim and read, before our write: the other apply claims, reads and commits.
        apply_manifests(kafka_settings, theirs, PlanOptions(), store=LiveStore.one_shot(kafka_settings))

    with pytest.raises(Fenced, match=f"another reconciler is applying to group {kafka_settings.group_id}"):
        apply_manifests(
            kafka_settings, mine, PlanOptions(), store=LiveStore.one_shot(kafka_settings), show_plan=the_other_apply_runs_now
        )

    live = read_live_state(kafka_settings)
    assert live.connectors["race"].config is not None and live.connectors["race"].config["topic"] == "from-b"
    assert "only-a" not in live.connectors or not live.connectors["only-a"].exists
    again = apply_manifests(kafka_settings, theirs, PlanOptions(), store=LiveStore.one_shot(kafka_settings))
    assert again.records_written == 0 and not again.plan.has_changes


def test_a_kept_claim_fenced_by_another_apply_claims_again_and_applies(
    kafka_settings: KafkaSettings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A tick keeps its apply's claim across ticks (`apply_writer`). Another apply in between
    fences it; the next apply through it claims afresh and applies, as a new apply would."""
    ours = [load_or_raise([write(tmp_path / "a.yaml", manifest("kept", topic=topic))]) for topic in ("one", "two")]
    theirs = load_or_raise([write(tmp_path / "b.yaml", manifest("theirs", topic="t"))])
    caplog.set_level(logging.DEBUG, logger="reconciler.app.apply")
    with apply_writer(kafka_settings) as kept:
        first = apply_manifests(kafka_settings, ours[0], PlanOptions(), store=LiveStore.one_shot(kafka_settings), writer=kept)
        assert first.records_written > 0 and kept.claimed
        apply_manifests(kafka_settings, theirs, PlanOptions(), store=LiveStore.one_shot(kafka_settings))
        second = apply_manifests(kafka_settings, ours[1], PlanOptions(), store=LiveStore.one_shot(kafka_settings), writer=kept)
    assert second.records_written > 0
    assert "was fenced since the last tick: claiming it again" in caplog.text
    live = read_live_state(kafka_settings)
    assert live.connectors["kept"].config is not None and live.connectors["kept"].config["topic"] == "two"
    assert live.connectors["theirs"].exists


HALF_AN_APPLY = textwrap.dedent(
    """
    import sys, time
    from reconciler.core.planner import build_plan
    from reconciler.kafka.formats.changes import plan_to_records
    from reconciler.kafka.io.client import new_producer
    from reconciler.kafka.io.produce import topic_for
    from reconciler.kafka.io.store import prepare, read_live_state
    from reconciler.kafka.settings import KafkaSettings, Topics
    from reconciler.manifests import load_or_raise
    bootstrap, group, path = sys.argv[1:4]
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group))
    desired = load_or_raise([path])
    live = read_live_state(settings)
    records = plan_to_records(build_plan(desired, live), {d.name: d for d in desired}, live, now_ms=1)
    producer = new_producer(settings, None, **{"transactional.id": settings.transactional_id})
    producer.init_transactions(20)
    producer.begin_transaction()
    for record in records[: len(records) // 2]:  # half of the apply, produced but not committed
        producer.produce(topic_for(settings, record.topic_role), key=record.key, value=record.value)
    producer.flush(20)
    print("produced", len(records), flush=True)
    time.sleep(120)
    """
)


def kill_half_an_apply(settings: KafkaSettings, path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", HALF_AN_APPLY, settings.bootstrap_servers, settings.group_id, str(path)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("produced")
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    proc.stdout.close()


def test_sigkill_between_produce_and_commit_then_apply_converges(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    path = write(
        tmp_path / "c.yaml",
        manifest("k1", state="paused", topic="t"),
        manifest("k2", state="stopped", topic="t"),
        manifest("k3", topic="t"),
    )
    prepare(kafka_settings)  # create the topics
    kill_half_an_apply(kafka_settings, path)

    code, out, _ = cli(capsys, kafka_settings, "apply", str(path))
    assert code == 0 and "Apply complete" in out
    live = read_live_state(kafka_settings)
    states = {name: c.target_state for name, c in live.connectors.items() if c.exists}
    assert states == {
        "k1": ConnectTargetState.PAUSED,
        "k2": ConnectTargetState.STOPPED,
        "k3": ConnectTargetState.STARTED,
    }
    assert sorted(live.owned) == ["k1", "k2", "k3"]
    assert cli(capsys, kafka_settings, "plan", str(path))[1].strip() == "No changes. Live state matches the manifests."


def test_sigkill_mid_apply_leaves_nothing_partial_visible(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", manifest("k1", state="paused", topic="t"), manifest("k2", topic="t"))
    prepare(kafka_settings)
    kill_half_an_apply(kafka_settings, path)
    assert read_live_state(kafka_settings) == LiveState(group_id=kafka_settings.group_id)
    with TransactionalWriter(kafka_settings) as writer:
        writer.claim()  # what the next apply does first: aborts the dead transaction
    assert read_live_state(kafka_settings) == LiveState(group_id=kafka_settings.group_id)


def test_apply_to_an_unreachable_broker_fails_fast(kafka: KafkaUnderTest, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "c.yaml", manifest("x", topic="t"))
    code = main(["apply", str(path), "--bootstrap-servers", "127.0.0.1:1", "--timeout", "2"])
    out, err = capsys.readouterr()
    assert code == 1
    assert "error: cannot reach Kafka at 127.0.0.1:1: connection refused (nothing listens on that port)" in err
    assert "Apply complete" not in out
