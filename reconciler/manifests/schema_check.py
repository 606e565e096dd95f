"""`python -m reconciler.manifests.schema_check [--strict] FILE…`: each manifest file on its own,
without the environment.

The pre-commit hook for staged files (`reconciler-schema`): every check `reconciler validate`
makes on a document — the JSON Schema, Connect's rules, each config against its plugin (so both
hooks refuse the same unknown config keys), literal secrets (errors with `--strict`) — except
the two that need more than the file: `${env:…}` placeholders are kept, not looked up, and
names are not compared across files (`reconciler validate` does both). YAML documents that are
not manifests (no `apiVersion: reconciler.io/…`, nor a Strimzi `KafkaConnector`), such as CI
workflows or Kubernetes objects, are skipped, so the hook can be given every YAML file.
Exit 0 when every manifest passes, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Mapping, Sequence

from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.models import SourceRef
from reconciler.manifests import strimzi
from reconciler.manifests.documents import Document, Problem, read_documents
from reconciler.manifests.findings import format_path
from reconciler.manifests.reading import read_raw
from reconciler.manifests.validate import validate_document

API_GROUP = "reconciler.io/"


class _Unresolved(Mapping[str, str]):
    """An environment in which every variable is set to its own placeholder: `${env:NAME}` stays
    as written, and is judged as a placeholder (its value is unknown here), never as missing."""

    def __getitem__(self, name: str) -> str:
        return "${env:" + name + "}"

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def is_ours(document: Document) -> bool:
    data = document.data
    return isinstance(data, dict) and (str(data.get("apiVersion", "")).startswith(API_GROUP) or strimzi.is_strimzi(data))


def check_file(file: str) -> tuple[int, list[Diagnostic]]:
    """(manifests found, their diagnostics: errors and warnings) for one file."""
    raw, problem = read_raw(file)
    if problem is not None:
        return 0, [problem]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return 0, [diagnostics.error(f"{file}: not UTF-8 text", hint="save the file as UTF-8")]
    found: list[Diagnostic] = []
    manifests = 0
    for item in read_documents(text, file):
        if isinstance(item, Problem):
            where = SourceRef(file=file, line=item.line, column=item.column)
            found.append(diagnostics.error(item.message, source=where, field_path=format_path(item.path), hint=item.hint))
        elif is_ours(item):
            manifests += 1
            found += validate_document(item, _Unresolved())[1]
    return manifests, found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reconciler.manifests.schema_check", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", metavar="FILE", help="YAML files (documents of other kinds are skipped)")
    parser.add_argument("--strict", action="store_true", help="warnings are errors (a literal secret)")
    args = parser.parse_args(argv)
    manifests, found = 0, []
    for file in args.files:
        count, diagnostics_ = check_file(file)
        manifests += count
        found += diagnostics_
    if args.strict:
        found = [d.model_copy(update={"severity": Severity.ERROR}) if d.severity is Severity.WARNING else d for d in found]
    for diagnostic in found:
        print(diagnostic.render(), file=sys.stderr)
    errors = sum(1 for d in found if d.severity is Severity.ERROR)
    if errors:
        print(f"error: {errors} problem(s)", file=sys.stderr)
        return 1
    print(f"{manifests} manifest(s) valid, each file on its own")  # the result: stdout
    return 0


if __name__ == "__main__":
    sys.exit(main())
