"""load_manifests / load_or_raise: files, directories, documents, placeholders, duplicates, ordering."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from reconciler.core.diagnostics import Severity
from reconciler.core.models import SourceRef, TargetState
from reconciler.errors import InvalidManifests
from reconciler.manifests import LoadResult, load_manifests, load_or_raise, manifest_files
from reconciler.manifests.interpolate import resolve_config

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
VALID = FIXTURES / "valid"
ENV = {"ORDERS_DB_PASSWORD": "s3cret"}


# A Java connector class is accepted with any config (a Java Connect worker would check it), so
# these tests of reading files can carry whatever config they need.
ANY_CLASS = "com.example.connect.AnyConnector"


def manifest(name: str, **spec: object) -> str:
    lines = [f"apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: {name}\nspec:\n  class: {ANY_CLASS}\n"]
    lines += [f"  {key}: {value}\n" for key, value in spec.items()]
    return "".join(lines)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_valid_fixtures_load_sorted_by_name_with_their_source() -> None:
    result = load_manifests([VALID], env=ENV)
    assert result.diagnostics == []
    assert [c.name for c in result.connectors] == ["inventory-files", "legacy-export", "orders-archive", "orders-datagen"]
    by_name = {c.name: c for c in result.connectors}
    assert by_name["orders-archive"].source == SourceRef(file=str(VALID / "orders-archive.yaml"), line=2, column=1)
    assert by_name["inventory-files"].source == SourceRef(file=str(VALID / "sources.yaml"), line=14, column=1)
    assert by_name["inventory-files"].spec.state is TargetState.PAUSED
    assert result.files == [str(VALID / "nested" / "stopped.yml"), str(VALID / "orders-archive.yaml"), str(VALID / "sources.yaml")]


def test_placeholders_of_every_provider_are_kept() -> None:
    (archive,) = [c for c in load_or_raise([VALID / "orders-archive.yaml"], env=ENV)]
    assert archive.spec.config["consumer.override.sasl.password"] == "${env:ORDERS_DB_PASSWORD}"
    keystore = "${file:/etc/secrets/ssl.properties:keystore.password}"
    assert archive.spec.config["consumer.override.ssl.keystore.password"] == keystore
    assert archive.spec.config["flush.records"] == 500


def test_env_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The variable is checked against the process's environment; the placeholder is kept (KIP-297)."""
    monkeypatch.setenv("ORDERS_DB_PASSWORD", "from-os")
    (archive,) = load_or_raise([VALID / "orders-archive.yaml"])
    assert archive.spec.config["consumer.override.sasl.password"] == "${env:ORDERS_DB_PASSWORD}"
    monkeypatch.delenv("ORDERS_DB_PASSWORD")
    with pytest.raises(InvalidManifests):
        load_or_raise([VALID / "orders-archive.yaml"])


@pytest.mark.parametrize(
    ("value", "env", "resolved", "problems", "skipped"),
    [
        ("${env:A}", {"A": "1"}, "1", [], False),
        ("x-${env:A}-${env:B}-y", {"A": "1", "B": "2"}, "x-1-2-y", [], False),
        ("${env:A}", {"A": ""}, "", [], False),
        ("${env:A}", {}, "${env:A}", ["environment variable `A` is not set"], False),
        ("${env:A}${env:B}", {}, "${env:A}${env:B}", ["environment variable `A` is not set", "environment variable `B` is not set"], False),
        ("${file:/nonexistent/p:k}", {}, "${file:/nonexistent/p:k}", [], True),
        ("${directory:/nonexistent:k}", {}, "${directory:/nonexistent:k}", [], True),
        ("${vault:secret/data/x:pw}", {}, "${vault:secret/data/x:pw}", [], True),
        ("$${env:A} {env:A} $env:A", {"A": "1"}, "$1 {env:A} $env:A", [], False),
        ("${env:A}", {"A": "${env:B}"}, "${env:B}", [], False),  # single pass: values are not re-expanded
        ("${env:p:A}", {"A": "1"}, "${env:p:A}", ["`${env:p:A}`: the env provider takes no path"], False),
        ("no placeholder", {}, "no placeholder", [], False),
    ],
)
def test_resolve_for_checks(value: str, env: dict[str, str], resolved: str, problems: list[str], skipped: bool) -> None:
    got = resolve_config({"k": value, "n": 3}, env)
    assert (got.config, [p.message for p in got.problems]) == ({"k": resolved, "n": 3}, problems)
    assert got.skipped == ({"k"} if skipped else set())


def test_file_and_directory_placeholders_are_resolved_for_the_checks(tmp_path: Path) -> None:
    (tmp_path / "s.properties").write_text("pw = from-file\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "name").write_text("from-dir\n")
    got = resolve_config({"a": f"${{file:{tmp_path}/s.properties:pw}}", "b": f"${{directory:{tmp_path}/d:name}}"}, {})
    assert got == ({"a": "from-file", "b": "from-dir\n"}, [], frozenset())


def test_a_key_whose_placeholder_cannot_be_resolved_here_is_not_judged(tmp_path: Path) -> None:
    """datagen's `count` is an integer: `${file:…}` of a file that exists only where the
    connector runs is no error, and the same file present gives the value to judge."""
    secret = tmp_path / "s.properties"
    config = f"{{topic: out, count: '${{file:{secret}:count}}'}}"
    file = write(tmp_path / "a.yaml", manifest("a", config=config).replace(ANY_CLASS, "datagen"))
    (connector,) = load_or_raise([file], env={})
    assert connector.spec.config["count"] == f"${{file:{secret}:count}}"
    secret.write_text("count=many\n")
    rendered = "\n".join(d.render() for d in load_manifests([file], env={}, cache=False).errors)
    assert "spec.config.count: must be an integer" in rendered and "many" not in rendered


def test_placeholders_only_in_config(tmp_path: Path) -> None:
    file = write(tmp_path / "a.yaml", manifest("a", sensitive="['${env:NOPE}']"))
    (connector,) = load_or_raise([file], env={})
    assert connector.spec.sensitive == ["${env:NOPE}"]


def test_directories_recursive_both_suffixes_hidden_skipped_others_ignored(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", manifest("b"))
    write(tmp_path / "a" / "deep" / "c.yml", manifest("c"))
    write(tmp_path / "notes.txt", "not yaml: [")
    write(tmp_path / "a" / "x.json", "{}")
    write(tmp_path / ".github" / "ci.yml", "on: push\n")
    write(tmp_path / ".hidden.yaml", "nope: 1\n")
    result = load_manifests([tmp_path], env={})
    assert result.diagnostics == []
    assert [c.name for c in result.connectors] == ["b", "c"]
    assert result.files == [str(tmp_path / "a" / "deep" / "c.yml"), str(tmp_path / "b.yaml")]


def test_a_file_given_twice_or_inside_a_given_directory_is_read_once(tmp_path: Path) -> None:
    file = write(tmp_path / "a.yaml", manifest("a"))
    result = load_manifests([tmp_path, file, str(file)], env={})
    assert (result.files, result.diagnostics, len(result.connectors)) == ([str(file)], [], 1)


def test_symlinked_directory_loop_terminates(tmp_path: Path) -> None:
    write(tmp_path / "d" / "a.yaml", manifest("a"))
    os.symlink(tmp_path / "d", tmp_path / "d" / "loop")
    result = load_manifests([tmp_path], env={})
    assert [c.name for c in result.connectors] == ["a"]


def test_missing_path_is_a_diagnostic_and_empty_directory_a_warning(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = load_manifests([tmp_path / "nope.yaml", tmp_path / "empty"], env={})
    assert [(d.severity, d.render()) for d in result.diagnostics] == [
        (Severity.ERROR, f"{tmp_path / 'nope.yaml'}: no such file or directory"),
        (Severity.WARNING, f"warning: {tmp_path / 'empty'}: no *.yaml or *.yml files in this directory"),
    ]
    assert not result.ok


def test_only_warnings_is_ok(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = load_manifests([tmp_path / "empty"], env={})
    assert result.ok and result.errors == []


def test_duplicate_names_across_files_name_both_locations(tmp_path: Path) -> None:
    first = write(tmp_path / "1.yaml", manifest("same"))
    second = write(tmp_path / "2.yaml", "# comment\n" + manifest("same"))
    result = load_manifests([tmp_path], env={})
    assert [d.render() for d in result.diagnostics] == [
        f"{second}:5:9: metadata.name: duplicate connector name `same`: also declared at {first}:4:9"
        " (hint: connector names must be unique across all manifest files)"
    ]
    assert [c.source.file for c in result.connectors if c.source] == [str(first)]


def test_duplicate_names_within_one_file(tmp_path: Path) -> None:
    file = write(tmp_path / "a.yaml", manifest("same") + "---\n" + manifest("same"))
    (diagnostic,) = load_manifests([file], env={}).diagnostics
    assert diagnostic.render().startswith(f"{file}:11:9: metadata.name: duplicate connector name `same`: also declared at {file}:4:9")


def test_diagnostics_sorted_by_file_line_column(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", manifest("b", tasksMax=0, state="gone"))
    write(tmp_path / "a.yaml", manifest("a", extra=1))
    result = load_manifests([tmp_path / "b.yaml", tmp_path / "a.yaml"], env={})
    positions = [(d.source.file, d.source.line, d.source.column) for d in result.diagnostics if d.source]
    assert positions == sorted(positions) and len(positions) == 3


def test_not_utf8_and_bom(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"apiVersion: reconciler.io/v1\nkind: \xff\n")
    bom = tmp_path / "bom.yaml"
    bom.write_bytes(b"\xef\xbb\xbf" + manifest("bom").encode())
    result = load_manifests([bad, bom], env={})
    assert [d.render() for d in result.diagnostics] == [f"{bad}:2:7: not UTF-8 text (hint: save the file as UTF-8)"]
    assert [c.name for c in result.connectors] == ["bom"]


def test_control_character_is_a_positioned_syntax_error(tmp_path: Path) -> None:
    file = write(tmp_path / "a.yaml", "a: b\nc: d\x07\n")
    (diagnostic,) = load_manifests([file], env={}).diagnostics
    assert diagnostic.source == SourceRef(file=str(file), line=2, column=5)
    assert "control characters are not allowed" in diagnostic.summary


def test_yaml_11_oddities_kept_as_text(tmp_path: Path) -> None:
    config = "  config:\n    at: 12:30\n    day: 2026-11-22\n    on: yes\n    n: 10\n    zero: 0\n    octal: 0755\n"
    (connector,) = load_or_raise([write(tmp_path / "a.yaml", manifest("a") + config)], env={})
    assert connector.spec.config == {
        "at": "12:30",  # not 750 (base 60)
        "day": "2026-11-22",  # not a date
        "on": True,  # the key is text, the value YAML's boolean
        "n": 10,
        "zero": 0,
        "octal": 493,  # YAML 1.1 octal, as PyYAML reads it
    }


def test_load_or_raise_carries_every_diagnostic(tmp_path: Path) -> None:
    write(tmp_path / "a.yaml", manifest("a", tasksMax=0))
    write(tmp_path / "b.yaml", manifest("b", state="gone"))
    with pytest.raises(InvalidManifests) as caught:
        load_or_raise([tmp_path], env={})
    assert [d.field_path for d in caught.value.diagnostics] == ["spec.tasksMax", "spec.state"]


def test_load_result_is_frozen() -> None:
    result = LoadResult(connectors=[], diagnostics=[])
    with pytest.raises(AttributeError):
        result.connectors = []  # type: ignore[misc]


def test_manifest_files_order_is_stable(tmp_path: Path) -> None:
    for name in ["b.yaml", "a-b.yaml", "a/x.yaml", "A.yml"]:
        write(tmp_path / name, manifest("x"))
    files, problems = manifest_files([tmp_path])
    assert problems == []
    assert [Path(f).relative_to(tmp_path).as_posix() for f in files] == ["A.yml", "a/x.yaml", "a-b.yaml", "b.yaml"]


def generated(count: int) -> str:
    return "---\n".join(
        manifest(f"conn-{i:05d}", tasksMax=2, config=f"{{topics: t{i}, path: /d/{i}, password: '${{env:PW}}'}}")
        for i in range(count)
    )


def test_loading_is_fast(tmp_path: Path) -> None:
    """10,000 manifests must load well within the 3 s validate+plan budget (bench/plan_scale.py).

    Measured on the 2-core dev machine: ~0.9 s for 10,000 documents in one file, ~1.3 s for
    10,000 files. 2,000 here keeps the test quick; the bound is loose for a loaded CI machine.
    """
    file = write(tmp_path / "many.yaml", generated(2_000))
    started = time.perf_counter()
    result = load_manifests([file], env={"PW": "x"})
    elapsed = time.perf_counter() - started
    assert (len(result.connectors), result.diagnostics) == (2_000, [])
    assert elapsed < 1.5, f"loading 2,000 manifests took {elapsed:.2f} s"


def test_keys_from_placeholders_are_sensitive(tmp_path: Path) -> None:
    file = write(
        tmp_path / "a.yaml",
        manifest("a", config="{conn: '${env:URI}', tls: '${file:/etc/s.properties:pw}', plain: x}", sensitive="[extra]"),
    )
    (connector,) = load_or_raise([file], env={"URI": "mongodb://u:pw-from-env@h"})
    assert connector.interpolated == {"conn", "tls"}
    assert connector.sensitive_keys == {"conn", "tls", "extra"}


def test_a_refused_documents_sensitive_values_are_never_quoted(tmp_path: Path) -> None:
    """Its diagnostics are masked by the same rule as a placeholder's value: the connector is
    refused, so the process's scrubber never learns its values (docs/secrets.md)."""
    config = "{topic: out, count: notanumber1234}"
    file = write(tmp_path / "a.yaml", manifest("a", config=config, sensitive="[count, topic]").replace(ANY_CLASS, "datagen"))
    rendered = "\n".join(d.render() for d in load_manifests([file], env={}, cache=False).errors)
    assert "spec.config.count: must be an integer; got '(sensitive)'" in rendered
    assert "notanumber1234" not in rendered
