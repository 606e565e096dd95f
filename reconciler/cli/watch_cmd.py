"""`reconciler watch PATH…`: the container entrypoint — `run`'s loop, re-reading the manifests
when the files change.

Static deployments (KIP-304's idea): the manifests are mounted (e.g. a ConfigMap) or baked into
a derived image, and the files are the only API. A change wakes the loop at once (no need to
wait for `--interval`); the new manifests are validated first, and an invalid edit is reported
while the previous valid manifests keep being applied and run. The manifests must be valid
when the command starts.

Which file events count as a change is `reconciler.manifests.watch`'s business (debounced;
editor temporaries ignored; a ConfigMap's `..data` swap is one change; deletions count). Every
change reloads all manifests and re-plans from scratch. Events can be missed (network file
systems, some volume drivers), and the cluster can drift from the manifests (someone writes to
the config topic), so every `--resync` seconds without a tick a resync pass re-reads the files
and applies the plan, without running a batch (docs/runtime.md#watch-mode).

It serves the read-only REST API, health and metrics as `run` does; `/readyz` says "degraded"
while the files on disk are invalid (`Manifests.problems`).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from reconciler.cli.options import add_kafka_options, kafka_settings, positive_seconds
from reconciler.cli.run_cmd import (
    add_runtime_options,
    loop,
    make_worker,
    parse_spark_conf,
    releasing,
    serving,
)
from reconciler.cli.tick_output import Output, make_output

if TYPE_CHECKING:
    from reconciler.core.models import DesiredConnector
    from reconciler.manifests.watch import Fingerprint
    from reconciler.app.tick import Worker

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


class Manifests:
    """The current valid manifests, and what the files held when they were last read.

    The watcher thread calls `notice()` after a burst of file events; the tick thread takes the
    manifests by calling the object, which reloads them first if the files changed.
    """

    def __init__(self, paths: Sequence[str], desired: Sequence[DesiredConnector], output: Output) -> None:
        from reconciler.manifests.watch import fingerprint

        self.paths = list(paths)
        self.desired = list(desired)
        self.output = output
        self.valid = True  # False while the files on disk are invalid (the previous ones still run)
        self.problems: list[str] = []  # what is wrong with them, for /readyz
        self.reloads = 0
        self._seen: Fingerprint = fingerprint(self.paths)
        self._changed = threading.Event()
        self._lock = threading.Lock()

    def __call__(self) -> tuple[Sequence[DesiredConnector], Sequence[str]]:
        if self._changed.is_set():
            self._changed.clear()
            self.reload()
        return self.desired, self.paths

    def notice(self) -> bool:
        """Whether the files now differ from what was last read; if so, the next call reloads."""
        from reconciler.manifests.watch import fingerprint

        now = fingerprint(self.paths)
        with self._lock:
            if now == self._seen:
                return False
            self._changed.set()
            return True

    def reload(self) -> bool:
        """Take the files as they are now; keep the previous manifests if they are invalid."""
        from reconciler.manifests import load_manifests
        from reconciler.manifests.watch import fingerprint

        seen = fingerprint(self.paths)  # before reading: a later edit differs from it, and is seen
        result = load_manifests(self.paths)
        with self._lock:
            self._seen = seen
        self.reloads += 1
        self.valid = result.ok
        self.problems = [diagnostic.render() for diagnostic in result.diagnostics if not result.ok]
        if not result.ok:
            self.output.invalid_manifests(result.diagnostics)
            return False
        self.desired = list(result.connectors)
        self.output.notice(f"manifests reloaded: {len(self.desired)} connector(s)", event="manifests-reloaded",
                           connectors=len(self.desired))
        return True


def run(args: argparse.Namespace) -> int:
    from reconciler.manifests import load_or_raise
    from reconciler.manifests.watch import watch_files
    from reconciler.runtime.loop import Stopper

    settings = kafka_settings(args)
    spark_conf = parse_spark_conf(args.spark_conf)
    paths = [str(p) for p in args.paths]
    output = make_output(args.log_format)
    manifests = Manifests(paths, load_or_raise(paths), output)
    stopper = Stopper(args.grace_period, notify=output.warning)

    def on_files_event() -> None:
        if manifests.notice():
            stopper.wake.set()

    watcher = threading.Thread(
        target=watch_files, args=(paths, on_files_event, stopper.stop), name="manifest-watcher", daemon=True
    )
    watcher.start()
    worker = make_worker(args, settings, spark_conf, stopper)
    try:
        with serving(args, settings, worker, output) as observer, releasing(worker, output):
            loop(
                worker, stopper, args.interval, manifests, output, observer=observer,
                problems=lambda: manifests.problems,
                resync=lambda: resync(worker, manifests, output, stopper.wake), resync_s=args.resync,
            )
    finally:
        stopper.request_stop()
        worker.close()
        stopper.finished()
    return EXIT_OK


def resync(worker: Worker, manifests: Manifests, output: Output, wake: threading.Event) -> None:
    """Apply the plan (and any offsets request) for the manifests: the control plane only,
    batches keep their `--interval`. Files that changed unnoticed get a full tick instead, as
    any change does."""
    if manifests.notice():
        wake.set()
        return
    desired, paths = manifests()
    applied = worker.apply(desired, manifest_paths=paths)
    output.resynced(applied, applied.offsets)
