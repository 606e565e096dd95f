"""`reconciler run PATH… [--once]`: apply the manifests, then run every connector's tasks.

Each tick applies the manifests (exactly as `reconciler apply`), then brings every connector
of the group to its target state and runs one batch of every running task on Spark
(`reconciler.app.tick`). With `--once` that is one tick; without, ticks repeat every
`--interval` seconds until SIGTERM/SIGINT, after which the current batch finishes, Spark stops
and the command exits 0, all within `--grace-period` (docs/runtime.md#stopping).

A tick's outcome is printed per connector. Connectors and tasks that fail are reported FAILED
in the status topic (with the traceback), as Connect reports them; `reconciler status` shows
them. With `--once` the exit code tells a pipeline: 1 when the apply failed (nothing run), an
offsets request did not complete, or a connector or task ended the tick FAILED — with a summary
of what failed and what to do (`--allow-failed`: the summary, and exit 0). In the loop
(`run`, `watch`) failures are reported and the ticks go on: a bad moment of the control plane
or of one connector stops no other data. Owned connectors left in no manifest (orphans) are
logged at every tick until deleted (`--prune`) or declared again.

When the command ends (after `--once`, or after SIGTERM in the loop) it reports its
connectors and tasks UNASSIGNED, as a Connect worker does when it stops them
(docs/runtime.md#liveness-between-batches). The loop serves the read-only REST API, health and
metrics (`reconciler.api`) unless `--no-http`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from reconciler.cli.logs import LOG_FORMATS
from reconciler.cli.options import add_kafka_options, add_prune_options, kafka_settings, positive_seconds
from reconciler.cli.tick_output import Output, failure_summary, make_output, print_error, print_report, report_lines
from reconciler.errors import ReconcilerError

if TYPE_CHECKING:
    from reconciler.api.observer import LoopObserver
    from reconciler.core.models import DesiredConnector
    from reconciler.kafka.settings import KafkaSettings
    from reconciler.runtime.loop import Stopper
    from reconciler.app.tick import TickReport, Worker

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
            with releasing(worker, output):
                report = worker.tick(desired, manifest_paths=paths, on_batch_error=output.applied_before_failure)
                output.report(report)
            return _exit_once(report, output, allow_failed=args.allow_failed)
        with serving(args, settings, worker, output) as observer, releasing(worker, output):
            loop(worker, stopper, args.interval, lambda: (desired, paths), output, observer=observer)
    finally:
        worker.close()
        stopper.finished()
    return EXIT_OK


def _exit_once(report: TickReport, output: Output, *, allow_failed: bool) -> int:
    lines = failure_summary(report)
    if not lines:
        return EXIT_OK
    if allow_failed:
        lines.append("exit code 0 all the same: --allow-failed")
    output.warning("\n".join(lines), event="failures")
    return EXIT_OK if allow_failed else EXIT_FAILED


Manifests = Callable[[], tuple[Sequence["DesiredConnector"], Sequence[str]]]


def loop(
    worker: Worker,
    stopper: Stopper,
    interval_s: float,
    manifests: Manifests,
    output: Output,
    *,
    observer: LoopObserver | None = None,
    problems: Callable[[], Sequence[str]] = lambda: (),
    resync: Callable[[], None] | None = None,
    resync_s: float | None = None,
) -> None:
    """Ticks until a signal; `manifests()` gives the (desired, paths) to apply at each tick,
    `problems()` what is wrong with the files on disk (their edit is not applied), `resync`
    a drift pass to run every `resync_s` seconds between ticks."""
    from reconciler.runtime.loop import run_loop

    tick = make_tick(worker, manifests, output, observer, problems)
    stopper.install()
    try:
        run_loop(
            tick, interval_s=interval_s, stopper=stopper, on_error=output.error, resync=resync, resync_s=resync_s
        )
    finally:
        stopper.restore()


def make_tick(
    worker: Worker,
    manifests: Manifests,
    output: Output,
    observer: LoopObserver | None = None,
    problems: Callable[[], Sequence[str]] = lambda: (),
) -> Callable[[], None]:
    """One tick of the loop: apply and run, report it, tell the observer (the REST API's view)."""

    def tick() -> None:
        desired, paths = manifests()
        apply_errors: list[ReconcilerError] = []

        def on_apply_error(exc: ReconcilerError) -> None:
            output.error(exc)
            apply_errors.append(exc)

        started = time.time()
        if observer is not None:
            observer.manifests(desired, problems())
        try:
            report = worker.tick(
                desired, manifest_paths=paths, on_apply_error=on_apply_error, on_batch_error=output.applied_before_failure
            )
        except ReconcilerError as exc:
            if observer is not None:
                observer.failed(exc, started)
            raise
        output.report(report)
        if invalid := problems():
            output.manifests_still_invalid(len(invalid))  # a status line per tick, not only the edit's
        if observer is not None:
            observer.finished(report, started, apply_errors[0] if apply_errors else None)

    return tick


@contextlib.contextmanager
def serving(
    args: argparse.Namespace, settings: KafkaSettings, worker: Worker, output: Output
) -> Iterator[LoopObserver | None]:
    """The REST API, health and metrics while the loop runs (None with --no-http)."""
    if args.no_http:
        yield None
        return
    from reconciler.api.server import serving as api_serving

    with api_serving(
        settings, args.http_bind, worker.worker_id, interval_s=args.interval, read_live=worker.read_live
    ) as service:
        output.notice(
            f"REST API (read-only) on {service.url}: /connectors, /healthz, /readyz, /metrics",
            event="rest-api", url=service.url,
        )
        yield service.observer


@contextlib.contextmanager
def releasing(worker: Worker, output: Output) -> Iterator[None]:
    """When the block ends, report this worker's instances UNASSIGNED (Connect's shutdown);
    not after the broker proved unreachable (`Worker.release`): that would only wait for it
    once more."""
    try:
        yield
    except BaseException:
        _release(worker, output)
        raise
    _release(worker, output)


def _release(worker: Worker, output: Output) -> None:
    try:
        written = worker.release()
    except ReconcilerError as exc:
        output.error(exc)
        written = None
    if written is None and worker.reached:
        output.warning("statuses this worker wrote still name it: the next run rewrites them")
    elif written:
        output.notice(f"stopped: {written} status(es) now UNASSIGNED", event="released", statuses=written)


def make_worker(
    args: argparse.Namespace, settings: KafkaSettings, spark_conf: dict[str, str], stopper: Stopper
) -> Worker:
    from reconciler.cli.progress import with_progress
    from reconciler.runtime.executor import SparkExecutor
    from reconciler.app.tick import Worker

    master, remote = spark_target(args.spark_master, args.spark_remote)
    executor = SparkExecutor(
        settings, master=master, remote=remote, spark_conf=spark_conf, timeout_s=args.spark_timeout,
        sink_reader=args.sink_reader,
    )
    return Worker(
        settings, with_progress(executor, args.log_format), worker_id=args.worker_id, prune=args.prune,
        allow_empty=args.allow_empty, stopping=lambda: stopper.stopping, auto_restart_unit_s=args.auto_restart_unit,
    )


def spark_target(master: str | None, remote: str | None) -> tuple[str, str | None]:
    """(master, Spark Connect URL or None): `--spark-remote` or SPARK_REMOTE, unless a master
    is named; both named is an error."""
    if master and remote:
        raise ReconcilerError("give --spark-master or --spark-remote, not both")
    if master:
        return master, None
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None:
        from reconciler.runtime.spark.session import connect_address

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
    if master.startswith("spark://"):
        from reconciler.runtime.spark.session import master_addresses  # what the runtime will connect to

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
    "add_runtime_options", "loop", "make_worker", "parse_spark_conf", "print_error", "print_report", "report_lines",
]
