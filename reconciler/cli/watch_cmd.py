"""`reconciler watch PATH…`: the container entrypoint — `run`'s loop, re-reading the manifests
when the files change.

Static deployments (KIP-304's idea): the manifests are baked into the image or mounted (e.g. a
ConfigMap), and the files are the only API. A change wakes the loop at once (no need to wait
for `--interval`); the new manifests are validated first, and an invalid edit is reported
while the previous valid manifests keep being applied and run. The manifests must be valid
when the command starts.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.cli.run_cmd import add_runtime_options, loop, make_worker, parse_spark_conf, releasing, serving, stamp

if TYPE_CHECKING:
    from reconciler.core.models import DesiredConnector

EXIT_OK = 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "watch",
        help="container entrypoint: run ticks until SIGTERM, re-reading the manifests when they change",
        description="Like `run` without --once, and the manifests are re-read whenever the files change; "
        "an invalid edit is reported and the previous valid manifests keep running.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    add_runtime_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


class Manifests:
    """The current valid manifests; reloaded when the watcher says the files changed."""

    def __init__(self, paths: Sequence[str], desired: Sequence[DesiredConnector]) -> None:
        self.paths = list(paths)
        self.desired = list(desired)
        self.changed = threading.Event()
        self.problems: list[str] = []  # of the files on disk, while an invalid edit is not applied

    def __call__(self) -> tuple[Sequence[DesiredConnector], Sequence[str]]:
        if self.changed.is_set():
            self.changed.clear()
            self.reload()
        return self.desired, self.paths

    def reload(self) -> bool:
        """Take the files as they are now; keep the previous manifests if they are invalid."""
        from reconciler.manifests import load_manifests

        result = load_manifests(self.paths)
        if not result.ok:
            self.problems = [diagnostic.render() for diagnostic in result.diagnostics]
            for problem in self.problems:
                print(problem, file=sys.stderr)
            print(f"{stamp()} manifests changed but are invalid; still running the previous valid ones", file=sys.stderr)
            sys.stderr.flush()
            return False
        self.desired, self.problems = list(result.connectors), []
        print(f"{stamp()} manifests reloaded: {len(self.desired)} connector(s)", flush=True)
        return True


def watch_files(paths: Sequence[str], manifests: Manifests, wake: threading.Event, stop: threading.Event) -> None:
    """Flag `manifests` as changed and wake the loop whenever a file under `paths` changes."""
    from watchfiles import watch

    for _changes in watch(*paths, stop_event=stop, raise_interrupt=False):
        manifests.changed.set()
        wake.set()


def run(args: argparse.Namespace) -> int:
    from reconciler.manifests import load_or_raise
    from reconciler.runtime.loop import Stopper

    settings = kafka_settings(args)
    spark_conf = parse_spark_conf(args.spark_conf)
    paths = [str(p) for p in args.paths]
    manifests = Manifests(paths, load_or_raise(paths))
    stopper = Stopper()
    watcher = threading.Thread(
        target=watch_files, args=(paths, manifests, stopper.wake, stopper.stop), name="manifest-watcher", daemon=True
    )
    watcher.start()
    worker = make_worker(args, settings, spark_conf, stopper)
    try:
        with serving(args, settings, worker) as observer, releasing(worker):
            loop(worker, stopper, args.interval, manifests, observer=observer, problems=lambda: manifests.problems)
    finally:
        stopper.request_stop()
        worker.close()
    return EXIT_OK
