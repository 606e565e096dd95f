"""The manifest cache: unchanged files are not parsed again, and the result never differs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reconciler.manifests import cache, load_manifests, loader, reading
from reconciler.manifests.loader import LoadResult


# A Java connector class is accepted with any config (a Java Connect worker would check it), so
# these tests of reading files can carry whatever config they need.
ANY_CLASS = "com.example.connect.AnyConnector"


def manifest(name: str, extra: str = "") -> str:
    return f"apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: {name}\nspec:\n  class: {ANY_CLASS}\n{extra}"


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_VAR, str(directory))
    monkeypatch.setattr(loader, "CACHE_MIN_BYTES", 0)  # cache these small test trees too
    return directory


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "manifests"
    root.mkdir()
    (root / "a.yaml").write_text(manifest("a", "  config:\n    password: ${env:PASSWORD}\n"))
    (root / "b.yaml").write_text("# two documents\n" + manifest("b1") + "---\n" + manifest("b2", "  state: stopped\n"))
    (root / "c.yaml").write_text(manifest("c", "  tasksMax: 0\n"))  # invalid: never cached
    return root


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files parsed from YAML (not served by the cache), in order."""
    files: list[str] = []
    parse_file = reading.parse_file

    def counting(file: str, raw: bytes, env: dict[str, str]) -> reading.FileResult:
        files.append(Path(file).name)
        return parse_file(file, raw, env)

    monkeypatch.setattr(reading, "parse_file", counting)
    return files


ENV = {"PASSWORD": "s3cret"}


def load(tree: Path, env: dict[str, str] = ENV) -> LoadResult:
    return load_manifests([tree], env=env, workers=1)


def assert_same(result: LoadResult, expected: LoadResult) -> None:
    assert result.connectors == expected.connectors
    assert result.diagnostics == expected.diagnostics
    assert result.notes == expected.notes


def test_unchanged_files_are_not_parsed_again(tree: Path, cache_dir: Path, parsed: list[str]) -> None:
    first = load(tree)
    assert parsed == ["a.yaml", "b.yaml", "c.yaml"]
    assert [c.name for c in first.connectors] == ["a", "b1", "b2"]
    assert len(first.errors) == 1
    (written,) = cache_dir.glob("manifests-*.json")
    assert written.stat().st_mode & 0o077 == 0 or cache_dir.stat().st_mode & 0o077 == 0

    parsed.clear()
    second = load(tree)
    assert parsed == ["c.yaml"]  # the file with a problem is parsed for its positions
    assert_same(second, first)
    assert second.connectors[0].spec.config["password"] == "${env:PASSWORD}"  # kept for the runtime (KIP-297)
    # The Java class notes of cached documents still point at their `spec.class`.
    assert [f"{n.source}" for n in second.notes] == [f"{tree / f}:10" for f in ("a.yaml:6", "b.yaml:7", "b.yaml:14")]


def test_the_cache_keeps_no_resolved_secret(tree: Path, cache_dir: Path) -> None:
    load(tree)
    (written,) = cache_dir.glob("manifests-*.json")
    text = written.read_text()
    assert "${env:PASSWORD}" in text
    assert "s3cret" not in text


def test_keys_from_placeholders_stay_sensitive_when_served_by_the_cache(
    tree: Path, cache_dir: Path, parsed: list[str]
) -> None:
    """The cache keeps the placeholder text; the fact that `password` came from the environment
    is found again from it, so a cached load masks what a parsed one masks."""
    load(tree)
    parsed.clear()
    cached = {c.name: c for c in load(tree).connectors}
    assert "a.yaml" not in parsed
    assert cached["a"].interpolated == {"password"} and cached["a"].sensitive_keys == {"password"}
    assert cached["b1"].interpolated == frozenset()


def test_an_edited_file_is_parsed_again(tree: Path, cache_dir: Path, parsed: list[str]) -> None:
    load(tree)
    (tree / "a.yaml").write_text(manifest("a", "  config:\n    password: ${env:PASSWORD}\n  state: paused\n"))
    parsed.clear()
    result = load(tree)
    assert parsed == ["a.yaml", "c.yaml"]
    assert_same(result, load_manifests([tree], env=ENV, cache=False))


def test_a_cached_document_that_fails_a_check_now_is_reported_with_its_position(
    tree: Path, cache_dir: Path, parsed: list[str]
) -> None:
    load(tree)
    parsed.clear()
    result = load(tree, env={})  # PASSWORD is no longer set
    assert parsed == ["a.yaml", "c.yaml"]
    assert_same(result, load_manifests([tree], env={}, cache=False))
    rendered = [d.render() for d in result.errors]
    assert any(line.startswith(f"{tree / 'a.yaml'}:8:15: spec.config.password") for line in rendered), rendered


def test_a_cached_document_its_plugin_refuses_now_is_reported_with_its_position(
    tree: Path, cache_dir: Path, parsed: list[str]
) -> None:
    """The plugin checks run on cached documents too (the value comes from the environment)."""
    config = "  config:\n    topic: t\n    count: ${env:COUNT}\n"
    (tree / "d.yaml").write_text(manifest("d", config).replace(ANY_CLASS, "datagen"))
    assert [c.name for c in load(tree, env={**ENV, "COUNT": "5"}).connectors] == ["a", "b1", "b2", "d"]
    parsed.clear()
    result = load(tree, env={**ENV, "COUNT": "five"})
    assert parsed == ["c.yaml", "d.yaml"]  # d.yaml parsed again, for the position
    assert [d.render() for d in result.errors if "d.yaml" in d.render()] == [
        f"{tree / 'd.yaml'}:9:12: spec.config.count: must be an integer; got '(sensitive)'"
    ]  # the value came from the environment: never repeated (docs/secrets.md)


def test_a_renamed_file_is_served_under_its_new_name(tree: Path, cache_dir: Path, parsed: list[str]) -> None:
    load(tree)
    (tree / "b.yaml").rename(tree / "renamed.yaml")
    parsed.clear()
    result = load(tree)
    assert parsed == ["c.yaml"]
    b2 = next(c for c in result.connectors if c.name == "b2")
    assert b2.source is not None
    assert (b2.source.file, b2.source.line) == (str(tree / "renamed.yaml"), 9)
    assert_same(result, load_manifests([tree], env=ENV, cache=False))


def test_duplicate_names_are_found_among_cached_files(tree: Path, cache_dir: Path, parsed: list[str]) -> None:
    (tree / "d.yaml").write_text(manifest("a"))
    load(tree)
    parsed.clear()
    result = load(tree)
    assert parsed == ["c.yaml"]
    assert_same(result, load_manifests([tree], env=ENV, cache=False))
    assert any("duplicate connector name `a`" in d.summary for d in result.errors)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda path: path.write_text("{not json"), id="corrupt"),
        pytest.param(lambda path: path.write_text(json.dumps({"format": 0, "files": {}})), id="old-format"),
        pytest.param(lambda path: path.write_text(json.dumps({"format": 1, "reader": "x", "files": {}})), id="other-reader"),
        pytest.param(lambda path: _damage_entries(path), id="damaged-entries"),
    ],
)
def test_an_unusable_cache_is_ignored_and_replaced(
    tree: Path, cache_dir: Path, parsed: list[str], damage: object
) -> None:
    first = load(tree)
    (written,) = cache_dir.glob("manifests-*.json")
    damage(written)  # type: ignore[operator]
    parsed.clear()
    assert_same(load(tree), first)
    assert parsed == ["a.yaml", "b.yaml", "c.yaml"]
    parsed.clear()
    load(tree)
    assert parsed == ["c.yaml"]  # replaced by a usable one


def _damage_entries(path: Path) -> None:
    """Valid JSON of the right format whose entries are not what the loader wrote."""
    document = json.loads(path.read_text())
    damage = [[], [[1, 2]], [["x", "y", "z", 1, 2]], {"a": 1}]
    for digest, entry in zip(sorted(document["files"]), damage, strict=False):
        document["files"][digest] = entry
    path.write_text(json.dumps(document))


def test_a_cache_directory_others_can_write_is_not_trusted(tree: Path, cache_dir: Path, parsed: list[str]) -> None:
    load(tree)
    os.chmod(cache_dir, 0o777)
    parsed.clear()
    load(tree)
    assert parsed == ["a.yaml", "b.yaml", "c.yaml"]


@pytest.mark.parametrize("setting", ["off", ""])
def test_the_cache_can_be_turned_off(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parsed: list[str], setting: str
) -> None:
    monkeypatch.setenv(cache.ENV_VAR, setting)
    monkeypatch.setattr(loader, "CACHE_MIN_BYTES", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    load(tree)
    parsed.clear()
    load(tree)
    assert parsed == ["a.yaml", "b.yaml", "c.yaml"]
    assert not (tmp_path / "xdg").exists()


def test_an_unwritable_cache_directory_only_means_no_cache(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(cache.ENV_VAR, str(blocker / "cache"))  # cannot be created
    monkeypatch.setattr(loader, "CACHE_MIN_BYTES", 0)
    assert [c.name for c in load(tree).connectors] == ["a", "b1", "b2"]


def test_small_trees_leave_no_cache_file(tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.ENV_VAR, str(tmp_path / "cache"))
    load(tree)
    assert not (tmp_path / "cache").exists()


def test_only_the_newest_cache_files_are_kept(tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache, "KEEP_FILES", 2)
    for index in range(4):
        root = tmp_path / f"repo{index}"
        root.mkdir()
        (root / "a.yaml").write_text(manifest(f"c{index}"))
        load(root)
        stamp = 1_000_000 + index
        for written in cache_dir.glob("manifests-*.json"):  # distinct, ordered mtimes
            if written.stat().st_mtime > 2_000_000:
                os.utime(written, (stamp, stamp))
    assert len(list(cache_dir.glob("manifests-*.json"))) == 2


def test_cached_values_come_back_with_their_types(tmp_path: Path, cache_dir: Path, parsed: list[str]) -> None:
    root = tmp_path / "typed"
    root.mkdir()
    values = "    big: 123456789012345678901234567890\n    inf: .inf\n    nan: .nan\n    neg: -0.0\n"
    values += "    one: 1.0\n    date: 2026-11-22\n    yes: true\n    nothing: null\n    text: \"é😀\"\n"
    values += "    quoted: \"1.5\"\n    octal: 0o17\n"
    (root / "typed.yaml").write_text(manifest("typed", "  config:\n" + values), encoding="utf-8")
    result = load(root)
    assert result.diagnostics == []
    first = result.connectors[0].spec.config
    parsed.clear()
    second = load(root).connectors[0].spec.config
    assert parsed == []
    assert first.keys() == second.keys()
    for key, value in first.items():
        again = second[key]
        assert type(again) is type(value), key
        assert repr(again) == repr(value), key  # nan == nan is False; -0.0 == 0.0 is True
