"""Paths → validated connectors plus every diagnostic, never an exception for a bad manifest."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from yaml.nodes import Node

from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.models import DesiredConnector, SourceRef
from reconciler.errors import InvalidManifests
from reconciler.manifests.documents import Document, Problem, position, read_documents
from reconciler.manifests.findings import format_path
from reconciler.manifests.validate import connector_name, name_node, validate_document

MANIFEST_SUFFIXES = (".yaml", ".yml")

# Where a name was first declared: (file, node). Not the whole Document: that would keep every
# document's node tree alive until the end (memory, and a long final GC pass).
_Where = tuple[str, Node]


@dataclasses.dataclass(frozen=True)
class LoadResult:
    """Valid connectors (sorted by name) and every problem (sorted by file, line, column)."""

    connectors: list[DesiredConnector]
    diagnostics: list[Diagnostic]
    files: list[str] = dataclasses.field(default_factory=list)  # every manifest file read, in order

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors


def load_manifests(paths: Sequence[str | Path], env: Mapping[str, str] | None = None) -> LoadResult:
    """Read manifest files and directories (recursively: `*.yaml`, `*.yml`; hidden entries skipped).

    `${env:NAME}` placeholders in `spec.config` are resolved from `env` (default: os.environ).
    """
    environment = os.environ if env is None else env
    found: list[Diagnostic] = []
    connectors: list[DesiredConnector] = []
    first_seen: dict[str, _Where] = {}
    files, path_problems = manifest_files(paths)
    found.extend(path_problems)
    with _gc_paused():
        for file in files:
            found.extend(_load_file(file, environment, connectors, first_seen))
    connectors.sort(key=lambda c: c.name)
    found.sort(key=_position)
    return LoadResult(connectors=connectors, diagnostics=found, files=files)


def load_or_raise(paths: Sequence[str | Path], env: Mapping[str, str] | None = None) -> list[DesiredConnector]:
    """The connectors, or InvalidManifests carrying every diagnostic when any is an error."""
    result = load_manifests(paths, env)
    if not result.ok:
        raise InvalidManifests(result.diagnostics)
    return result.connectors


def manifest_files(paths: Sequence[str | Path]) -> tuple[list[str], list[Diagnostic]]:
    """The files to read, each once, in a stable order (directory entries by name, depth first)."""
    files: list[str] = []
    problems: list[Diagnostic] = []
    seen: set[str] = set()
    for given in paths:
        path = os.fspath(given)
        if os.path.isdir(path):
            inside = list(_walk(path, set()))
            if not inside:
                problems.append(diagnostics.warning(f"{path}: no *.yaml or *.yml files in this directory"))
        elif os.path.exists(path):
            inside = [path]
        else:
            problems.append(diagnostics.error(f"{path}: no such file or directory"))
            continue
        for file in inside:
            key = os.path.abspath(file)  # `dir` and `dir/a.yaml` both given: read a.yaml once
            if key not in seen:
                seen.add(key)
                files.append(file)
    return files, problems


def _walk(directory: str, visited: set[str]) -> Iterator[str]:
    real = os.path.realpath(directory)
    if real in visited:
        return  # a symlink loop
    visited.add(real)
    with os.scandir(directory) as scan:
        entries = sorted(scan, key=lambda entry: entry.name)
    for entry in entries:
        # Hidden entries (.git, .github, a Kubernetes volume's ..data) hold no manifests of ours.
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            yield from _walk(entry.path, visited)
        elif entry.name.endswith(MANIFEST_SUFFIXES) and entry.is_file():
            yield entry.path


def _load_file(
    file: str, env: Mapping[str, str], connectors: list[DesiredConnector], first_seen: dict[str, _Where]
) -> list[Diagnostic]:
    text, problem = _read(file)
    if problem is not None:
        return [problem]
    found: list[Diagnostic] = []
    empty = True
    for item in read_documents(text, file):
        empty = False
        if isinstance(item, Problem):
            found.append(_reading_problem(file, item))
        else:
            found.extend(_load_document(item, env, connectors, first_seen))
    if empty:
        start = SourceRef(file=file, line=1, column=1)
        hint = "add a Connector manifest or delete the file"
        found.append(diagnostics.error("empty file: no manifest in it", source=start, hint=hint))
    return found


def _load_document(
    document: Document, env: Mapping[str, str], connectors: list[DesiredConnector], first_seen: dict[str, _Where]
) -> list[Diagnostic]:
    connector, found = validate_document(document, env)
    name = connector_name(document)
    duplicate = _duplicate(name, document, first_seen) if name is not None else None
    if duplicate is not None:
        found.append(duplicate)
    elif connector is not None and not document.flawed:
        connectors.append(connector)
    return found


def _reading_problem(file: str, problem: Problem) -> Diagnostic:
    return diagnostics.error(
        problem.message,
        source=SourceRef(file=file, line=problem.line, column=problem.column),
        field_path=format_path(problem.path),
        hint=problem.hint,
    )


def _duplicate(name: str, document: Document, first_seen: dict[str, _Where]) -> Diagnostic | None:
    here = (document.file, name_node(document))
    first = first_seen.setdefault(name, here)
    if first is here:
        return None
    return diagnostics.error(
        f"duplicate connector name `{name}`: also declared at {position(*first)}",
        source=position(*here),
        field_path="metadata.name",
        connector=name,
        hint="connector names must be unique across all manifest files",
    )


def _read(file: str) -> tuple[str, Diagnostic | None]:
    try:
        raw = _read_bytes(file)
    except OSError as exc:
        return "", diagnostics.error(f"{file}: cannot read: {exc.strerror}")
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        return "", diagnostics.error(
            "not UTF-8 text", source=SourceRef(file=file, line=line, column=column), hint="save the file as UTF-8"
        )


def _read_bytes(file: str) -> bytes:
    # os.read skips the buffered-file machinery: half the cost when reading 10,000 small files.
    fd = os.open(file, os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _position(diagnostic: Diagnostic) -> tuple[str, int, int]:
    source = diagnostic.source
    if source is None:
        return ("", 0, 0)  # path-level problems (missing file…) first
    return (source.file, source.line, source.column)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Loading allocates many small, long-lived objects; the cyclic GC would rescan them over
    and over (measured: composing 10,000 documents takes 1.7 s with it, 0.6 s without)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
