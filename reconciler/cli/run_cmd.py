"""`reconciler run PATH… [--once]`: apply the manifests, then run every connector's tasks.

Each tick applies the manifests (exactly as `reconciler apply`), then brings every connector
of the group to its target state and runs one batch of every running task on Spark
(`reconciler.runtime.worker`). With `--once` that is one tick; without, ticks repeat every
`--interval` seconds until SIGTERM/SIGINT, after which the current batch finishes, Spark stops
and the command exits 0, all within `--grace-period` (docs/runtime.md#stopping).

A tick's outcome is printed per connector. Tasks that fail are reported FAILED in the status
topic (with the traceback) and do not make the command fail: that is the connector's state,
as Connect reports it; `reconciler status` shows it. With `--once` a failed apply fails the
command (exit 1, nothing run); in the loop it is reported and the tick still runs the
connectors the topics declare, so a bad moment of the control plane stops no data.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from reconciler.cli.logs import LOG_FORMATS
from reconciler.cli.options import add_kafka_options, kafka_settings
from reconciler.cli.tick_output import Output, make_output, print_error, print_report, report_lines
from reconciler.errors import ReconcilerError

if TYPE_CHECKING:
    from reconciler.core.models import DesiredConnector
    from reconciler.kafka.settings import KafkaSettings
    from reconciler.runtime.loop import Stopper
    from reconciler.runtime.worker import Worker

EXIT_OK = 0
DEFAULT_INTERVAL_S = 10.0
DEFAULT_GRACE_S = 30.0  # Kubernetes' default terminationGracePeriodSeconds


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "run",
        help="apply, then run one batch of every connector's tasks on Spark (repeats without --once)",
        description="Apply the manifests, then bring every connector to its target state and run one "
        "batch of its tasks on Spark; repeat every --interval seconds until SIGTERM/SIGINT unless --once.",
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help="manifest files or directories")
    parser.add_argument("--once", action="store_true", help="run one tick and exit")
    add_runtime_options(parser)
    add_kafka_options(parser)
    parser.set_defaults(handler=run)


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--interval", type=positive_seconds, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
        help="seconds from the start of one tick to the next (default: %(default)g)",
    )
    group.add_argument("--spark-master", default="local[*]", help="Spark master URL (default: %(default)s)")
    group.add_argument(
        "--spark-conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. --spark-conf spark.executor.memory=2g",
    )
    group.add_argument("--worker-id", default=None, help="worker_id in statuses (default: <hostname>:<pid>)")
    group.add_argument("--prune", action="store_true", help="delete orphaned connectors this reconciler created")
    group.add_argument(
        "--auto-restart-unit", type=positive_seconds, default=60.0, metavar="SECONDS",
        help="length of one spec.autoRestart back-off unit, Strimzi's minute (default: %(default)g)",
    )
    group.add_argument(
        "--grace-period", type=positive_seconds, default=DEFAULT_GRACE_S, metavar="SECONDS",
        help="after SIGTERM/SIGINT, the time to finish the batch and stop; then exit at once "
        "(default: %(default)g; keep it below Kubernetes' terminationGracePeriodSeconds)",
    )
    group.add_argument(
        "--log-format", choices=LOG_FORMATS, default=os.environ.get("RECONCILER_LOG_FORMAT") or "text",
        help="text lines, or one JSON object per line on stderr for log pipelines "
        "(default: $RECONCILER_LOG_FORMAT or text)",
    )


def run(args: argparse.Namespace) -> int:
    from reconciler.manifests import load_or_raise
    from reconciler.runtime.loop import Stopper

    settings = kafka_settings(args)
    spark_conf = parse_spark_conf(args.spark_conf)
    paths = [str(p) for p in args.paths]
    desired = load_or_raise(paths)
    output = make_output(args.log_format)
    stopper = Stopper(args.grace_period, notify=output.warning)
    worker = make_worker(args, settings, spark_conf, stopper)
    try:
        if args.once:
            output.report(worker.tick(desired, manifest_paths=paths))
        else:
            loop(worker, stopper, args.interval, lambda: (desired, paths), output)
    finally:
        worker.close()
        stopper.finished()
    return EXIT_OK


Manifests = Callable[[], tuple[Sequence["DesiredConnector"], Sequence[str]]]


def loop(
    worker: Worker,
    stopper: Stopper,
    interval_s: float,
    manifests: Manifests,
    output: Output,
    *,
    resync: Callable[[], None] | None = None,
    resync_s: float | None = None,
) -> None:
    """Ticks until a signal; `manifests()` gives the (desired, paths) to apply at each tick."""
    from reconciler.runtime.loop import run_loop

    def tick() -> None:
        desired, paths = manifests()
        output.report(worker.tick(desired, manifest_paths=paths, on_apply_error=output.error))

    stopper.install()
    try:
        run_loop(
            tick, interval_s=interval_s, stopper=stopper, on_error=output.error, resync=resync, resync_s=resync_s
        )
    finally:
        stopper.restore()


def make_worker(
    args: argparse.Namespace, settings: KafkaSettings, spark_conf: dict[str, str], stopper: Stopper
) -> Worker:
    from reconciler.cli.progress import with_progress
    from reconciler.runtime.executor import SparkExecutor
    from reconciler.runtime.worker import Worker

    executor = with_progress(SparkExecutor(settings, master=args.spark_master, spark_conf=spark_conf), args.log_format)
    return Worker(
        settings, executor, worker_id=args.worker_id, prune=args.prune, stopping=lambda: stopper.stopping,
        auto_restart_unit_s=args.auto_restart_unit,
    )


def parse_spark_conf(items: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ReconcilerError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


__all__ = ["add_runtime_options", "loop", "make_worker", "parse_spark_conf", "print_error", "print_report", "report_lines"]
