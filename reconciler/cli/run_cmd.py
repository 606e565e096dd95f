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
import os
import re
from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING

from reconciler.app.serve import ServeOptions, SparkOptions, run_once, serve
from reconciler.app.tick import TickReport
from reconciler.cli.logs import LOG_FORMATS
from reconciler.cli.phases import PhaseClock
from reconciler.cli.options import add_kafka_options, add_prune_options, kafka_settings, positive_seconds
from reconciler.cli.progress import with_progress
from reconciler.core.plan import PlanOptions
from reconciler.cli.tick_output import Output, failure_summary, make_output, print_error, print_report, report_lines
from reconciler.errors import ReconcilerError
from reconciler.runtime.executor import SinkReader
from reconciler.runtime.spark.session import connect_address, master_addresses

if TYPE_CHECKING:
    from reconciler.kafka.settings import KafkaSettings

EXIT_OK = 0
EXIT_FAILED = 1
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


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--interval", type=positive_seconds, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
        help="seconds from the start of one tick to the next (default: %(default)g)",
    )
    group.add_argument(
        "--spark-master", type=spark_master, default=None,
        help="Spark master URL: local[N] or spark://HOST:PORT of a standalone cluster (default: local[*])",
    )
    group.add_argument(
        "--spark-remote", default=None, metavar="sc://HOST:PORT",
        help="run the tasks through this Spark Connect server instead (default: $SPARK_REMOTE)",
    )
    group.add_argument(
        "--spark-timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
        help="how long the Spark master or Connect server may take to answer and give an executor "
        "(default: %(default)g)",
    )
    group.add_argument(
        "--sink-reader", choices=["confluent-kafka", "spark-kafka", "auto"], default="confluent-kafka",
        help="how sinks read Kafka: confluent-kafka in the Python workers (the default: faster, "
        "measured), Spark's Kafka data source (spark-kafka), or the data source when the session "
        "has it (auto)",
    )
    group.add_argument(
        "--spark-conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. --spark-conf spark.executor.memory=2g",
    )
    group.add_argument("--worker-id", default=None, help="worker_id in statuses (default: <hostname>:<pid>)")
    add_prune_options(group)
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
    _add_http_options(parser)


def _add_http_options(parser: argparse.ArgumentParser) -> None:
    http = parser.add_argument_group("REST API, health and metrics (loop mode)")
    http.add_argument(
        "--http-bind", default=os.environ.get("RECONCILER_HTTP_BIND", "127.0.0.1:8083"), metavar="HOST:PORT",
        help="where to serve the read-only REST API, /healthz, /readyz and /metrics "
        "(default: $RECONCILER_HTTP_BIND or %(default)s)",
    )
    http.add_argument("--no-http", action="store_true", help="serve no HTTP at all")


def run(args: argparse.Namespace) -> int:
    settings = kafka_settings(args)
    options = serve_options(args)
    paths = [str(p) for p in args.paths]
    output = make_output(args.log_format)
    wrap = partial(with_progress, log_format=args.log_format)
    if args.once and args.profile:
        return _profiled_once(args, settings, paths, options, output)
    if args.once:
        with run_once(settings, paths, options, output, wrap=wrap) as report:
            return _exit_once(report, output, allow_failed=args.allow_failed)
    serve(settings, paths, options, output, wrap=wrap)
    return EXIT_OK


def _profiled_once(
    args: argparse.Namespace, settings: KafkaSettings, paths: list[str], options: ServeOptions, output: Output
) -> int:
    """`run --once` with a line per phase on stderr (`cli.phases`), printed however it ends."""
    clock = PhaseClock()
    clock.mark("handler")
    try:
        wrap = lambda executor: clock.wrapping(with_progress(executor, args.log_format))  # noqa: E731
        with run_once(settings, paths, options, output, wrap=wrap) as report:
            clock.mark("reported")
            return _exit_once(report, output, allow_failed=args.allow_failed)
    finally:
        clock.print()


def serve_options(args: argparse.Namespace, *, resync_s: float | None = None) -> ServeOptions:
    """The options of `run`/`watch` as one value (`--no-http`: no REST API)."""
    conf = parse_spark_conf(args.spark_conf)
    exiting = bool(getattr(args, "exiting", False))
    master, remote = spark_target(args.spark_master, args.spark_remote)
    spark = SparkOptions(
        master=master, remote=remote, conf=conf, timeout_s=args.spark_timeout, sink_reader=SinkReader(args.sink_reader),
        stop_on_close=not exiting,  # the process ends at once after (`main.entry`)
        # One tick, then the process ends: Spark starts in the background while the apply runs
        # (an idle tick leaves it unused; the exit ends its JVM).
        start_early=exiting and bool(getattr(args, "once", False)),
    )
    return ServeOptions(
        interval_s=args.interval, grace_s=args.grace_period, http_bind=None if args.no_http else args.http_bind,
        resync_s=resync_s, worker_id=args.worker_id, plan=PlanOptions(prune=args.prune, allow_empty=args.allow_empty),
        auto_restart_unit_s=args.auto_restart_unit, spark=spark,
    )


def _exit_once(report: TickReport, output: Output, *, allow_failed: bool) -> int:
    lines = failure_summary(report)
    if not lines:
        return EXIT_OK
    if allow_failed:
        lines.append("exit code 0 all the same: --allow-failed")
    output.warning("\n".join(lines), event="failures")
    return EXIT_OK if allow_failed else EXIT_FAILED


def spark_target(master: str | None, remote: str | None) -> tuple[str, str | None]:
    """(master, Spark Connect URL or None): `--spark-remote` or SPARK_REMOTE, unless a master
    is named; both named is an error."""
    if master and remote:
        raise ReconcilerError("give --spark-master or --spark-remote, not both")
    if master:
        return master, None
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None:
        connect_address(remote)  # a URL that cannot work fails now, before anything is written
    return "local[*]", remote


# The master URLs Spark takes (`SparkContext.createTaskScheduler`, `SparkSubmit`'s check).
_LOCAL_MASTER = re.compile(r"local(\[([0-9]+|\*)(\s*,\s*[0-9]+)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]")


def spark_master(text: str) -> str:
    """argparse's type for `--spark-master`: a URL Spark takes, checked before anything is
    written (Spark itself refuses a bad one only once its JVM runs, with a Java stack trace)."""
    master = text.strip()
    local = _LOCAL_MASTER.fullmatch(master)
    if local is not None:
        if local.group(2) is not None and local.group(2) != "*" and int(local.group(2)) < 1:
            raise argparse.ArgumentTypeError(f"{text!r} runs no thread: use local[N] with N of at least 1, or local[*]")
        return master
    if _LOCAL_CLUSTER.fullmatch(master) or master == "yarn" or master.startswith("k8s://"):
        return master  # Spark's to check further: they need more than a URL
    if master.startswith("spark://"):  # checked as the runtime will connect to it
        if len(master_addresses(master)) == len(master.removeprefix("spark://").split(",")):
            return master
        raise argparse.ArgumentTypeError(f"{text!r}: a standalone master is spark://HOST:PORT[,HOST:PORT…]")
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a Spark master URL: local, local[N], local[*], spark://HOST:PORT[,HOST:PORT…] "
        "(a standalone cluster), k8s://…, yarn; --spark-remote sc://HOST:PORT for Spark Connect")


def parse_spark_conf(items: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ReconcilerError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


__all__ = [
    "add_runtime_options", "parse_spark_conf", "print_error", "print_report", "report_lines", "serve_options",
]
