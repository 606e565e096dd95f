"""`reconciler plan`: live state from a snapshot/empty, formats, --out, exit codes, lazy imports."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.core.live import (
    AppliedRequests,
    ConnectTargetState,
    LiveConnector,
    LiveState,
    dump_snapshot,
)
from reconciler.render.json import load_plan_json

MANIFESTS = textwrap.dedent(
    """\
    apiVersion: reconciler.io/v1
    kind: Connector
    metadata:
      name: orders-gen
    spec:
      class: datagen
      tasksMax: 2
      config:
        topic: orders
        count: 1000
        producer.override.sasl.password: ${env:PLAN_TEST_SECRET}
    ---
    apiVersion: reconciler.io/v1
    kind: Connector
    metadata:
      name: orders-archive
    spec:
      class: parquet-sink
      state: paused
      config:
        topics: orders
        path: /data/orders
      restart:
        id: r1
        includeTasks: true
    """
)
SECRET = "plan-cmd-s3cret"

# What a Connect worker would hold after applying MANIFESTS (strings, bookkeeping keys).
MATCHING = LiveState(
    connectors={
        "orders-gen": LiveConnector(
            name="orders-gen",
            config={"connector.class": "datagen", "tasks.max": "2", "name": "orders-gen", "topic": "orders",
                    "count": "1000", "producer.override.sasl.password": "${env:PLAN_TEST_SECRET}"},
        ),
        "orders-archive": LiveConnector(
            name="orders-archive",
            config={"connector.class": "parquet-sink", "topics": "orders", "path": "/data/orders"},
            target_state=ConnectTargetState.PAUSED,
        ),
    },
    applied={"orders-archive": AppliedRequests(restart=["r1"])},
)


@pytest.fixture
def manifests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PLAN_TEST_SECRET", SECRET)
    monkeypatch.delenv("RECONCILER_BOOTSTRAP_SERVERS", raising=False)
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / "orders.yaml").write_text(MANIFESTS)
    return directory


def snapshot(tmp_path: Path, state: LiveState) -> Path:
    path = tmp_path / "live.json"
    path.write_text(dump_snapshot(state))
    return path


def test_empty_live_state_plans_creates(manifests: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(manifests)]) == 0
    out = capsys.readouterr().out
    assert '+ connector "orders-gen" will be created (state: running, tasks.max: 2, class: datagen)' in out
    assert '+ connector "orders-archive" will be created (state: paused' in out
    assert "Plan: 2 to create, 0 to update, 0 to delete, 0 state changes, 1 restart, 0 offsets requests." in out
    assert SECRET not in out


@pytest.mark.parametrize(("live", "code"), [(LiveState(), 2), (MATCHING, 0)], ids=["changes", "no-changes"])
def test_detailed_exitcode(
    manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], live: LiveState, code: int
) -> None:
    args = ["plan", str(manifests), "--live-state", str(snapshot(tmp_path, live)), "--detailed-exitcode"]
    assert main(args) == code
    if code == 0:
        out = capsys.readouterr().out
        assert "No changes. Live state matches the manifests." in out
        assert 'restart r1 on connector "orders-archive"' in out


def test_changes_without_detailed_exitcode_exit_zero(manifests: Path) -> None:
    assert main(["plan", str(manifests)]) == 0


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_out_writes_json_whatever_the_format(
    manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    changed = MATCHING.model_copy(update={"applied": {}})  # the restart r1 is pending again
    out_file = tmp_path / "plan.json"
    args = ["plan", str(manifests), "--live-state", str(snapshot(tmp_path, changed)), "--format", fmt,
            "--out", str(out_file)]
    assert main(args) == 0
    printed = capsys.readouterr().out
    saved = load_plan_json(out_file.read_text())
    assert [(a.kind.value, a.connector) for a in saved.actions] == [("restart", "orders-archive")]
    assert saved.manifest_paths == [os.path.relpath(manifests, tmp_path)]  # relative to the plan file
    assert saved.live_fingerprint == changed.fingerprint()
    if fmt == "json":
        assert load_plan_json(printed) == saved
    elif fmt == "markdown":
        assert "| `orders-archive` | restart |" in printed
    else:
        assert "~ restart requested (id r1, includeTasks)" in printed
    assert SECRET not in printed and SECRET not in out_file.read_text()


def test_prune_deletes_only_owned_orphans(manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    extra = {
        "ours": LiveConnector(name="ours", config={"connector.class": "datagen"}),
        "theirs": LiveConnector(name="theirs", config={"connector.class": "datagen"}),
    }
    live = MATCHING.model_copy(update={"connectors": MATCHING.connectors | extra, "owned": ["ours"]})
    path = str(snapshot(tmp_path, live))
    assert main(["plan", str(manifests), "--live-state", path, "--detailed-exitcode"]) == 0
    out = capsys.readouterr().out
    assert "deleted only with --prune" in out
    # The summary counts the orphan: live state does not match the manifests while it exists.
    assert out.splitlines()[-1] == "No changes to apply. 1 orphaned connector kept (--prune deletes)."
    assert "Live state matches" not in out
    assert main(["plan", str(manifests), "--live-state", path, "--prune", "--detailed-exitcode"]) == 2
    out = capsys.readouterr().out
    assert '- connector "ours" will be deleted' in out and 'connector "theirs" will be deleted' not in out


def test_invalid_manifests_exit_one_and_print_no_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: reconciler.io/v1\nkind: Connector\nmetadata: {name: x}\nspec: {tasksMax: 0}\n")
    assert main(["plan", str(bad)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "bad.yaml" in captured.err
    # plan never applies anything: its refusal says what it did not do, in its own words
    assert captured.err.rstrip().endswith("problem(s) in manifests; no plan was made")


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not a valid live-state snapshot"), ('{"connectors": []}', "connectors")],
)
def test_malformed_snapshot_is_an_error_naming_the_file(
    manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    path = tmp_path / "broken-live.json"
    path.write_text(content)
    assert main(["plan", str(manifests), "--live-state", str(path)]) == 1
    err = capsys.readouterr().err
    assert "broken-live.json" in err and message in err and "reconciler snapshot" in err


def test_missing_snapshot_file(manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(manifests), "--live-state", str(tmp_path / "nope.json")]) == 1
    assert "cannot read live-state file" in capsys.readouterr().err


def test_live_state_and_bootstrap_are_exclusive(
    manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["plan", str(manifests), "--live-state", str(snapshot(tmp_path, MATCHING)), "--bootstrap-servers", "h:1"]
    assert main(args) == 1
    assert "exclusive" in capsys.readouterr().err


def test_snapshot_wins_over_bootstrap_environment(
    manifests: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CI may export RECONCILER_BOOTSTRAP_SERVERS for other steps; an explicit snapshot wins.
    monkeypatch.setenv("RECONCILER_BOOTSTRAP_SERVERS", "127.0.0.1:1")
    args = ["plan", str(manifests), "--live-state", str(snapshot(tmp_path, MATCHING)), "--detailed-exitcode"]
    assert main(args) == 0


def test_plan_with_snapshot_imports_neither_kafka_client_nor_spark(manifests: Path, tmp_path: Path) -> None:
    live = snapshot(tmp_path, MATCHING)
    code = textwrap.dedent(
        f"""
        import sys
        from reconciler.cli.main import main
        rc = main(["plan", {str(manifests)!r}, "--live-state", {str(live)!r}, "--detailed-exitcode"])
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("confluent_kafka", "pyspark", "pyarrow"))
        print("RC", rc, "HEAVY", heavy)
        """
    )
    env = {"PLAN_TEST_SECRET": SECRET, "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "RC 0 HEAVY []" in result.stdout


def test_new_group_changes_nothing_without_kafka(manifests: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--new-group` is about a Kafka group: a snapshot or an empty state is planned as before."""
    from reconciler.app.plan import LiveSource, for_new_group

    for source in (LiveSource(), LiveSource(snapshot=tmp_path / "live.json", new_group=True)):
        assert for_new_group(source) == (source, None)
    assert main(["plan", str(manifests), "--new-group", "--detailed-exitcode"]) == 2
    assert "note:" not in capsys.readouterr().err
