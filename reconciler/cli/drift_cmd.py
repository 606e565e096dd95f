"""`reconciler drift PATH…`: does the cluster still match the manifests? For scheduled jobs.

Exit codes, for a cron job or a scheduled CI workflow to act on:

- 0: no drift — applying the manifests would change nothing, and no connector this reconciler
  created has lost its manifest;
- 2: drift — the plan has changes (someone changed a connector behind git's back, a
  manifest was merged but not applied, a request is pending), or there are orphans (connectors
  this reconciler created that no manifest declares; `apply --prune` would delete them);
- 1: an error (invalid manifests, broker unreachable…), as for every command.

It is `plan --detailed-exitcode` plus orphans, with a verdict line. Connectors created by
someone else and in no manifest ("unmanaged") are not drift: they are not ours. The live state
comes from Kafka, or from a snapshot with `--live-state`. Nothing is written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reconciler.app.plan import make_plan
from reconciler.cli.options import add_kafka_options
from reconciler.cli.plan_cmd import live_source
from reconciler.core.diagnostics import has_errors
from reconciler.core.plan import PlanOptions
from reconciler.manifests import load_or_raise
from reconciler.render import plan_document, render

EXIT_IN_SYNC = 0
EXIT_DRIFT = 2
EXIT_ERROR = 1  # the plan holds an error diagnostic, as `plan` exits


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "drift",
        help="check the cluster still matches the manifests; exit 0 in sync, 2 drift, 1 error",
        description="Plan the manifests against the live state without writing anything; exit 2 when "
        "the plan has changes or there are orphaned connectors (drift), 0 when in sync, 1 on error.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument("--format", choices=("text", "markdown", "json"), default="text", help="output format")
    parser.add_argument("--live-state", type=Path, default=None, metavar="FILE", help="live-state snapshot JSON")
    parser.add_argument("--prune", action="store_true", help="plan as `apply --prune` would (orphans become deletes)")
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    desired = load_or_raise(args.paths, consequence="drift was not checked")
    options = PlanOptions(prune=args.prune, manifest_paths=tuple(str(p) for p in args.paths))
    plan = make_plan(desired, live_source(args), options, current_offsets=False)
    drifted = plan.has_changes or bool(plan.orphans)
    if args.format == "json":
        doc = {"drift": drifted, "changes": len(plan.actions), "orphans": plan.orphans, "plan": plan_document(plan)}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        # In sync, the verdict says all the plan's summary would ("No changes…"): said once.
        text = render(plan, args.format, summary=drifted or has_errors(plan.diagnostics))
        verdict = _verdict(len(desired), len(plan.actions), len(plan.orphans))
        verdict = f"**{verdict}**" if args.format == "markdown" else verdict
        sys.stdout.write(text + "\n" if text else "")
        print(verdict)
    if has_errors(plan.diagnostics):
        return EXIT_ERROR  # as `plan`: `apply` would refuse this plan, so no verdict on drift holds
    return EXIT_DRIFT if drifted else EXIT_IN_SYNC


def _verdict(connectors: int, changes: int, orphans: int) -> str:
    if not changes and not orphans:
        return f"No drift: the cluster matches the manifests ({connectors} connector(s))."
    return f"Drift: {changes} change(s) to apply, {orphans} orphaned connector(s)."
