"""Large manifest trees are parsed in forked workers: the result is exactly a serial load's."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reconciler.manifests import forked, loader, load_manifests, reading
from reconciler.manifests.loader import LoadResult

ENV = {"PASSWORD": "s3cret"}


# A Java connector class is accepted with any config (a Java Connect worker would check it), so
# these tests of reading files can carry whatever config they need.
ANY_CLASS = "com.example.connect.AnyConnector"


def manifest(name: str, extra: str = "") -> str:
    return f"apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: {name}\nspec:\n  class: {ANY_CLASS}\n{extra}"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Valid files, problems of every kind, and a duplicate name in the first and last shares."""
    files = {
        "a-first.yaml": manifest("dup"),
        "b-two-docs.yaml": manifest("b1") + "---\n" + manifest("b2", "  state: paused\n"),
        "c-syntax.yaml": "apiVersion: [unclosed\n",
        "d-placeholder.yaml": manifest("d", "  config:\n    password: ${env:PASSWORD}\n    other: ${env:MISSING}\n"),
        "e-empty.yaml": "",
        "f-bad-state.yaml": manifest("f", "  state: sleeping\n"),
        "g-valid.yaml": manifest("g", "  config:\n    password: ${env:PASSWORD}\n"),
        "h-not-utf8.yaml": "name: caf\xe9\n",
        "i-last.yaml": manifest("i") + "---\n" + manifest("dup"),
    }
    for name, text in files.items():
        encoding = "latin-1" if "not-utf8" in name else "utf-8"
        (tmp_path / name).write_text(text, encoding=encoding)
    return tmp_path


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every share is worth a worker; the pids of the workers started are recorded.

    Forking is allowed although this test process may run threads (the session's SparkSession
    and Kafka clients): the workers only parse YAML.
    """
    monkeypatch.setattr(forked, "MIN_SHARE", 1)
    monkeypatch.setattr(forked, "available", lambda: True)
    started: list[int] = []
    start = forked.start

    def counting(work: object) -> forked.Child | None:
        child = start(work)  # type: ignore[arg-type]
        if child is not None:
            started.append(child.pid)
        return child

    monkeypatch.setattr(forked, "start", counting)
    return started


def load(tree: Path, workers: int) -> LoadResult:
    return load_manifests([tree], env=ENV, workers=workers, cache=False)


def assert_same(result: LoadResult, expected: LoadResult) -> None:
    assert result.connectors == expected.connectors
    assert result.diagnostics == expected.diagnostics
    assert result.files == expected.files
    assert result.notes == expected.notes


def test_parallel_load_gives_the_serial_result(tree: Path, forks: list[int]) -> None:
    serial = load(tree, workers=1)
    assert forks == []
    assert [c.name for c in serial.connectors] == ["b1", "b2", "dup", "g", "i"]
    rendered = [d.render() for d in serial.errors]
    assert any("i-last.yaml:11:9: metadata.name: duplicate connector name `dup`" in line for line in rendered)
    assert any("e-empty.yaml:1:1" in line for line in rendered)
    assert any("MISSING" in line for line in rendered)

    # Each valid document's Java class note, at its `spec.class` (a worker sends no nodes).
    notes = [(Path(n.source.file).name, n.source.line, n.source.column) for n in serial.notes if n.source]
    assert notes == [  # the duplicate `dup` has one too: its class is not what is wrong with it
        ("a-first.yaml", 6, 10),
        ("b-two-docs.yaml", 6, 10),
        ("b-two-docs.yaml", 13, 10),
        ("g-valid.yaml", 6, 10),
        ("i-last.yaml", 6, 10),
        ("i-last.yaml", 13, 10),
    ]

    parallel = load(tree, workers=3)
    assert len(forks) == 2  # the parent reads the first share itself
    assert_same(parallel, serial)
    # A worker sends data, not connectors: which keys came from placeholders is found again.
    (g,) = [c for c in parallel.connectors if c.name == "g"]
    assert g.interpolated == {"password"}


def test_a_worker_that_fails_has_its_share_read_by_the_parent(
    tree: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = load(tree, workers=1)

    def broken(results: list[reading.FileResult]) -> bytes:
        raise RuntimeError("worker bug")

    monkeypatch.setattr(reading, "encode", broken)  # only workers encode
    assert_same(load(tree, workers=3), serial)
    assert len(forks) == 2


def test_a_killed_worker_has_its_share_read_by_the_parent(
    tree: Path, forks: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    serial = load(tree, workers=1)
    parse_encoded = loader._parse_encoded

    def killed(files: list[tuple[str, bytes | None]], env: dict[str, str]) -> bytes:
        if any(file.endswith("i-last.yaml") for file, _ in files):
            os.kill(os.getpid(), signal.SIGKILL)
        return parse_encoded(files, env)

    collect, payloads = forked.collect, []

    def recording(child: forked.Child) -> bytes | None:
        payloads.append(collect(child))
        return payloads[-1]

    monkeypatch.setattr(loader, "_parse_encoded", killed)
    monkeypatch.setattr(forked, "collect", recording)
    assert_same(load(tree, workers=3), serial)
    assert len(forks) == 2
    assert [payload is None for payload in payloads] == [False, True]  # the last share's worker died
    for pid in forks:  # every worker was reaped
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


def test_forked_collect_returns_the_childs_bytes_or_none() -> None:
    ok = forked.start(lambda: b"x" * 300_000)  # larger than a pipe's buffer
    assert ok is not None
    assert forked.collect(ok) == b"x" * 300_000

    def fail() -> bytes:
        raise ValueError("nope")

    failed = forked.start(fail)
    assert failed is not None
    assert forked.collect(failed) is None


def test_small_loads_stay_in_one_process() -> None:
    assert forked.worker_count(forked.MIN_SHARE - 1) == 1
    assert forked.worker_count(100 * forked.MIN_SHARE, limit=1) == 1


def test_a_process_running_threads_does_not_fork() -> None:
    alone = "from reconciler.manifests import forked; raise SystemExit(0 if forked.available() else 1)"
    assert subprocess.run([sys.executable, "-c", alone], check=False).returncode == 0
    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert not forked.available()
        assert forked.worker_count(100 * forked.MIN_SHARE) == 1
    finally:
        release.set()
        thread.join()
