"""`reconciler plan PATH…`: compare the manifests with the live state and show the plan.

Live state comes from a snapshot file (`--live-state`, for CI that cannot reach the cluster),
else from Kafka when a bootstrap server is given (flag or $RECONCILER_BOOTSTRAP_SERVERS), else
it is empty (everything would be created): `live_source`. A Kafka group without topics is an
error, unless `--new-group` says it may not exist yet. The plan itself is `app.plan`'s; the
manifests' warnings (a literal secret) are shown with it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from reconciler import masking
from reconciler.app.plan import LiveSource, for_new_group, make_plan
from reconciler.cli.options import add_kafka_options, add_prune_options, kafka_settings
from reconciler.core.diagnostics import Severity, has_errors
from reconciler.core.plan import PlanOptions
from reconciler.errors import InvalidManifests, ReconcilerError
from reconciler.manifests import load_manifests
from reconciler.render import render, render_json

EXIT_OK = 0
EXIT_ERROR = 1  # the plan holds an error diagnostic (e.g. --prune of everything without --allow-empty)
EXIT_CHANGES = 2  # with --detailed-exitcode (cli.main maps errors to 1)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="show what apply would change",
        description="Compare the manifests with the live state and print the plan (nothing is written).",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="output format")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON plan here (for `apply`)")
    parser.add_argument("--live-state", type=Path, default=None, metavar="FILE", help="live-state snapshot JSON")
    parser.add_argument(
        "--detailed-exitcode", action="store_true", help="exit 2 when the plan has changes (0 none, 1 error)"
    )
    parser.add_argument(
        "--new-group",
        action="store_true",
        help="the group may not exist yet: when none of its internal topics exists, plan against an empty "
        "state (and say so on stderr) instead of failing; for a pull request's first plan of a new group",
    )
    add_prune_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    loaded = load_manifests(args.paths)
    if not loaded.ok:
        raise InvalidManifests(loaded.diagnostics, "no plan was made")  # nothing else runs
    source, note = for_new_group(live_source(args))
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
    saved = args.out is not None or args.format == "json"  # only a saved plan is checked against its digests
    options = PlanOptions(
        prune=args.prune, allow_empty=args.allow_empty, manifest_paths=tuple(saved_paths(args.paths, args.out))
    )
    plan = make_plan(loaded.connectors, source, options, fingerprints=saved)
    # The manifests' warnings (a literal secret) are shown with the plan, in every format.
    warnings = [d for d in loaded.diagnostics if d.severity is Severity.WARNING]
    plan = plan.model_copy(update={"diagnostics": [*warnings, *plan.diagnostics]})
    if args.out is not None:
        _write(args.out, masking.scrub(render_json(plan)))
    sys.stdout.write(render(plan, args.format, colour=args.format == "text" and _colour_wanted()))
    if has_errors(plan.diagnostics):
        return EXIT_ERROR  # `apply` would refuse this plan; the error is in it, above
    return EXIT_CHANGES if args.detailed_exitcode and plan.has_changes else EXIT_OK


def saved_paths(paths: list[str], out: Path | None) -> list[str]:
    """Manifest paths as a saved plan keeps them, so `apply plan.json` finds them from anywhere:
    relative to the plan file's directory with `--out`, else absolute (the JSON on stdout)."""
    absolute = [os.path.abspath(p) for p in paths]
    if out is None:
        return absolute
    base = os.path.dirname(os.path.abspath(out))
    return [os.path.relpath(p, base) for p in absolute]


def live_source(args: argparse.Namespace) -> LiveSource:
    """Snapshot file, else Kafka (when a bootstrap server is named), else empty."""
    if args.live_state is not None:
        if args.bootstrap_servers:
            raise ReconcilerError("--live-state and --bootstrap-servers are exclusive: pick one source of live state")
        return LiveSource(snapshot=args.live_state)
    if args.bootstrap_servers or os.environ.get("RECONCILER_BOOTSTRAP_SERVERS"):
        return LiveSource(kafka=kafka_settings(args), new_group=getattr(args, "new_group", False))
    return LiveSource()


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReconcilerError(f"cannot write plan to {path}: {exc.strerror}") from exc


def _colour_wanted() -> bool:
    # https://no-color.org: NO_COLOR set (any value) disables colour.
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ
