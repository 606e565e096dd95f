"""`reconciler run PATH… [--once]`: apply the manifests, then run every connector's tasks.

Each tick applies the manifests (exactly as `reconciler apply`), then brings every connector
of the group to its target state and runs one batch of every running task on Spark
(`reconciler.runtime.worker`). With `--once` that is one tick; without, ticks repeat every
`--interval` seconds until SIGTERM/SIGINT, after which the current batch finishes, Spark stops
and the command exits 0.

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
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from reconciler.cli.options import add_kafka_options, add_prune_options, kafka_settings
from reconciler.core.live import InstanceState
from reconciler.errors import BrokerUnreachable, ReconcilerError

if TYPE_CHECKING:
    from reconciler.api.observer import LoopObserver
    from reconciler.core.models import DesiredConnector
    from reconciler.kafka.settings import KafkaSettings
    from reconciler.runtime.loop import Stopper
    from reconciler.runtime.worker import ConnectorReport, TickReport, Worker

EXIT_OK = 0
EXIT_FAILED = 1
DEFAULT_INTERVAL_S = 10.0
LOG = logging.getLogger("reconciler.run")


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
        "--interval", type=_positive_seconds, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
        help="seconds from the start of one tick to the next (default: %(default)g)",
    )
    group.add_argument(
        "--spark-master", default=None,
        help="Spark master URL: local[N] or spark://HOST:PORT of a standalone cluster (default: local[*])",
    )
    group.add_argument(
        "--spark-remote", default=None, metavar="sc://HOST:PORT",
        help="run the tasks through this Spark Connect server instead (default: $SPARK_REMOTE)",
    )
    group.add_argument(
        "--spark-timeout", type=_positive_seconds, default=60.0, metavar="SECONDS",
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
    stopper = Stopper()
    worker = make_worker(args, settings, spark_conf, stopper)
    try:
        if args.once:
            with releasing(worker):
                report = worker.tick(desired, manifest_paths=paths)
                print_report(report)
            return _exit_once(report, allow_failed=args.allow_failed)
        with serving(args, settings, worker) as observer, releasing(worker):
            loop(worker, stopper, args.interval, lambda: (desired, paths), observer=observer)
    finally:
        worker.close()
    return EXIT_OK


def _exit_once(report: TickReport, *, allow_failed: bool) -> int:
    lines = failure_summary(report)
    if not lines:
        return EXIT_OK
    if allow_failed:
        lines.append("exit code 0 all the same: --allow-failed")
    print("\n".join(lines), file=sys.stderr, flush=True)
    return EXIT_OK if allow_failed else EXIT_FAILED


Manifests = Callable[[], tuple[Sequence["DesiredConnector"], Sequence[str]]]


def loop(
    worker: Worker,
    stopper: Stopper,
    interval_s: float,
    manifests: Manifests,
    *,
    observer: LoopObserver | None = None,
    problems: Callable[[], Sequence[str]] = lambda: (),
) -> None:
    """Ticks until a signal; `manifests()` gives the (desired, paths) to apply at each tick,
    `problems()` what is wrong with the files on disk (their edit is not applied)."""
    from reconciler.runtime.loop import run_loop

    tick = make_tick(worker, manifests, observer, problems)
    stopper.install()
    try:
        run_loop(tick, interval_s=interval_s, stopper=stopper, on_error=print_error)
    finally:
        stopper.restore()


def make_tick(
    worker: Worker,
    manifests: Manifests,
    observer: LoopObserver | None = None,
    problems: Callable[[], Sequence[str]] = lambda: (),
) -> Callable[[], None]:
    """One tick of the loop: apply and run, print the report, tell the observer."""

    def tick() -> None:
        desired, paths = manifests()
        apply_errors: list[ReconcilerError] = []

        def on_apply_error(exc: ReconcilerError) -> None:
            print_error(exc)
            apply_errors.append(exc)

        started = time.time()
        if observer is not None:
            observer.manifests(desired, problems())
        try:
            report = worker.tick(desired, manifest_paths=paths, on_apply_error=on_apply_error)
        except ReconcilerError as exc:
            if observer is not None:
                observer.failed(exc, started)
            raise
        print_report(report)
        if observer is not None:
            observer.finished(report, started, apply_errors[0] if apply_errors else None)

    return tick


@contextlib.contextmanager
def serving(args: argparse.Namespace, settings: KafkaSettings, worker: Worker) -> Iterator[LoopObserver | None]:
    """The REST API, health and metrics while the loop runs (None with --no-http)."""
    if args.no_http:
        yield None
        return
    from reconciler.api.server import serving as api_serving

    with api_serving(settings, args.http_bind, worker.worker_id, interval_s=args.interval) as service:
        yield service.observer


@contextlib.contextmanager
def releasing(worker: Worker) -> Iterator[None]:
    """When the block ends, report this worker's instances UNASSIGNED (Connect's shutdown);
    not after the broker proved unreachable: that would only wait for it once more."""
    try:
        yield
    except BrokerUnreachable:
        raise
    except BaseException:
        _release(worker)
        raise
    _release(worker)


def _release(worker: Worker) -> None:
    try:
        written = worker.release()
    except ReconcilerError as exc:
        print_error(exc)
        print("statuses still name this worker: the next run rewrites them", file=sys.stderr, flush=True)
        return
    if written:
        print(f"stopped: {written} status(es) now UNASSIGNED", flush=True)


def make_worker(
    args: argparse.Namespace, settings: KafkaSettings, spark_conf: dict[str, str], stopper: Stopper
) -> Worker:
    from reconciler.runtime.executor import SparkExecutor
    from reconciler.runtime.worker import Worker

    master, remote = spark_target(args.spark_master, args.spark_remote)
    executor = SparkExecutor(
        settings, master=master, remote=remote, spark_conf=spark_conf, timeout_s=args.spark_timeout,
        sink_reader=args.sink_reader,
    )
    return Worker(
        settings, executor, worker_id=args.worker_id, prune=args.prune, allow_empty=args.allow_empty,
        stopping=lambda: stopper.stopping,
    )


def spark_target(master: str | None, remote: str | None) -> tuple[str, str | None]:
    """(master, Spark Connect URL or None): `--spark-remote` or SPARK_REMOTE, unless a master
    is named; both named is an error."""
    if master and remote:
        raise ReconcilerError("give --spark-master or --spark-remote, not both")
    if master:
        return master, None
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    return "local[*]", remote


def parse_spark_conf(items: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ReconcilerError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        conf[key.strip()] = value
    return conf


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


# --- output -----------------------------------------------------------------------------------


def print_report(report: TickReport) -> None:
    from reconciler.render import render_text

    applied = report.applied
    if applied is not None and applied.plan.has_changes:
        sys.stdout.write(render_text(applied.plan, colour=sys.stdout.isatty() and "NO_COLOR" not in os.environ))
    for name in applied.plan.orphans if applied is not None else ():
        LOG.warning(
            "orphan: connector %s is in no manifest and is left as it is (this reconciler created it): "
            "declare it again, or delete it with --prune", name,
        )
    for outcome in report.offsets:
        print(outcome.render())
    header, *rest = report_lines(report)
    print(f"{stamp()} {header}")  # one timestamp a tick: the lines below belong to it
    for line in rest:
        print(line)
    sys.stdout.flush()


def stamp() -> str:
    """UTC time to the millisecond, as log lines show it."""
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def report_lines(report: TickReport) -> list[str]:
    moved = sum(t.records for c in report.connectors for t in c.tasks)
    lines = [
        f"tick (config offset {report.config_end}): {len(report.connectors)} connector(s), "
        f"{report.works} task batch(es), {moved} record(s) moved, {report.records_written} "
        "config/status record(s) written"
    ]
    lines += [_connector_line(c) for c in report.connectors]
    if report.left_to_connect:
        lines.append(f"  left to the group's Kafka Connect workers (not Python connectors): {', '.join(report.left_to_connect)}")
    return lines


def _connector_line(connector: ConnectorReport) -> str:
    from reconciler.render.common import trace_summary

    state = connector.state.value if connector.state is not None else "no status"
    line = f"  {connector.name}: {state}"
    if connector.restarted is not None and connector.restarted.restarts_anything:
        what = (["connector"] if connector.restarted.connector else []) + [f"task {t}" for t in connector.restarted.tasks]
        line += f" (restarted {', '.join(what)})"
    tasks = []
    for task in connector.tasks:
        state_name = task.state.value if task.state is not None else "-"
        tasks.append(f"task {task.task} {state_name}" + (f" ({task.records} records)" if task.ran else ""))
    if tasks:
        line += "; " + ", ".join(tasks)
    if connector.state is InstanceState.FAILED and connector.trace:
        line += f"\n    connector: {trace_summary(connector.trace)}"
    for task in connector.tasks:
        if task.state is InstanceState.FAILED and task.trace:
            line += f"\n    task {task.task}: {trace_summary(task.trace)}"
    return line


def failure_summary(report: TickReport) -> list[str]:
    """What failed in this tick and what to do about it; empty when nothing did."""
    from reconciler.render.common import trace_summary

    offsets = [
        f"  offsets request {o.request_id} of {o.connector}: {o.status}: {o.message}" for o in report.offsets if not o.ok
    ]
    instances = []
    for connector in report.connectors:
        if connector.state is InstanceState.FAILED:
            instances.append(f"  connector {connector.name} FAILED: {trace_summary(connector.trace or '')}")
        instances += [
            f"  task {connector.name}/{task.task} FAILED: {trace_summary(task.trace or '')}"
            for task in connector.tasks
            if task.state is InstanceState.FAILED
        ]
    if not offsets and not instances:
        return []
    lines = [f"run --once: {len(offsets) + len(instances)} failure(s):", *offsets, *instances, "what to do:"]
    if offsets:
        lines.append(
            "  - offsets: the connector stays STOPPED until its request completes; fix the cause and run "
            "again (the request resumes at the step that failed; `reconciler plan` shows it pending)"
        )
    if instances:
        lines.append(
            "  - FAILED connectors and tasks: read the trace with `reconciler status NAME`; fix the cause "
            "(config or data), then commit a new `spec.restart` id (a FAILED instance stays FAILED until "
            "restarted; a config change restarts a connector)"
        )
    return lines


def print_error(exc: ReconcilerError) -> None:
    print(f"{stamp()} {exc.render()}", file=sys.stderr, flush=True)
