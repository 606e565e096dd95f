"""`run` and `watch`: apply the manifests, then run every connector's tasks, tick after tick.

Each tick applies the manifests (exactly as `reconciler apply`), then brings every connector
of the group to its target state and runs one batch of every running task on Spark
(`app.tick`). `run_once` is one tick; `serve` repeats them every `interval_s` seconds
(`app.loop`) until SIGTERM/SIGINT, after which the current batch finishes, Spark stops and
`serve` returns, all within the grace period (docs/runtime.md#stopping). Failures are reported
and the ticks go on: a bad moment of the control plane or of one connector stops no other data.

`watch` re-reads the manifests when the files change (`app.reload`) and, every `resync_s`
seconds without a tick, runs a resync pass: the files re-read and the plan applied, without a
batch (events can be missed, and the cluster can drift from the manifests).

When it ends, the process reports its connectors and tasks UNASSIGNED, as a Connect worker
does when it stops them (docs/runtime.md#liveness-between-batches). The loop serves the
read-only REST API, health and metrics (`reconciler.api`) unless `http_bind` is None.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from reconciler.app.apply import ApplyOutcome
from reconciler.app.loop import Stopper, run_loop
from reconciler.app.reload import FixedManifests, Manifests, ManifestSource, ReloadOutput
from reconciler.app.tick import TickReport, TickRunner
from reconciler.core.plan import PlanOptions
from reconciler.errors import ReconcilerError
from reconciler.kafka.settings import KafkaSettings
from reconciler.manifests import load_or_raise
from reconciler.offsets.model import OffsetsOutcome
from reconciler.runtime.batch import auto_restart
from reconciler.runtime.executor import SinkReader, SparkExecutor
from reconciler.runtime.spark.session import DEFAULT_MASTER, DEFAULT_TIMEOUT_S
from reconciler.runtime.batch.tasks import TaskExecutor

if TYPE_CHECKING:
    from reconciler.api.observer import LoopObserver


class ServeOutput(ReloadOutput, Protocol):
    """What `run` and `watch` say while they run (the CLI prints it as text or JSON lines)."""

    def report(self, report: TickReport) -> None: ...
    def resynced(self, applied: ApplyOutcome, offsets: Sequence[OffsetsOutcome]) -> None: ...
    def applied_before_failure(self, applied: ApplyOutcome) -> None: ...
    def error(self, exc: ReconcilerError) -> None: ...
    def warning(self, message: str, **fields: Any) -> None: ...
    def manifests_still_invalid(self, problems: int) -> None: ...


@dataclass(frozen=True, kw_only=True)
class SparkOptions:
    """Where the tasks run: a Spark master, or a Spark Connect server (`remote`)."""

    master: str = DEFAULT_MASTER
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S
    sink_reader: SinkReader = SinkReader.CONFLUENT_KAFKA
    # False: the process exits right after (the CLI's `entry`), and Spark's JVM stops itself then.
    stop_on_close: bool = True
    # True: Spark starts in the background as the runner is built (`SparkExecutor.start_early`),
    # for a process that runs one tick and exits (`run --once`), its start overlapping the apply.
    start_early: bool = False


@dataclass(frozen=True, kw_only=True)
class ServeOptions:
    """How `run`/`watch` run: the tick cadence, stopping, the REST API (None: none), the batch."""

    interval_s: float
    grace_s: float
    http_bind: str | None = None
    resync_s: float | None = None
    worker_id: str | None = None
    plan: PlanOptions = field(default_factory=PlanOptions)  # --prune, --allow-empty
    auto_restart_unit_s: float = auto_restart.DEFAULT_UNIT_S
    spark: SparkOptions = field(default_factory=SparkOptions)


Wrap = Callable[[TaskExecutor], TaskExecutor]


def _as_is(executor: TaskExecutor) -> TaskExecutor:
    return executor


@contextlib.contextmanager
def run_once(
    settings: KafkaSettings, paths: Sequence[str], options: ServeOptions, output: ServeOutput, *, wrap: Wrap = _as_is
) -> Iterator[TickReport]:
    """One tick (`run --once`), reported; then this worker's instances UNASSIGNED. The block
    gets the tick's report before Spark stops (a summary is not kept waiting for it)."""
    desired = load_or_raise(paths)
    with _running(settings, options, output, wrap) as (runner, _):
        with releasing(runner, output):
            report = runner.tick(desired, manifest_paths=paths, on_batch_error=output.applied_before_failure)
            output.report(report)
        yield report


def serve(
    settings: KafkaSettings,
    paths: Sequence[str],
    options: ServeOptions,
    output: ServeOutput,
    *,
    watch: bool = False,
    wrap: Wrap = _as_is,
) -> None:
    """Ticks until SIGTERM/SIGINT (`run`); with `watch`, the manifests re-read when the files
    change and a resync pass every `options.resync_s` seconds without a tick (`watch`)."""
    desired = load_or_raise(paths)
    watched = Manifests(paths, desired, output) if watch else None
    manifests: ManifestSource = watched if watched is not None else FixedManifests(desired, paths)
    with _running(settings, options, output, wrap) as (runner, stopper):
        resync = None
        if watched is not None:
            watched.watch(changed=stopper.wake.set, stop=stopper.stop)
            resync = partial(resync_pass, runner, watched, output, stopper)
        with serving(settings, options, runner, output) as observer, releasing(runner, output):
            tick = make_tick(runner, manifests, output, observer)
            stopper.install()
            try:
                run_loop(
                    tick, interval_s=options.interval_s, stopper=stopper, on_error=output.error,
                    resync=resync, resync_s=options.resync_s,
                )
            finally:
                stopper.restore()


@contextlib.contextmanager
def _running(
    settings: KafkaSettings, options: ServeOptions, output: ServeOutput, wrap: Wrap
) -> Iterator[tuple[TickRunner, Stopper]]:
    """The tick runner and the signal handling of one process; when the block ends the watcher
    stops, Spark stops, and the grace period no longer runs."""
    stopper = Stopper(options.grace_s, notify=output.warning)
    runner = open_runner(settings, options, stopping=lambda: stopper.stopping, wrap=wrap)
    try:
        yield runner, stopper
    finally:
        stopper.request_stop()
        runner.close()
        stopper.finished()


def open_runner(
    settings: KafkaSettings, options: ServeOptions, *, stopping: Callable[[], bool], wrap: Wrap = _as_is
) -> TickRunner:
    """The ticks' runner on a Spark executor (Spark itself starts at the first batch)."""
    spark = options.spark
    executor = SparkExecutor(
        settings, master=spark.master, remote=spark.remote, spark_conf=dict(spark.conf), timeout_s=spark.timeout_s,
        sink_reader=spark.sink_reader, stop_on_close=spark.stop_on_close,
    )
    if spark.start_early:
        executor.start_early()
    return TickRunner(
        settings, wrap(executor), worker_id=options.worker_id, plan_options=options.plan,
        stopping=stopping, auto_restart_unit_s=options.auto_restart_unit_s,
    )


def make_tick(
    runner: TickRunner, manifests: ManifestSource, output: ServeOutput, observer: LoopObserver | None = None
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
            observer.manifests(desired, manifests.problems)
        try:
            report = runner.tick(
                desired, manifest_paths=paths, on_apply_error=on_apply_error, on_batch_error=output.applied_before_failure
            )
        except ReconcilerError as exc:
            if observer is not None:
                observer.failed(exc, started)
            raise
        output.report(report)
        if invalid := manifests.problems:
            output.manifests_still_invalid(len(invalid))  # a status line per tick, not only the edit's
        if observer is not None:
            observer.finished(report.outcomes, started, apply_errors[0] if apply_errors else None)

    return tick


def resync_pass(runner: TickRunner, manifests: Manifests, output: ServeOutput, stopper: Stopper) -> None:
    """Apply the plan (and any offsets request) for the manifests: the control plane only,
    batches keep their interval. Files that changed unnoticed get a full tick instead, as any
    change does."""
    if manifests.notice():
        stopper.wake.set()
        return
    desired, paths = manifests()
    applied = runner.apply(desired, manifest_paths=paths)
    output.resynced(applied, applied.offsets)


@contextlib.contextmanager
def serving(
    settings: KafkaSettings, options: ServeOptions, runner: TickRunner, output: ServeOutput
) -> Iterator[LoopObserver | None]:
    """The REST API, health and metrics while the loop runs (None without `http_bind`)."""
    if options.http_bind is None:
        yield None
        return
    from reconciler.api.server import serving as api_serving  # FastAPI and uvicorn: only when serving

    with api_serving(
        settings, options.http_bind, runner.worker_id, interval_s=options.interval_s, read_live=runner.read_live
    ) as service:
        output.notice(
            f"REST API (read-only) on {service.url}: /connectors, /healthz, /readyz, /metrics",
            event="rest-api", url=service.url,
        )
        yield service.observer


@contextlib.contextmanager
def releasing(runner: TickRunner, output: ServeOutput) -> Iterator[None]:
    """When the block ends, report this worker's instances UNASSIGNED (Connect's shutdown);
    not after the broker proved unreachable (`TickRunner.release`): that would only wait for it
    once more."""
    try:
        yield
    except BaseException:
        _release(runner, output)
        raise
    _release(runner, output)


def _release(runner: TickRunner, output: ServeOutput) -> None:
    try:
        written = runner.release()
    except ReconcilerError as exc:
        output.error(exc)
        written = None
    if written is None and runner.reached:
        output.warning("statuses this worker wrote still name it: the next run rewrites them")
    elif written:
        output.notice(f"stopped: {written} status(es) now UNASSIGNED", event="released", statuses=written)
