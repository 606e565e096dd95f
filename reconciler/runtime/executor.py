"""Running one batch of connector tasks on Spark: `SparkExecutor`, the `TaskExecutor`
(`runtime.batch.tasks`) the worker's tick calls.

`SparkExecutor` runs every source connector's tasks as the partitions of ONE shared Spark job
(a job costs far more than a partition: a thousand small connectors in a thousand jobs took
~100 s, bench/many_connectors.py), and each sink connector's batch as a job of its own,
submitted from a thread of its own into a FAIR scheduler pool named after the connector, so a
slow sink does not hold the others behind it in a queue. A failing task fails only its own
outcome (each task — each sink partition range — reports separately); should the shared
source job fail as a whole, each source connector runs again in a job of its own. Spark is
started on the first batch that has work, never for a tick with nothing to run.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from reconciler.core.kinds import Kind
from reconciler.errors import BrokerUnreachable, ReconcilerError
from reconciler.kafka.io.offset_stores import KeptOffsetsReaders
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import NotRun, TaskOutcome, TaskWork, connector_task_count
from reconciler.runtime.sink import job as sink_job
from reconciler.runtime.source import committed as source_committed
from reconciler.runtime.source import driver as source_driver
from reconciler.runtime.source import job as source_job
from reconciler.runtime.source import task as source_task
from reconciler.runtime.source.driver import BatchOffsets, source_offsets
from reconciler.runtime.spark.connect_attach import RemoteSession, open_remote
from reconciler.runtime.spark.data_source import available, with_kafka_jars
from reconciler.runtime.spark.session import (
    DEFAULT_MASTER,
    DEFAULT_TIMEOUT_S,
    SparkTarget,
    active_spark,
    is_local,
    start,
    warm_up,
    workers_run_this_python,
)
from reconciler.runtime.spark import early, first_imports
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.ship import check_connectors, plugin_files, project_zip, ship

LOG = logging.getLogger(__name__)

MAX_PARALLEL_CONNECTORS = 8
# The FAIR pool of the job every source connector's tasks share (sinks: one pool each).
SOURCES_POOL = "sources"
_T = TypeVar("_T")


class SinkReader(enum.StrEnum):
    """How sinks read Kafka: Spark's Kafka data source when the session has it, always, or never."""

    AUTO = "auto"
    SPARK_KAFKA = "spark-kafka"
    CONFLUENT_KAFKA = "confluent-kafka"


# How sinks read Kafka unless told otherwise. Measured on the 2-core reference machine, 1,000,000
# records of ~100 B to parquet-sink on local[*] (bench/spark_backends.py, docs/runtime.md#back-ends-measured):
# confluent-kafka in the Python workers 0.86–1.8 s and 1.3–2.9 CPU-s, Spark's Kafka data source
# 5.0–13 s and 7–19 CPU-s (the JVM turns every record into a row, then into Arrow). So the data
# source is there to choose (`spark-kafka`, or `auto`: it when the session has it), not the default.
DEFAULT_SINK_READER = SinkReader.CONFLUENT_KAFKA


class SparkExecutor:
    """`TaskExecutor` on Spark: one job for all sources, one per sink connector, FAIR pools, lazy session.

    Joins the Spark already running in the process if there is one (tests share one);
    `close()` stops Spark only when this executor started it. `remote` (sc://…) runs the jobs
    through a Spark Connect server instead of a master. `sink_reader`: how sinks read Kafka:
    confluent-kafka in the Python workers, Spark's Kafka data source (`spark-kafka`), or the
    data source when the session has it (`auto`). `stop_on_close=False`: the process exits
    right after `close()` (the CLI's `run`/`watch`), so a session it started is left to the
    exit: PySpark's JVM stops itself, Spark's shutdown hook included, when the pipe to it
    closes; nothing of a batch is left in Spark once its outcomes are back (measured: the stop
    took 0.6–2.3 s).
    """

    def __init__(
        self,
        settings: KafkaSettings,
        *,
        master: str = DEFAULT_MASTER,
        spark_conf: Mapping[str, str] | None = None,
        source_batch_records: int | None = None,
        remote: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        sink_reader: SinkReader = DEFAULT_SINK_READER,
        stop_on_close: bool = True,
    ) -> None:
        self.settings = settings
        self.target = SparkTarget(master=master, remote=remote, conf=dict(spark_conf or {}), timeout_s=timeout_s)
        self.source_batch_records = source_batch_records
        self.sink_reader = SinkReader(sink_reader)
        self.stop_on_close = stop_on_close
        self._spark: Spark | None = None
        self._remote: RemoteSession | None = None  # a Spark Connect session: what it holds
        self._owns_session = False
        self._threads: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._checked: dict[str, str | None] = {}  # connector class -> why it cannot load on executors
        # Source tasks fenced by this process whose batches since all ended cleanly: no
        # transaction of theirs can be open, so the next batch need not fence them again.
        self._held: set[str] = set()
        self._offsets_readers = KeptOffsetsReaders()  # sources' offsets: each batch reads what is new
        # Why Spark did not start in this batch: the tick fails with it (no connector's own failure).
        self._start_failed: Exception | None = None
        self.session_window: tuple[float, float] | None = None  # when (time.time()) Spark started here
        self._early: threading.Thread | None = None  # `start_early`'s thread
        self._early_failed: Exception | None = None  # why it failed: the first batch's error

    @property
    def master(self) -> str:
        return self.target.address

    @property
    def started(self) -> bool:
        return self._spark is not None

    @property
    def ships_code(self) -> bool:
        """Whether executors need the code shipped (not a local master: it shares our path)."""
        return bool(self.target.remote) or not is_local(self.target.master)

    def prepare(self) -> None:
        """Called by the worker before it writes anything for a batch with tasks: a cluster or
        a Spark Connect server is reached now (one that cannot be fails the tick before any
        status is written, its code shipped and checked). A local master starts at the first
        job instead (`spark`, handed to the jobs uncalled): its JVM is this machine's, and a
        batch with nothing to move never needs it."""
        if self.ships_code:
            self.spark()

    def start_early(self) -> None:
        """Start Spark now, in a thread, while the caller goes on (reading the topics, the apply):
        for a process that will run a batch and then exit (`run --once`), Spark's start then
        overlaps everything before the first job instead of following it. A start that fails
        is the first batch's error, as if it had started there; a batch with nothing to run
        leaves the session unused (the process's exit ends the JVM)."""
        if self._early is None:
            self._early = threading.Thread(target=self._start_in_background, name="spark-start", daemon=True)
            self._early.start()

    def _start_in_background(self) -> None:
        try:
            self.spark()
        except Exception as exc:
            LOG.debug("Spark did not start in the background", exc_info=True)
            self._early_failed = exc

    def spark(self) -> Spark:
        """Spark, started on first use: code shipped, executors checked. A start that failed
        fails every later call of the same batch at once (`run_batch` resets it)."""
        if self._early is not None and self._early is not threading.current_thread():
            self._early.join()  # the lock below would wait as long; this also sees a failed start
            self._early = None
            if self._early_failed is not None:
                self._start_failed, self._early_failed = self._early_failed, None
                raise self._start_failed
        with self._lock:
            if self._spark is None:
                if self._start_failed is not None:
                    raise self._start_failed
                began = time.time()
                try:
                    self._spark, launched = self._start()
                    # Its JVM launched first thing (`early`): the start began there.
                    self.session_window = (min(began, launched or began), time.time())
                except Exception as exc:
                    self._start_failed = exc
                    raise
            return self._spark

    def _start(self) -> tuple[Spark, float | None]:
        """Spark, and when (time.time()) its JVM was launched when `early` did it before."""
        if self.target.remote:  # the kept session of an earlier run when the server still has it
            self._remote = open_remote(self.target, project_zip())
            self._owns_session = True
            return Spark.over(self._remote.session), None
        existing = active_spark()
        target = self.target
        if existing is None and self.sink_reader != SinkReader.CONFLUENT_KAFKA:
            target = dataclasses.replace(target, conf=with_kafka_jars(target.conf))
        launched = None if existing else early.take(target)
        spark = existing or start(target, early=launched)
        self._owns_session = existing is None
        try:
            if self._owns_session and self.ships_code:
                ship(spark, [project_zip()])
            if self._owns_session and not workers_run_this_python(self.target):
                warm_up(spark)  # the preflight: raises if executors lack modules
        except BaseException:
            if self._owns_session:
                spark.stop()
            raise
        return spark, launched.began if launched else None

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        """One batch of every task in `works`. `closing`: the worker shuts down after this
        batch; sink tasks get `pre_commit(closing=True)` either way, because a batch opens
        and closes its tasks, so nothing stays buffered between batches."""
        if not works:
            return []
        self._start_failed = None
        by_connector: dict[str, list[TaskWork]] = {}
        for work in works:
            by_connector.setdefault(work.connector, []).append(work)
        LOG.info("batch of %d task(s) of %d connector(s) begins", len(works), len(by_connector))
        refused = self._unloadable(works)
        first = {w.connector: (w.connector_class, w.connector_config) for w in works if w.connector_class not in refused}
        first_imports.ask_for(first.values(), sinks=any(w.kind == Kind.SINK for w in works))
        by_connector = {name: group for name, group in by_connector.items() if group[0].connector_class not in refused}
        works_left = [w for w in works if w.connector_class not in refused]
        if self._threads is None:
            self._threads = ThreadPoolExecutor(MAX_PARALLEL_CONNECTORS, thread_name_prefix="connector")
        threads = self._threads
        # Sinks start at once; sources first need their offsets stores read (once for them all).
        futures = [
            threads.submit(self._run_connector, group, None)
            for group in by_connector.values()
            if group[0].kind == Kind.SINK
        ]
        sources = [w for w in works_left if w.kind == Kind.SOURCE]
        if sources:
            offsets = self._source_offsets(sources)
            groups = [group for group in by_connector.values() if group[0].kind == Kind.SOURCE]
            futures.append(threads.submit(self._run_sources, groups, offsets))
        outcomes = {(o.connector, o.task_id): o for f in futures for o in f.result()}
        self._hold_clean(sources, outcomes)
        outcomes.update({
            (w.connector, w.task_id): TaskOutcome(
                connector=w.connector, task_id=w.task_id, records=0, error=refused[w.connector_class]
            )
            for w in works if w.connector_class in refused
        })
        return [outcomes[(w.connector, w.task_id)] for w in works]

    def _hold_clean(self, sources: Sequence[TaskWork], outcomes: Mapping[tuple[str, int], TaskOutcome]) -> None:
        """Keep the fence of each source task whose batch ran and ended cleanly; drop the others'
        (a task that failed or did not run may have left a transaction open: fence it again)."""
        for work in sources:
            key = source_driver.fence_key(self.settings, work)
            outcome = outcomes.get((work.connector, work.task_id))
            if outcome is not None and outcome.error is None and outcome.waited is None:
                self._held.add(key)
            else:
                self._held.discard(key)

    def _unloadable(self, works: Sequence[TaskWork]) -> dict[str, str]:
        """Connector classes the executors cannot load (checked once each), with the trace to
        report; their `module:Class` modules are shipped first (a cluster's session is up)."""
        if not self.ships_code:
            return {}
        spark = self.spark()
        new = sorted({w.connector_class for w in works} - set(self._checked))
        if new and self._remote is not None:
            failures = self._remote.check_classes(new)
            self._checked.update({name: failures.get(name) for name in new})
        elif new:
            ship(spark, [path for name in new for path in plugin_files(name)])
            failures = check_connectors(spark, new)
            self._checked.update({name: failures.get(name) for name in new})
        return {w.connector_class: why for w in works if (why := self._checked.get(w.connector_class)) is not None}

    def _source_offsets(self, works: Sequence[TaskWork]) -> BatchOffsets:
        """The committed source offsets, with the connectors that cannot run on them (all of
        them when reading failed in a way no one connector's store explains)."""
        try:
            return source_offsets(self.settings, works, self._held, self._offsets_readers)
        except Exception:
            return BatchOffsets({}, dict.fromkeys((w.connector for w in works), NotRun(trace=traceback.format_exc())))

    def _run_sources(self, groups: Sequence[list[TaskWork]], offsets: BatchOffsets) -> list[TaskOutcome]:
        """Every source connector's tasks as the partitions of one shared job (`source_job.run_sources`).

        A connector that cannot run (its offsets, its class) reports so alone. Should the shared
        job itself fail, what its tasks committed is unknown: each connector runs again in a job
        of its own after its tasks are fenced and its offsets read anew, as a new batch would,
        so a connector whose task kills its worker fails alone."""
        outcomes: list[TaskOutcome] = []
        plans: list[source_job.SourcePlan] = []
        for works in groups:
            planned = self._guarded(works, functools.partial(self._plan_source, works, offsets))
            if isinstance(planned, source_job.SourcePlan):
                plans.append(planned)
            else:
                outcomes += planned
        try:
            return outcomes + source_job.run_sources(self.spark, plans, pool=SOURCES_POOL)
        except Exception as exc:
            if exc is self._start_failed:
                raise
            LOG.warning("the shared job of %d source connector(s) failed; each runs again in a job of its own",
                        len(plans), exc_info=True)
        again = [list(plan.works) for plan in plans if plan.items]
        outcomes += source_job.run_sources(self.spark, [plan for plan in plans if not plan.items], pool=SOURCES_POOL)
        self._held.difference_update(source_driver.fence_key(self.settings, w) for works in again for w in works)
        offsets = self._source_offsets([w for works in again for w in works])
        for works in again:  # the failed job's tasks may still commit: each reads its offsets after its fence
            outcomes += self._run_connector(works, offsets, reread=True)
        return outcomes

    def _plan_source(
        self, works: list[TaskWork], offsets: BatchOffsets, *, reread: bool = False
    ) -> source_job.SourcePlan | list[TaskOutcome]:
        """The connector's share of the shared job, or its outcomes when it cannot run now;
        `reread`: its tasks read their offsets again after their fence (`source.committed`)."""
        name = works[0].connector
        if (not_run := offsets.not_run.get(name)) is not None:
            if not_run.waited is not None:
                LOG.warning("connector %s: its tasks wait for the next batch: %s", name, not_run.waited)
            return not_run.outcomes(works)
        stores = source_driver.connector_stores(self.settings, works)[name]
        committed = source_committed.committed_offsets(offsets.replays, name, stores)
        limit = self.source_batch_records or source_task.DEFAULT_BATCH_RECORDS
        return source_job.plan_source(self.settings, works, committed, stores=stores, max_records=limit, reread=reread)

    def _run_connector(
        self,
        works: list[TaskWork],
        offsets: BatchOffsets | None,
        *,
        reread: bool = False,
    ) -> list[TaskOutcome]:
        """One connector's batch in a job of its own (`_guarded`: its failures are its tasks');
        `reread`: a source's tasks read their offsets again after their fence."""
        pool = f"connector-{works[0].connector}"

        def run() -> list[TaskOutcome]:
            if works[0].kind == Kind.SINK:
                return sink_job.run_sink(
                    self.spark, self.settings, works, connector_task_count(works), pool=pool,
                    kafka_source=self._kafka_source(),
                )
            assert offsets is not None, "a source's batch is given the offsets read for the sources"
            planned = self._plan_source(works, offsets, reread=reread)
            if not isinstance(planned, source_job.SourcePlan):
                return planned
            return source_job.run_sources(self.spark, [planned], pool=pool)

        return self._guarded(works, run)

    def _guarded(self, works: list[TaskWork], step: Callable[[], _T]) -> _T | list[TaskOutcome]:
        """`step()`; whatever goes wrong becomes the connector's tasks' outcomes, except a
        cluster its clients cannot reach (`*.override.bootstrap.servers`, a broker restarting):
        then the tasks wait for the next batch and keep their status, as a Java task does, whose
        clients retry without end (Connect sets their `max.block.ms` and `delivery.timeout.ms`
        to the maximum), rather than turn FAILED until someone restarts them."""
        name = works[0].connector
        try:
            return step()
        except BrokerUnreachable as exc:
            LOG.warning("connector %s: its tasks wait for the next batch: %s", name, exc.message)
            return NotRun(waited=exc.message).outcomes(works)
        except Exception as exc:
            if exc is self._start_failed:  # Spark itself did not start: the tick's error, not this connector's
                raise
            LOG.debug("batch of connector %s failed", name, exc_info=True)
            return NotRun(trace=traceback.format_exc()).outcomes(works)

    def _kafka_source(self) -> bool:
        """Whether sinks read through Spark's Kafka data source; `spark-kafka` insists on it."""
        if self.sink_reader == SinkReader.CONFLUENT_KAFKA:
            return False
        if available(self.spark().session()):
            return True
        if self.sink_reader == SinkReader.SPARK_KAFKA:
            raise ReconcilerError(
                f"Spark's Kafka data source is not available on {self.master}",
                hint="on Spark Connect, start the server with the spark-sql-kafka-0-10 jars (--jars or "
                "--packages); or use --sink-reader auto to fall back to confluent-kafka",
            )
        return False

    def close(self) -> None:
        """Stop the threads, and Spark if this executor started it."""
        if self._threads is not None:
            self._threads.shutdown(wait=True)
            self._threads = None
        self._offsets_readers.close()
        if self._early is not None and self._early.is_alive() and not self.stop_on_close:
            return  # a start nothing needed, still under way: the process's exit ends its JVM
        with self._lock:
            if self._spark is not None and self._owns_session and self.stop_on_close:
                self._spark.stop()  # a kept Spark Connect session is not released (`connect_sessions`)
            self._spark = None
            self._remote = None
