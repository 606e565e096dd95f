"""A Java Connect worker with the config providers configured (`devtools.connect.CONFIG_PROVIDERS`:
`config.providers=env,file,directory` and Kafka's own classes) runs connectors we applied with
`${env:…}` and `${file:…}` placeholders: it resolves them with its own providers (KIP-297), its
FileStreamSink writes to the resolved files, and the config topic holds only placeholders, in
the task configs Java writes too (`AbstractHerder.reverseTransform`). docs/secrets.md.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from java_read_support import FILE_SINK, JavaSide, OurSide, manifest, produce_raw, unique, wait_until
from reconciler.devtools.connect import CONFIG_PROVIDERS, RunningConnect, start_connect
from reconciler.kafka.io.consume import read_to_end

SINK_FILE_VAR = "RECONCILER_IT_JAVA_SINK_FILE"


@pytest.fixture(scope="module")
def out_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("java-providers")


@pytest.fixture(scope="module")
def worker(kafka: Any, out_dir: Path) -> Iterator[RunningConnect]:
    """A worker of its own: the `env` provider reads the environment the JVM started with."""
    group = f"java-providers-{uuid.uuid4().hex[:8]}"
    environment = {SINK_FILE_VAR: str(out_dir / "from-env.txt")}
    with start_connect(kafka.bootstrap, group, out_dir / "logs", extra=CONFIG_PROVIDERS, environment=environment) as running:
        yield running
        logged = running.log_errors()
        assert not logged, "the Java worker logged errors:\n" + "\n".join(logged[:20])


def test_a_java_worker_resolves_the_placeholders_we_applied(
    kafka: Any, worker: RunningConnect, out_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SINK_FILE_VAR, str(out_dir / "from-env.txt"))  # validate checks it here too
    (out_dir / "sink.properties").write_text(f"file={out_dir / 'from-file.txt'}\n")
    java, ours = JavaSide(worker), OurSide(kafka.settings(worker.group_id))
    env_name, file_name = unique("env-sink"), unique("file-sink")
    placeholders = {env_name: f"${{env:{SINK_FILE_VAR}}}", file_name: f"${{file:{out_dir}/sink.properties:file}}"}
    manifests = out_dir / "manifests"
    for name, placeholder in placeholders.items():
        manifest(manifests, name, FILE_SINK, {"topics": f"{name}-in", "file": placeholder}, "running")
    code, out = ours.run("apply", str(manifests))
    assert code == 0, out

    for name in placeholders:
        java.wait_for_states(name, "RUNNING", ["RUNNING"])
        produce_raw(ours.settings, f"{name}-in", [(b"k", f"line of {name}".encode())])
    for name, target in ((env_name, "from-env.txt"), (file_name, "from-file.txt")):
        wait_until(f"{name} to write {target}", lambda t=target, n=name: (out_dir / t).exists() and f"line of {n}" in (out_dir / t).read_text())

    settings = ours.settings
    records = [((m.key or b"").decode(), m.value) for m in read_to_end(settings, settings.topics.configs)]
    raw = b"".join(value or b"" for _, value in records)
    assert b"from-env.txt" not in raw and b"from-file.txt" not in raw
    for name, placeholder in placeholders.items():
        stored = [json.loads(v)["properties"] for k, v in records if v and k in (f"connector-{name}", f"task-{name}-0")]
        assert len(stored) >= 2 and {config["file"] for config in stored} == {placeholder}, stored
    # Java's REST shows the placeholder too, as our plan compares it: nothing to change.
    assert java.call("GET", f"/connectors/{env_name}/config", expect=200)["file"] == placeholders[env_name]
    code, out = ours.plan(manifests)
    assert code == 0, out
