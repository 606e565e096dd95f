"""One manifest file → a `FileResult`: its problems, its named documents, what a cache may keep.

`loader` reads each file through here: in this process, in a forked worker (whose results
travel back as `encode`/`decode` bytes), or not at all when the cache knows the file's bytes
(`from_documents`). Duplicate names across files are the loader's business, found afterwards.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import pickle
from collections.abc import Mapping, Sequence
from typing import Any

from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic
from reconciler.core.models import DesiredConnector, SourceRef
from reconciler.manifests.documents import Problem, read_documents
from reconciler.manifests.findings import format_path
from reconciler.manifests.plugin_checks import java_note
from reconciler.manifests.validate import (
    class_node,
    clean_connector,
    connector_name,
    name_node,
    skipped,
    validate_document,
)

# Where a name is declared: (file, line, column). Not the Document: that would keep every
# document's node tree alive until the end of a load (memory, and a long final GC pass).
Where = tuple[str, int, int]
# A document of a file without problems, as the cache keeps it: its data, the line and column
# where it starts, those of its `metadata.name`, and those of its `spec.class`.
CachedDocument = Sequence[Any]


@dataclasses.dataclass(slots=True, kw_only=True)
class FileResult:
    diagnostics: list[Diagnostic]
    # Every document with a name, in file order: (name, where the name is, the connector if valid).
    declared: list[tuple[str, Where, DesiredConnector | None]]
    digest: str = ""  # of the file's bytes; "" when it could not be read
    size: int = 0  # bytes read
    # The valid documents' data and positions, in order (for the cache, and for a worker to send).
    valid: list[CachedDocument] = dataclasses.field(default_factory=list)
    # Info diagnostics about valid documents (a Java class accepted unchecked): not problems.
    notes: list[Diagnostic] = dataclasses.field(default_factory=list)

    @property
    def documents(self) -> list[CachedDocument] | None:
        """What a cache may keep: only a file without any problem has it."""
        if self.diagnostics or not self.declared or len(self.valid) != len(self.declared):
            return None
        return self.valid


def read_raw(file: str) -> tuple[bytes, Diagnostic | None]:
    try:
        # os.read skips the buffered-file machinery: half the cost when reading 10,000 small files.
        fd = os.open(file, os.O_RDONLY)
        try:
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError as exc:
        return b"", diagnostics.error(f"{file}: cannot read: {exc.strerror}")
    return b"".join(chunks), None


def digest(raw: bytes) -> str:
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def parse_file(file: str, raw: bytes | None, env: Mapping[str, str]) -> FileResult:
    """Decode, parse and validate every document of one file (`raw`: its bytes, if read already)."""
    if raw is None:
        raw, problem = read_raw(file)
        if problem is not None:
            return FileResult(diagnostics=[problem], declared=[])
    result = FileResult(diagnostics=[], declared=[], digest=digest(raw), size=len(raw))
    text, problem = _decode(file, raw)
    if problem is not None:
        result.diagnostics.append(problem)
        return result
    for item in read_documents(text, file):
        if isinstance(item, Problem):
            result.diagnostics.append(_reading_problem(file, item))
            continue
        if (note := skipped(item)) is not None:  # a diagnostic, not a note: it keeps the file out of the cache
            result.diagnostics.append(note)
            continue
        connector, found = validate_document(item, env)
        result.diagnostics.extend(found)
        name = connector_name(item)
        if name is None:
            continue
        mark = name_node(item).start_mark
        where = (file, mark.line + 1, mark.column + 1)
        if item.flawed or connector is None or connector.source is None:
            result.declared.append((name, where, None))
            continue
        result.declared.append((name, where, connector))
        class_mark = class_node(item).start_mark
        source = connector.source
        document = (item.data, source.line, source.column, *where[1:], class_mark.line + 1, class_mark.column + 1)
        result.valid.append(document)
        _note(result, file, document, connector)
    if not result.declared and not result.diagnostics:
        start = SourceRef(file=file, line=1, column=1)
        hint = "add a Connector manifest or delete the file"
        result.diagnostics.append(diagnostics.error("empty file: no manifest in it", source=start, hint=hint))
    return result


def from_documents(
    file: str, digest_: str, documents: Sequence[CachedDocument], env: Mapping[str, str], size: int
) -> FileResult | None:
    """A file known to have had no problems, rebuilt from its documents' data (no YAML parsing).

    Every check runs again (the environment may have changed); None if any fails: the caller
    parses the file, for problems with their positions.
    """
    if not documents:  # a file without problems has at least one document
        return None
    result = FileResult(diagnostics=[], declared=[], digest=digest_, size=size, valid=list(documents))
    try:
        for document in documents:
            _, _, _, name_line, name_column, _, _ = document
            connector = _connector(file, document, env)
            if connector is None:
                return None
            result.declared.append((connector.name, (file, int(name_line), int(name_column)), connector))
            _note(result, file, document, connector)
    except (TypeError, ValueError):  # a damaged cache entry (SourceRef rejects odd positions too)
        return None
    return result


def encode(results: list[FileResult]) -> bytes:
    """A worker's results for the parent: problems, names and the data of valid documents.

    Data, not the pydantic models: the parent validates the same data again (10× cheaper than
    pickling the models) and gets the same connectors.
    """
    wire = []
    for result in results:
        valid = iter(result.valid)
        declared = [(name, where, None if c is None else next(valid)) for name, where, c in result.declared]
        wire.append((result.diagnostics, declared, result.digest, result.size))
    return pickle.dumps(wire, protocol=pickle.HIGHEST_PROTOCOL)


def decode(payload: bytes, env: Mapping[str, str]) -> list[FileResult] | None:
    """What `encode` sent; None if the data does not validate again here (never expected)."""
    results = []
    for found, declared, digest_, size in pickle.loads(payload):  # noqa: S301 - our own worker's output
        result = FileResult(diagnostics=found, declared=[], digest=digest_, size=size)
        for name, where, document in declared:
            connector = None
            if document is not None:
                connector = _connector(where[0], document, env)
                if connector is None:
                    return None
                result.valid.append(document)
                _note(result, where[0], document, connector)
            result.declared.append((name, where, connector))
        results.append(result)
    return results


def _connector(file: str, document: CachedDocument, env: Mapping[str, str]) -> DesiredConnector | None:
    """The connector a problem-free document's data gives (None if a check fails now)."""
    return clean_connector(document[0], SourceRef(file=file, line=document[1], column=document[2]), env)


def _note(result: FileResult, file: str, document: CachedDocument, connector: DesiredConnector) -> None:
    """The connector's note, if any, at its `spec.class` (kept with the document: no nodes needed)."""
    note = java_note(connector, SourceRef(file=file, line=int(document[5]), column=int(document[6])))
    if note is not None:
        result.notes.append(note)


def _decode(file: str, raw: bytes) -> tuple[str, Diagnostic | None]:
    try:
        return raw.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        before = raw[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before) - (before.rfind(b"\n") + 1) + 1
        return "", diagnostics.error(
            "not UTF-8 text", source=SourceRef(file=file, line=line, column=column), hint="save the file as UTF-8"
        )


def _reading_problem(file: str, problem: Problem) -> Diagnostic:
    return diagnostics.error(
        problem.message,
        source=SourceRef(file=file, line=problem.line, column=problem.column),
        field_path=format_path(problem.path),
        hint=problem.hint,
    )
