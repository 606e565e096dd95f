"""`reconciler snapshot [--out FILE]`: the live state as JSON, for `plan --live-state FILE`.

Lets a CI job that cannot reach the cluster still plan: export the snapshot where Kafka is
reachable, hand the file to the pull request's pipeline.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.core.live import dump_snapshot
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import read_live_state

EXIT_OK = 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "snapshot",
        help="write the live state as JSON (for plan --live-state)",
        description="Read the internal topics and print the live state as a JSON snapshot.",
    )
    parser.add_argument("--out", type=Path, default=None, metavar="FILE", help="write here instead of stdout")
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    text = dump_snapshot(read_live_state(kafka_settings(args), uncommitted=True))
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ReconcilerError(f"cannot write snapshot to {args.out}: {exc.strerror}") from exc
    print(f"live state of group {args.group_id} written to {args.out}", file=sys.stderr)
    return EXIT_OK
