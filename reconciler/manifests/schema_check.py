"""`python -m reconciler.manifests.schema_check FILE…`: manifests against the JSON Schema only.

The check an editor's YAML language server makes with `schemas/connector.schema.json`, run as a
pre-commit hook or a CI step: structure, field names, types and patterns, reported as
`file:line:col: field.path: message`. It needs no environment: `${env:…}` placeholders are
not looked up (`reconciler validate` does that, and checks the rest: Connect's rules, unique
names across files). YAML documents that are not ours (no `apiVersion: reconciler.io/…`), such
as CI workflows or Kubernetes objects, are skipped, so the hook can be given every YAML file.
Exit 0 when every manifest conforms, 1 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from reconciler.core.diagnostics import Diagnostic
from reconciler.manifests.documents import Document, Problem, read_documents
from reconciler.manifests.findings import format_path, merge
from reconciler.manifests.reading import read_raw
from reconciler.manifests.schema_errors import schema_findings
from reconciler.manifests.validate import document_diagnostics

API_GROUP = "reconciler.io/"


def is_ours(document: Document) -> bool:
    data = document.data
    return isinstance(data, dict) and str(data.get("apiVersion", "")).startswith(API_GROUP)


def check_file(file: str) -> tuple[int, list[Diagnostic]]:
    """(manifests found, problems) for one file."""
    from reconciler.core import diagnostics
    from reconciler.core.models import SourceRef

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
            assert isinstance(item.data, dict)
            found += document_diagnostics(item, merge([schema_findings(item.data)]))
    return manifests, found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reconciler.manifests.schema_check", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", metavar="FILE", help="YAML files (documents of other kinds are skipped)")
    args = parser.parse_args(argv)
    manifests, problems = 0, []
    for file in args.files:
        count, found = check_file(file)
        manifests += count
        problems += found
    for diagnostic in problems:
        print(diagnostic.render(), file=sys.stderr)
    if problems:
        print(f"error: {len(problems)} schema problem(s)", file=sys.stderr)
        return 1
    print(f"{manifests} manifest(s) conform to the schema")  # the result: stdout
    return 0


if __name__ == "__main__":
    sys.exit(main())
