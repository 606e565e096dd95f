"""`reconciler apply PATH…|plan.json [--prune]`: write the plan's changes to Kafka, all or nothing.

Non-interactive on purpose (GitOps pipelines run it): the plan is printed, then applied in one
Kafka transaction. Given a saved plan (`reconciler plan … --out plan.json`), the manifests it
names are re-read and re-planned; the plan is refused when the manifests or the live state
moved since it was made.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.app.apply import apply
from reconciler.cli.options import add_kafka_options, add_prune_options, kafka_settings
from reconciler.core.plan import Plan, PlanOptions
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import LiveStore
from reconciler.manifests import load_or_raise  # raises InvalidManifests: nothing is written
from reconciler.render import render_text
from reconciler.render.json import load_plan_json

if TYPE_CHECKING:
    from collections.abc import Sequence

    from reconciler.app.apply import ApplyOutcome
    from reconciler.offsets.model import OffsetsOutcome

EXIT_OK = 0
EXIT_ERROR = 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "apply",
        help="write the plan's changes to the internal topics (one transaction)",
        description="Plan against the live state and write the changes as Connect-format records, "
        "in one Kafka transaction. PATH may be a saved plan (plan --out plan.json).",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories, or one saved plan.json")
    add_prune_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    saved = _saved_plan(args.paths)
    if saved is not None:
        for flag, given, planned in (("--prune", args.prune, saved.prune), ("--allow-empty", args.allow_empty, saved.allow_empty)):
            if given and not planned:
                raise ReconcilerError(f"{flag} cannot be added to a saved plan", hint=f"pass {flag} to `reconciler plan`")
        if not saved.manifest_paths:
            raise ReconcilerError(f"{args.paths[0]}: the plan names no manifest paths to re-read")
    paths = _manifest_paths(saved, args.paths[0]) if saved is not None else [str(p) for p in args.paths]
    chosen = saved.options if saved is not None else PlanOptions(prune=args.prune, allow_empty=args.allow_empty)
    options = dataclasses.replace(chosen, manifest_paths=tuple(paths))
    settings = kafka_settings(args)  # bad -X / --kafka-config fails before anything else
    desired = load_or_raise(paths)
    colour = _colour_wanted()

    def show(plan: Plan) -> None:
        sys.stdout.write(render_text(plan, colour=colour))
        sys.stdout.flush()

    # The plan's offsets requests run after the write: in full for a connector this apply created
    # or one a Connect worker reports stopped, else the stop step only — the rest runs in the next
    # `reconciler run` tick, or the next apply for a connector a Connect worker runs (`app.offsets`).
    outcome = apply(settings, desired, options, store=LiveStore.one_shot(settings), saved=saved, show_plan=show)
    for line in result_lines(outcome, outcome.offsets):
        print(line)
    return EXIT_OK if all(o.ok or o.retryable for o in outcome.offsets) else EXIT_ERROR


def result_lines(outcome: ApplyOutcome, offsets: Sequence[OffsetsOutcome] = ()) -> list[str]:
    """What follows the printed plan. With no changes the plan's own last line already says
    "No changes. Live state matches the manifests." (and nothing was written)."""
    if not outcome.plan.has_changes:
        if outcome.records_written:  # bookkeeping only (kafka.formats.changes.sensitivity_records)
            return [f"Recorded which config keys are sensitive ({_records(outcome.records_written)} written)"]
        return []
    lines = [o.render() for o in offsets]
    # Every record apply committed: the plan's transaction, and the steps its offsets requests
    # ran in their own transactions (a stop step alone writes the zero-task commit and STOPPED).
    by_requests = sum(o.records_written for o in offsets)
    line = f"Apply complete: {_records(outcome.records_written + by_requests)} written"
    if by_requests:
        line += f" ({outcome.records_written} for the plan's changes, {by_requests} by offsets requests)"
    lines.append(line)
    return lines


def _records(count: int) -> str:
    return f"{count} record" if count == 1 else f"{count} records"


def _manifest_paths(saved: Plan, plan_file: str) -> list[str]:
    """A saved plan's manifest paths: absolute, or relative to the plan file (plan_cmd.saved_paths)."""
    base = os.path.dirname(os.path.abspath(plan_file))
    return [os.path.normpath(os.path.join(base, path)) for path in saved.manifest_paths]


def _saved_plan(paths: list[str]) -> Plan | None:
    """The saved plan when the only argument is a `.json` file, else None (manifest paths)."""
    if len(paths) != 1 or not paths[0].endswith(".json"):
        return None
    path = Path(paths[0])
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReconcilerError(f"cannot read saved plan {path}: {exc.strerror}") from exc
    return load_plan_json(text, origin=str(path))


def _colour_wanted() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ
