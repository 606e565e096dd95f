"""`reconciler run PATH… [--once]`: the options of the run use case (`app.serve`), its output,
and its exit code.

Each tick applies the manifests, then runs one batch of every connector's tasks on Spark; with
`--once` that is one tick; without, ticks repeat every `--interval` seconds until
SIGTERM/SIGINT (docs/runtime.md#stopping). With `--once` the exit code tells a pipeline: 1 when
the apply failed (nothing run), an offsets request did not complete, or a connector or task
ended the tick FAILED — with a summary of what failed and what to do (`--allow-failed`: the
summary, and exit 0). In the loop failures are reported and the ticks go on. The loop serves
the read-only REST API, health and metrics unless `--no-http`.
"""

from __future__ import annotations

import argparse

from reconciler.cli.options import add_kafka_options
from reconciler.cli.run_options import DEFAULT_SINK_READER, add_runtime_options, spark_of
from reconciler.runtime.spark import early


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="apply, then run one batch of every connector's tasks on Spark (repeats without --once)",
        description="Apply the manifests, then bring every connector to its target state and run one "
        "batch of its tasks on Spark; repeat every --interval seconds until SIGTERM/SIGINT unless --once.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument("--once", action="store_true", help="run one tick and exit (1 if anything failed)")
    parser.add_argument(
        "--allow-failed", action="store_true",
        help="with --once: exit 0 even when a connector, task or offsets request failed (the summary is still printed)",
    )
    parser.add_argument(
        "--profile", action="store_true",
        help="with --once: print the time of each phase (imports, apply, Spark start, batch, statuses, stop) on stderr",
    )
    add_runtime_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.once and getattr(args, "exiting", False) and args.sink_reader == DEFAULT_SINK_READER:
        # One batch, then the process ends: Spark's JVM is launched first (`early`), and its
        # start overlaps the imports below, the manifests and the apply.
        early.launch(spark_of(args))
    from reconciler.cli import run_use  # noqa: PLC0415 — after the launch, on purpose (above)

    try:
        return run_use.run(args)
    finally:
        early.discard()  # a JVM launched for a batch that never came
