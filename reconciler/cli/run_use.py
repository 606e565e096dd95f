"""The `run` use case's wiring in the CLI (`app.serve`): its options as one value, its output
and its exit code; `run_cmd` imports this after it has launched Spark's JVM for `--once`.
"""

from __future__ import annotations

import argparse
from functools import partial
from typing import TYPE_CHECKING

from reconciler.app.serve import ServeOptions, SparkOptions, run_once, serve
from reconciler.app.tick import TickReport
from reconciler.cli.options import kafka_settings
from reconciler.cli.phases import PhaseClock
from reconciler.cli.progress import with_progress
from reconciler.cli.run_options import spark_of
from reconciler.cli.tick_output import Output, failure_summary, make_output, print_error, print_report, report_lines
from reconciler.core.plan import PlanOptions
from reconciler.runtime.executor import SinkReader

if TYPE_CHECKING:
    from reconciler.kafka.settings import KafkaSettings

EXIT_OK = 0
EXIT_FAILED = 1


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
    target = spark_of(args)
    exiting = bool(getattr(args, "exiting", False))
    spark = SparkOptions(
        master=target.master, remote=target.remote, conf=dict(target.conf), timeout_s=target.timeout_s,
        sink_reader=SinkReader(args.sink_reader),
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


__all__ = ["print_error", "print_report", "report_lines", "run", "serve_options"]
