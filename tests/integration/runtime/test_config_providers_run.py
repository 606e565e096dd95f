"""Config providers (KIP-297) end to end on the real broker and Spark: `${env:}`, `${file:}` and
`${directory:}` placeholders stay placeholders in the config topic (connector and task configs,
read back with a plain consumer), the tasks run with the resolved values, a rotated file is read
at the next batch without a plan change, an unresolvable placeholder fails only its connector,
and a group that holds a resolved secret from an older version is told so by `plan` and
rewritten by `apply`. docs/secrets.md.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.manifests import load_or_raise
from run_support import Pipeline, pipeline
from run_support import produce_ids

__all__ = ["pipeline"]  # the fixture

pytestmark = pytest.mark.spark

ENV_SECRET = "env-s3cret-value-7f3a"
FILE_SECRET = "file-s3cret-value-91c2"
DIR_SECRET = "dir-s3cret-value-4b8d"


def config_topic(pipeline: Pipeline) -> list[tuple[str, bytes]]:
    settings = pipeline.settings
    return [((m.key or b"").decode(), m.value or b"") for m in read_to_end(settings, settings.topics.configs)]


def properties(records: list[tuple[str, bytes]], prefix: str) -> list[dict[str, str]]:
    return [json.loads(value)["properties"] for key, value in records if key.startswith(prefix) and value]


def lines_under(root: Path) -> set[int]:
    return {int(line) for file in root.rglob("*.txt") if not file.name.startswith(".") for line in file.read_text().split()}


@pytest.fixture
def secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RECONCILER_IT_ENV_SECRET", ENV_SECRET)
    (tmp_path / "sink.properties").write_text(f"dir={tmp_path / 'out-1'}\npassword={FILE_SECRET}\n")
    (tmp_path / "mounted").mkdir()
    (tmp_path / "mounted" / "client-secret").write_text(DIR_SECRET)
    return tmp_path


def test_secrets_stay_placeholders_in_the_topic_and_reach_the_tasks_resolved(pipeline: Pipeline, secrets: Path) -> None:
    topic = pipeline.topic("in", 2)
    produce_ids(pipeline.settings, topic, range(100))
    config = {
        "topics": topic,
        "path": f"${{file:{secrets}/sink.properties:dir}}",
        # Client overrides resolve too: librdkafka takes them (PLAINTEXT ignores SASL settings).
        "consumer.override.sasl.password": "${env:RECONCILER_IT_ENV_SECRET}",
        "consumer.override.sasl.username": f"${{directory:{secrets}/mounted:client-secret}}",
    }
    pipeline.connector("sec", "file-sink", config, tasks_max=2)
    pipeline.tick()

    records = config_topic(pipeline)
    raw = b"".join(value for _, value in records)
    for secret in (ENV_SECRET, FILE_SECRET, DIR_SECRET, str(secrets / "out-1")):
        assert secret.encode() not in raw, f"{secret} is in the config topic"
    (stored,) = properties(records, "connector-sec")
    assert {key: stored[key] for key in config} == config
    tasks = properties(records, "task-sec-")
    assert len(tasks) == 2 and all(task["path"] == config["path"] for task in tasks)
    assert all(task["consumer.override.sasl.password"] == "${env:RECONCILER_IT_ENV_SECRET}" for task in tasks)
    assert lines_under(secrets / "out-1") == set(range(100)), "the tasks wrote where the file provider points"
    assert pipeline.states("sec") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})

    # Rotated: the next batch reads the file anew; nothing is written to the config topic.
    (secrets / "sink.properties").write_text(f"dir={secrets / 'out-2'}\npassword={FILE_SECRET}\n")
    produce_ids(pipeline.settings, topic, range(100, 150))
    pipeline.tick()
    assert lines_under(secrets / "out-2") == set(range(100, 150))
    assert config_topic(pipeline) == records


def test_an_unresolvable_placeholder_fails_its_connector_only(
    pipeline: Pipeline, secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RECONCILER_IT_LATER_UNSET", "set-at-validate-time")
    topic = pipeline.topic("in", 1)
    produce_ids(pipeline.settings, topic, range(10))
    pipeline.connector("broken", "file-sink", {"topics": topic, "path": "${env:RECONCILER_IT_LATER_UNSET}"})
    pipeline.connector("fine", "file-sink", {"topics": topic, "path": str(secrets / "fine")})
    loaded = load_or_raise([str(pipeline.dir)])  # validate found the variable set
    monkeypatch.delenv("RECONCILER_IT_LATER_UNSET")  # gone by the time the runtime starts it
    pipeline.worker.tick(loaded, manifest_paths=[str(pipeline.dir)])
    state, _ = pipeline.states("broken")
    assert state == "FAILED"
    status = pipeline.state("broken").connector_status
    assert status is not None and status.trace is not None
    assert "config `path`: provider 'env' key 'RECONCILER_IT_LATER_UNSET'" in status.trace
    assert "set-at-validate-time" not in status.trace
    assert pipeline.states("fine")[0] == "RUNNING" and lines_under(secrets / "fine") == set(range(10))


def cli(pipeline: Pipeline, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main([*args, "--bootstrap-servers", pipeline.settings.bootstrap_servers, "--group-id", pipeline.settings.group_id])
    return code, out.getvalue()


def test_a_group_holding_resolved_secrets_is_named_by_plan_and_rewritten_by_apply(pipeline: Pipeline, secrets: Path) -> None:
    """What an older version left: the resolved value in the connector and task configs."""
    topic = pipeline.topic("in", 1)
    config = {"topics": topic, "path": str(secrets / "o"), "consumer.override.sasl.password": "${env:RECONCILER_IT_ENV_SECRET}"}
    pipeline.connector("old", "file-sink", config)
    literal = {"name": "old", "connector.class": "file-sink", "tasks.max": "1", **config,
               "consumer.override.sasl.password": ENV_SECRET}
    with TransactionalWriter(pipeline.settings, transactional_id=f"old-{pipeline.settings.group_id}") as writer:
        writer.write([rec.connector_config_record("old", literal), rec.task_config_record("old", 0, literal),
                      rec.commit_record("old", 1)])

    code, out = cli(pipeline, "plan", str(pipeline.dir), "--detailed-exitcode")
    assert code == 2, out
    assert "the config topic holds a literal value where the manifest has a placeholder: `consumer.override.sasl.password`" in out
    assert 'connector "old"' in out and ENV_SECRET not in out

    assert cli(pipeline, "apply", str(pipeline.dir))[0] == 0
    pipeline.tick()  # the runtime rewrites the task configs from the placeholders
    latest = {key: value for key, value in config_topic(pipeline)}
    assert json.loads(latest["connector-old"])["properties"]["consumer.override.sasl.password"] == "${env:RECONCILER_IT_ENV_SECRET}"
    assert json.loads(latest["task-old-0"])["properties"]["consumer.override.sasl.password"] == "${env:RECONCILER_IT_ENV_SECRET}"
    code, out = cli(pipeline, "plan", str(pipeline.dir), "--detailed-exitcode")
    assert code == 0 and "literal" not in out, out
