"""`reconciler validate PATH…`: check manifests offline; exit 0 when valid, 1 when not.

Diagnostics go to stderr as `file:line:col: field.path: message (hint: …)`, the verdict
(`N connector(s) valid`) to stdout; with `--format json` the diagnostics are the result, a
JSON list on stdout (for CI annotations), and the verdict goes to stderr so stdout stays JSON.
Warnings (a literal secret) do not fail it, unless `--strict` makes them errors. Never
touches Kafka.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.errors import ReconcilerError
from reconciler.manifests import load_manifests


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "validate",
        help="check manifests and their connector configs (offline); exit 1 when any is invalid",
        description=(
            "Check manifest files and directories (*.yaml, *.yml, recursively); never contacts Kafka. "
            "Each connector's config is checked against its plugin (built-in, entry point or module:Class) "
            "and the keys Kafka Connect defines, as Connect validates a config before accepting it; "
            "a Java connector class (run by a Java Connect worker) is accepted unchecked. "
            "Large trees are parsed on every CPU, and files unchanged since the last load of the same "
            "paths come from the manifest cache (~/.cache/connect-reconciler; RECONCILER_CACHE_DIR=DIR "
            "moves it, RECONCILER_CACHE_DIR=off turns it off)."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="diagnostics as text lines (stderr) or as a JSON list (stdout)",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="warnings are errors (a literal secret in a config: a value under a key such as "
        "`sasl.password` that is not a `${provider:…}` placeholder); for pre-commit hooks and CI",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    result = load_manifests(args.paths)
    if args.strict:
        result = dataclasses.replace(result, diagnostics=[_as_error(d) for d in result.diagnostics])
    shown = sorted([*result.diagnostics, *result.notes], key=_position)
    if args.format == "json":
        print(json.dumps([diagnostic_json(d) for d in shown], indent=2))
    else:
        for diagnostic in shown:
            print(diagnostic.render(), file=sys.stderr)
    errors = len(result.errors)
    warnings = sum(1 for d in result.diagnostics if d.severity is Severity.WARNING)
    if errors:
        raise ReconcilerError(f"{errors} problem(s){_where(result.errors)}" + _warnings(warnings))
    # The verdict is the command's result (stdout); beside a JSON list it would break the JSON.
    verdict = sys.stderr if args.format == "json" else sys.stdout
    print(f"{len(result.connectors)} connector(s) valid" + _warnings(warnings), file=verdict)
    return 0


def diagnostic_json(diagnostic: Diagnostic) -> dict[str, Any]:
    """A flat record per diagnostic: what CI annotations need (file, line, column, message)."""
    source = diagnostic.source
    return {
        "severity": diagnostic.severity.value,
        "file": source.file if source else None,
        "line": source.line if source else None,
        "column": source.column if source else None,
        "path": diagnostic.field_path or None,
        "message": diagnostic.summary,
        "hint": diagnostic.hint,
        "connector": diagnostic.connector,
        "text": diagnostic.render(),
    }


def _as_error(diagnostic: Diagnostic) -> Diagnostic:
    if diagnostic.severity is not Severity.WARNING:
        return diagnostic
    return diagnostic.model_copy(update={"severity": Severity.ERROR})


def _position(diagnostic: Diagnostic) -> tuple[str, int, int]:
    source = diagnostic.source
    return ("", 0, 0) if source is None else (source.file, source.line, source.column)


def _where(errors: list[Diagnostic]) -> str:
    """Which files the problems are in; a path that does not exist is a problem in no file."""
    files = {d.source.file for d in errors if d.source is not None}
    located = sum(1 for d in errors if d.source is not None)
    if not located:
        return ""
    if located == len(errors):
        return f" in {len(files)} file(s)"
    return f", {located} of them in {len(files)} file(s)"


def _warnings(count: int) -> str:
    return f", {count} warning(s)" if count else ""
