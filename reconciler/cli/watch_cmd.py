"""`reconciler watch PATH…`: the container entrypoint — `run`'s loop, re-reading the manifests
when the files change (`app.serve.serve(watch=True)`, `app.reload`); here, its options.

Static deployments (KIP-304's idea): the files are the only API. A change wakes the loop at
once; an invalid edit is reported while the previous valid manifests keep being applied and
run; every `--resync` seconds without a tick a resync pass re-reads the files and applies the
plan, without a batch (docs/runtime.md#watch-mode). `/readyz` says "degraded" while the files
on disk are invalid. The manifests must be valid when the command starts.
"""

from __future__ import annotations

import argparse
from functools import partial

from reconciler.app.serve import serve
from reconciler.cli.options import add_kafka_options, kafka_settings, positive_seconds
from reconciler.cli.progress import with_progress
from reconciler.cli.run_options import add_runtime_options
from reconciler.cli.run_use import serve_options
from reconciler.cli.tick_output import make_output

EXIT_OK = 0
DEFAULT_RESYNC_S = 300.0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="container entrypoint: run ticks until SIGTERM, re-reading the manifests when they change",
        description="Like `run` without --once, and the manifests are re-read whenever the files change; "
        "an invalid edit is reported and the previous valid manifests keep running.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument(
        "--resync", type=positive_seconds, default=DEFAULT_RESYNC_S, metavar="SECONDS",
        help="re-read the files and correct drift at least this often, even without file events or "
        "a tick (default: %(default)g)",
    )
    add_runtime_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = kafka_settings(args)
    options = serve_options(args, resync_s=args.resync)
    output = make_output(args.log_format)
    paths = [str(p) for p in args.paths]
    serve(settings, paths, options, output, watch=True, wrap=partial(with_progress, log_format=args.log_format))
    return EXIT_OK
