"""Entry point: parse arguments, run one command, map errors to exit codes — the only place
that does so (0 success / no changes, 1 error, 2 changes present with --detailed-exitcode).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from reconciler import heap
from reconciler.cli import logs
from reconciler.errors import ReconcilerError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2

# name → module under reconciler.cli; each module has `register(subparsers)` and
# `run(args) -> int`. Modules are imported lazily so `validate` never pays for Kafka or Spark.
COMMANDS: dict[str, str] = {
    "validate": "reconciler.cli.validate_cmd",
    "plan": "reconciler.cli.plan_cmd",
    "drift": "reconciler.cli.drift_cmd",
    "apply": "reconciler.cli.apply_cmd",
    "status": "reconciler.cli.status_cmd",
    "snapshot": "reconciler.cli.snapshot_cmd",
    "offsets": "reconciler.cli.offsets_cmd",
    "run": "reconciler.cli.run_cmd",
    "watch": "reconciler.cli.watch_cmd",
}
# Commands that keep running; the others exit when done (reconciler.heap: what they build is frozen).
LONG_RUNNING = {"run", "watch"}


def build_parser(argv: Sequence[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reconciler",
        description="Declarative reconciler for Kafka Connect-style connectors.",
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv: debug)")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    # Only import the module of the command being run (plus all of them for --help).
    wanted = [a for a in argv if a in COMMANDS][:1] or list(COMMANDS)
    for name in COMMANDS:
        if name in wanted:
            module = importlib.import_module(COMMANDS[name])
            module.register(subparsers)
        else:
            subparsers.add_parser(name, help=f"(see `reconciler {name} --help`)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(args_list)
    args = parser.parse_args(args_list)
    logs.configure(getattr(args, "log_format", "text"), args.verbose)
    try:
        with heap.one_shot(args.command not in LONG_RUNNING):
            code: int = args.handler(args)
    except ReconcilerError as exc:
        logs.error(exc.render())
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
