"""Config providers (KIP-297): `core.placeholders` (transform, reverse_transform), the three
providers of `kafka.io.config_providers`, and the runtime's start of a connector with them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from reconciler import masking
from reconciler.core.live import LiveConnector
from reconciler.core.placeholders import ProviderFailure, Variable, reverse_transform, transform
from reconciler.kafka.io import config_providers
from reconciler.runtime.batch.lifecycle import start_connector, stop_connector
from reconciler.runtime.batch.statuses import StartFailed, Started


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    (tmp_path / "db.properties").write_text("# the database\npassword = from-file-s3cret\nuser: app\n")
    (tmp_path / "mounted").mkdir()
    (tmp_path / "mounted" / "api-token").write_text("from-dir-t0ken")
    (tmp_path / "mounted" / "sub").mkdir()
    return tmp_path


def test_each_provider_resolves_its_placeholders(secrets: Path) -> None:
    config = {
        "a": "${env:PW}",
        "b": f"${{file:{secrets}/db.properties:password}}",
        "c": f"user=${{file:{secrets}/db.properties:user}};pw=${{env:PW}}",
        "d": f"${{directory:{secrets}/mounted:api-token}}",
        "plain": "x",
        "none": None,
    }
    got = config_providers.resolve(config, {"PW": "from-env-s3cret"})
    assert got.config == {
        "a": "from-env-s3cret", "b": "from-file-s3cret", "c": "user=app;pw=from-env-s3cret",
        "d": "from-dir-t0ken", "plain": "x", "none": None,
    }
    assert got.complete and got.filled == {"a", "b", "c", "d"}
    assert got.secrets() == {"from-env-s3cret", "from-file-s3cret", "user=app;pw=from-env-s3cret", "from-dir-t0ken"}
    # A value a placeholder gave inside a longer one is hunted for alone too; a short one is not.
    part = config_providers.resolve({"k": "tenant-${env:PW}", "s": "${env:S}"}, {"PW": "s3cret-part", "S": "abc"})
    assert part.secrets() == {"tenant-s3cret-part", "s3cret-part"}


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("${env:NOPE}", "provider 'env' key 'NOPE': the environment variable is not set"),
        ("${env:p:K}", "provider 'env' key 'K': the env provider takes no path"),
        ("${file:{d}/db.properties:nokey}", "provider 'file' key 'nokey': no such key"),
        ("${file:{d}/missing.properties:password}", "key 'password': cannot read the file: No such file or directory"),
        ("${directory:{d}/mounted:sub}", "key 'sub': no such file in the directory"),
        ("${directory:{d}/mounted:../db.properties}", "no such file in the directory"),
        ("${directory:{d}/db.properties:x}", "key 'x': the path is not a directory"),
        ("${vault:secret/x:pw}", "no config provider named 'vault'"),
    ],
)
def test_what_cannot_be_resolved_is_named_never_a_value(secrets: Path, value: str, reason: str) -> None:
    got = config_providers.resolve({"k": value.replace("{d}", str(secrets)), "other": "${env:PW}"}, {"PW": "s3cret-pw"})
    (unresolved,) = got.unresolved
    rendered = unresolved.render()
    assert rendered.startswith("config `k`: ") and reason.replace("{d}", str(secrets)) in rendered
    assert got.config["k"] == value.replace("{d}", str(secrets))  # left as written
    assert got.filled == {"other"} and "s3cret" not in rendered and str(secrets) not in rendered  # no path


def test_each_provider_path_is_read_once_per_transform() -> None:
    asked: list[tuple[str, str, frozenset[str]]] = []

    def lookup(provider: str, path: str, keys: frozenset[str]) -> Mapping[str, str] | None:
        asked.append((provider, path, keys))
        return {key: key.upper() for key in keys}

    got = transform({"a": "${file:/p:x}", "b": "${file:/p:y}-${env:Z}", "c": "${file:/q:x}"}, lookup)
    assert got.config == {"a": "X", "b": "Y-Z", "c": "X"}
    assert sorted(asked) == [("env", "", {"Z"}), ("file", "/p", {"x", "y"}), ("file", "/q", {"x"})]


def test_a_failing_path_fails_only_its_placeholders() -> None:
    def lookup(provider: str, path: str, keys: frozenset[str]) -> Mapping[str, str] | None:
        if path == "/bad":
            raise ProviderFailure("cannot read /bad")
        return {key: "v" for key in keys}

    got = transform({"a": "${file:/bad:x}", "b": "${file:/good:x}"}, lookup)
    assert [(u.config_key, u.variable, u.reason) for u in got.unresolved] == [("a", Variable("file", "/bad", "x"), "cannot read /bad")]
    assert got.config["b"] == "v" and got.filled == {"b"}


def test_reverse_transform_puts_the_placeholders_back() -> None:
    """Java's rule (a connector key with a placeholder gets its raw value in every task config
    that has the key), and a whole value equal to what a placeholder gave, under another key."""
    raw = {"pw": "${env:PW}", "path": "${file:/s:dir}", "port": "${env:PORT}", "plain": "x"}
    resolved = transform(raw, lambda p, path, keys: {"PW": "s3cret-pw", "dir": "/data/out", "PORT": "1"})
    tasks = [
        {"pw": "s3cret-pw", "path": "/data/out/task-0", "copy": "s3cret-pw", "port": "1", "n": "1", "plain": "x"},
        {"task.index": "1"},
    ]
    assert reverse_transform(raw, tasks, resolved) == [
        {"pw": "${env:PW}", "path": "${file:/s:dir}", "copy": "${env:PW}", "port": "${env:PORT}", "n": "1", "plain": "x"},
        {"task.index": "1"},
    ]


def file_sink(tmp_path: Path, **config: str) -> LiveConnector:
    props = {"name": "c", "connector.class": "file-sink", "tasks.max": "2", "topics": "t", **config}
    return LiveConnector(name="c", config=props)


def test_a_started_connector_stores_placeholders_and_runs_with_values(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    masking.forget_all()
    out = secrets / "out"
    (secrets / "paths.properties").write_text(f"dir={out}\n")
    monkeypatch.setenv("SINK_TOKEN_TEST", "env-t0ken-value")
    path = f"${{file:{secrets}/paths.properties:dir}}"
    started = start_connector(file_sink(secrets, path=path, **{"extra.token": "${env:SINK_TOKEN_TEST}"}))
    assert isinstance(started, Started) and started.run_configs is not None and started.connector_config is not None
    assert [c["path"] for c in started.task_configs] == [path, path]
    assert [c["extra.token"] for c in started.task_configs] == ["${env:SINK_TOKEN_TEST}"] * 2
    assert [c["path"] for c in started.run_configs] == [str(out)] * 2
    assert started.connector_config["extra.token"] == "env-t0ken-value"
    assert {"env-t0ken-value", str(out)} <= started.secrets <= masking.known()


def test_a_rotated_secret_is_read_at_the_next_start(secrets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    connector = file_sink(secrets, path="/x", **{"extra.token": "${env:SINK_TOKEN_TEST}"})
    monkeypatch.setenv("SINK_TOKEN_TEST", "first-value")
    first = start_connector(connector)
    monkeypatch.setenv("SINK_TOKEN_TEST", "second-value")
    second = start_connector(connector)
    assert isinstance(first, Started) and isinstance(second, Started)
    assert first.task_configs == second.task_configs  # no new task generation
    assert first.run_configs and second.run_configs
    assert (first.run_configs[0]["extra.token"], second.run_configs[0]["extra.token"]) == ("first-value", "second-value")


def test_an_unresolvable_placeholder_fails_the_connector_naming_provider_and_key(
    secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SINK_MISSING_TEST", raising=False)
    monkeypatch.setenv("SINK_TOKEN_TEST", "present-s3cret")
    result = start_connector(file_sink(secrets, path="${env:SINK_MISSING_TEST}", **{"extra.token": "${env:SINK_TOKEN_TEST}"}))
    assert isinstance(result, StartFailed)
    assert "config `path`: provider 'env' key 'SINK_MISSING_TEST': the environment variable is not set" in result.trace
    assert "present-s3cret" not in result.trace


def test_stop_gets_the_resolved_config(secrets: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SINK_PATH_TEST", str(secrets))
    assert stop_connector(file_sink(secrets, path="${env:SINK_PATH_TEST}")) is None


def test_a_failed_start_carries_what_its_placeholders_gave(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The plugin's error quotes the resolved path; the status book scrubs it with these."""
    marker = tmp_path / "marker-s3cret"
    marker.touch()
    monkeypatch.setenv("FAULTY_MARKER_TEST", str(marker))
    config = {"connector.class": "reconciler.connectors.faulty:FaultySource", "topic": "t", "count": "5",
              "fail.connector.if.exists": "${env:FAULTY_MARKER_TEST}"}
    result = start_connector(LiveConnector(name="c", config={"name": "c", **config}))
    assert isinstance(result, StartFailed) and str(marker) in result.trace
    assert str(marker) in result.secrets
