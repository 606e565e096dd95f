"""Paths → validated connectors plus every diagnostic, never an exception for a bad manifest."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from reconciler import heap, masking
from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.models import DesiredConnector, SourceRef
from reconciler.errors import InvalidManifests
from reconciler.manifests import forked, reading
from reconciler.manifests.cache import ManifestCache
from reconciler.manifests.reading import FileResult, Where

_T = TypeVar("_T")

MANIFEST_SUFFIXES = (".yaml", ".yml")
# Below this much YAML a load takes milliseconds: not worth a file in the user's cache directory.
CACHE_MIN_BYTES = 256 * 1024


@dataclasses.dataclass(frozen=True, kw_only=True)
class LoadResult:
    """Valid connectors (sorted by name) and every problem (sorted by file, line, column)."""

    connectors: list[DesiredConnector]
    diagnostics: list[Diagnostic]
    files: list[str] = dataclasses.field(default_factory=list)  # every manifest file read, in order
    # Info diagnostics, not problems (a Java class accepted unchecked), sorted as `diagnostics`.
    notes: list[Diagnostic] = dataclasses.field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors


def load_manifests(
    paths: Sequence[str | Path],
    env: Mapping[str, str] | None = None,
    *,
    workers: int | None = None,
    cache: bool = True,
) -> LoadResult:
    """Read manifest files and directories (recursively: `*.yaml`, `*.yml`; hidden entries skipped).

    `${env:NAME}` placeholders in `spec.config` are resolved from `env` (default: os.environ).
    Files are parsed on every CPU (`workers`: at most this many processes; 1 = this one), and
    files unchanged since the last load of the same paths are not parsed at all (`cache`).
    """
    environment = os.environ if env is None else env
    files, found = manifest_files(paths)
    with heap.building():
        store = ManifestCache.open(paths) if cache else ManifestCache()
        results = _read_files(files, environment, store, workers)
        if cache and sum(r.size for r in results) >= CACHE_MIN_BYTES:
            store.save({r.digest: documents for r in results if (documents := r.documents) is not None})
        connectors = _connectors(results, found)
    masking.remember_connectors(connectors)  # whatever prints later never shows their secrets
    found.sort(key=_position)
    notes = sorted((note for result in results for note in result.notes), key=_position)
    return LoadResult(connectors=connectors, diagnostics=found, files=files, notes=notes)


def _connectors(results: list[FileResult], found: list[Diagnostic]) -> list[DesiredConnector]:
    """The valid connectors, sorted by name; every problem, duplicate names included, into `found`."""
    connectors: list[DesiredConnector] = []
    first_seen: dict[str, Where] = {}
    for result in results:  # in file order: "first declared" means the same however files were read
        found.extend(result.diagnostics)
        for name, where, connector in result.declared:
            first = first_seen.get(name)
            if first is not None:
                found.append(_duplicate(name, where, first))
                continue
            first_seen[name] = where
            if connector is not None:
                connectors.append(connector)
    connectors.sort(key=lambda c: c.name)
    return connectors


def load_or_raise(
    paths: Sequence[str | Path], env: Mapping[str, str] | None = None, *, consequence: str = "nothing was applied"
) -> list[DesiredConnector]:
    """The connectors, or InvalidManifests carrying every diagnostic when any is an error (and
    the caller's `consequence`: what it did not do)."""
    result = load_manifests(paths, env)
    if not result.ok:
        raise InvalidManifests(result.diagnostics, consequence)
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


def _read_files(
    files: list[str], env: Mapping[str, str], store: ManifestCache, workers: int | None
) -> list[FileResult]:
    """A result per file, in order: from the cache when it knows the file's bytes, else parsed."""
    if store.empty:  # every file is parsed: each is read where it is parsed, on every CPU
        return _parse([(file, None) for file in files], env, workers)
    results: list[FileResult | None] = []
    to_parse: list[tuple[int, str, bytes]] = []
    for file in files:
        raw, problem = reading.read_raw(file)
        if problem is not None:
            results.append(FileResult(diagnostics=[problem], declared=[]))
            continue
        digest = reading.digest(raw)
        known = store.get(digest)
        result = None if known is None else reading.from_documents(file, digest, known, env, len(raw))
        if result is None:
            if known is not None:
                store.reject()
            to_parse.append((len(results), file, raw))
        results.append(result)
    parsed = _parse([(file, raw) for _, file, raw in to_parse], env, workers)
    for (index, _, _), result in zip(to_parse, parsed, strict=True):
        results[index] = result
    return [result for result in results if result is not None]


_ToParse = tuple[str, bytes | None]  # a file and its bytes, None: not read yet


def _parse(files: list[_ToParse], env: Mapping[str, str], workers: int | None) -> list[FileResult]:
    """The files parsed in contiguous shares: the first here, the others in forked workers.

    A worker whose result does not arrive (it failed, or was killed) has its share parsed here.
    """
    shares = _split(files, forked.worker_count(len(files), workers))
    children = [forked.start(functools.partial(_parse_encoded, share, env)) for share in shares[1:]]
    try:
        results = _parse_share(shares[0], env)
        for index, (share, child) in enumerate(zip(shares[1:], children, strict=True)):
            payload = None if child is None else forked.collect(child)
            children[index] = None
            decoded = None if payload is None else reading.decode(payload, env)
            results.extend(_parse_share(share, env) if decoded is None else decoded)
    finally:
        for child in children:
            if child is not None:
                forked.abandon(child)
    return results


def _parse_share(files: list[_ToParse], env: Mapping[str, str]) -> list[FileResult]:
    return [reading.parse_file(file, raw, env) for file, raw in files]


def _parse_encoded(files: list[_ToParse], env: Mapping[str, str]) -> bytes:
    return reading.encode(_parse_share(files, env))


def _split(items: list[_T], count: int) -> list[list[_T]]:
    """`count` contiguous parts of (nearly) equal length; one part when `items` is empty.

    Equal, although this process also decodes the workers' results: a worker is that much
    slower per file (it encodes them), and weighting the shares measured no better.
    """
    size, extra = divmod(len(items), max(count, 1))
    parts, start = [], 0
    for index in range(max(count, 1)):
        end = start + size + (1 if index < extra else 0)
        parts.append(items[start:end])
        start = end
    return parts


def _duplicate(name: str, here: Where, first: Where) -> Diagnostic:
    return diagnostics.error(
        f"duplicate connector name `{name}`: also declared at {_source(first)}",
        source=_source(here),
        field_path="metadata.name",
        connector=name,
        hint="connector names must be unique across all manifest files",
    )


def _source(where: Where) -> SourceRef:
    return SourceRef(file=where[0], line=where[1], column=where[2])


def _position(diagnostic: Diagnostic) -> tuple[str, int, int]:
    source = diagnostic.source
    if source is None:
        return ("", 0, 0)  # path-level problems (missing file…) first
    return (source.file, source.line, source.column)
