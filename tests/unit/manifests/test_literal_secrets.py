"""Literal secrets: warnings of `validate` and `plan` at the value's position, errors with
`validate --strict`, never quoting the value (issue 27, item 2)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from reconciler.cli.main import main
from reconciler.core.diagnostics import Severity
from reconciler.core.redact import literal_secret
from reconciler.manifests import load_manifests

MANIFEST = textwrap.dedent(
    """\
    apiVersion: reconciler.io/v1
    kind: Connector
    metadata:
      name: orders
    spec:
      class: file-sink
      config:
        topics: orders
        path: /tmp/orders
        consumer.override.sasl.password: hunter2-literal
        consumer.override.sasl.username: ${env:LITERAL_TEST_USER}
    """
)
WHERE = ":10:38: spec.config[\"consumer.override.sasl.password\"]: literal secret"


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LITERAL_TEST_USER", "app")
    path = tmp_path / "orders.yaml"
    path.write_text(MANIFEST)
    return path


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("sasl.password", "hunter2", "key"),
        ("ssl.key.password", "12345678", "key"),
        ("api.key", "abcd", "key"),
        ("sasl.jaas.config", 'x.PlainLoginModule required username="u" password="p";', "key"),
        ("connection.url", "postgresql://app:pw@db/app", "inside"),
        ("connection.url", "jdbc:sqlserver://db;user=app;password=pw", "inside"),
        ("sasl.oauthbearer.token.endpoint.url", "https://app:pw@idp/token", "inside"),
        # no literal secret:
        ("sasl.password", "${env:PW}", None),
        ("sasl.password", "${file:/etc/kafka/s.properties:pw}", None),
        ("sasl.jaas.config", 'x.PlainLoginModule required username="u" password="${env:PW}";', None),
        ("connection.url", "postgresql://app:${env:PW}@db/app", None),
        ("connection.url", "jdbc:x://db/app?user=app&password=${env:PW}&ssl=true", None),
        ("sasl.oauthbearer.token.endpoint.url", "https://idp/token", None),
        ("gcs.credentials.path", "/etc/gcs.json", None),
        ("ssl.key.password", "", None),
        ("password.required", "true", None),
        ("primary.key.mode", "record_key", None),
        ("key.converter", "org.apache.kafka.connect.storage.StringConverter", None),
        ("topics", "orders", None),
    ],
)
def test_what_is_a_literal_secret(key: str, value: str, why: str | None) -> None:
    assert literal_secret(key, value) == why


def test_validate_warns_at_the_value_and_passes(manifest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(manifest)]) == 0
    out, err = capsys.readouterr()
    assert f"warning: {manifest}{WHERE}" in err and "1 connector(s) valid, 1 warning(s)" in out
    assert "hunter2" not in out + err


def test_validate_strict_fails_on_it(manifest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--strict", str(manifest)]) == 1
    err = capsys.readouterr().err
    assert f"\n{manifest}{WHERE}" in f"\n{err}" and "error: 1 problem(s) in 1 file(s)" in err
    assert "hunter2" not in err


def test_validate_strict_json_says_error(manifest: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--strict", "--format", "json", str(manifest)]) == 1
    [record] = json.loads(capsys.readouterr().out)
    assert (record["severity"], record["line"], record["column"]) == ("error", 10, 38)


def test_a_placeholder_filled_from_the_environment_is_no_literal_secret(
    manifest: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest.write_text(MANIFEST.replace("hunter2-literal", "${env:LITERAL_TEST_USER}"))
    assert main(["validate", "--strict", str(manifest)]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("fmt", ["text", "markdown", "json"])
def test_plan_shows_the_warning_in_every_format(manifest: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    assert main(["plan", "--format", fmt, str(manifest)]) == 0
    out = capsys.readouterr().out
    assert "hunter2" not in out
    if fmt != "json":
        assert f"{manifest}{WHERE}" in out
        return
    [warning] = json.loads(out)["diagnostics"]
    assert warning["severity"] == "warning" and warning["summary"].startswith("literal secret")
    assert warning["source"] == {"file": str(manifest), "line": 10, "column": 38}


def test_a_refused_document_reports_its_literal_secret_too(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(MANIFEST.replace("topics: orders", "topics: 5\n    no.such.setting: x"))
    result = load_manifests([path], env={"LITERAL_TEST_USER": "app"})
    assert not result.ok
    assert [d.field_path for d in result.diagnostics if d.severity is Severity.WARNING] == [
        'spec.config["consumer.override.sasl.password"]'
    ]
