"""The SparkSession and the one way jobs run on it: a Python function per work item.

Session defaults (docs/runtime.md#spark-session):
- `local[*]` unless `--spark-master` says otherwise; `--spark-conf` entries override defaults;
- the web UI is off (it opens ports and costs start time), logs at WARN, FAIR scheduling so
  the jobs of different connectors share the cores instead of queueing behind each other;
- for a local master: the workers run this very interpreter (`PYSPARK_PYTHON`, else they may
  start a Python without confluent_kafka), see the driver's `sys.path` (so a connector given
  as `module:Class` that the driver can import, the workers can too), and the driver listens
  on 127.0.0.1 only. On a cluster those are the cluster's business.

Jobs (`run_partitions`) never move data through the JVM: the input is the n integers 0…n-1
in n partitions (no shuffle, no records), each partition looks its work item up by that id,
does the I/O itself from the Python worker (reading Kafka into Arrow batches, or producing to
Kafka) and returns one tiny summary. The job is a plain RDD `mapPartitions`, not a DataFrame
`mapInArrow`: with nothing but summaries coming back, the SQL engine only adds cost — measured
on the 2-core reference machine, the first `mapInArrow` job of a session took 4.8–6.6 s (query
planning, code generation, Arrow set-up in the JVM) against 1.5–3.6 s for the first RDD job,
and each later job ~0.2–0.45 s against ~0.12–0.3 s.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from reconciler import heap
from reconciler.errors import ReconcilerError
from reconciler.runtime import failpoints

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
APP_NAME = "connect-reconciler"

Item = TypeVar("Item")
Result = TypeVar("Result")


@dataclass(frozen=True)
class PartitionFailed:
    """A partition function raised; the traceback text as the worker saw it."""

    trace: str


# Spark's default log4j profile prints start-up chatter (native-hadoop, loopback hostname, one
# warning per FAIR pool created on the fly) on every run; keep warnings that mean something.
LOG4J2_PROPERTIES = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.pools.name = org.apache.spark.scheduler.FairSchedulableBuilder
logger.pools.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""
# With `--log-format json` (RECONCILER_LOG_FORMAT=json) the JVM's lines are JSON objects too,
# with the fields of the reconciler's own (reconciler.cli.logs), so every line of stderr parses.
JSON_LAYOUT = (
    "appender.console.layout.type = JsonTemplateLayout\n"
    'appender.console.layout.eventTemplate = {"time":{"$resolver":"timestamp","pattern":'
    '{"format":"yyyy-MM-dd\'T\'HH:mm:ss.SSS\'Z\'","timeZone":"UTC"}},'
    '"level":{"$resolver":"level","field":"name"},"logger":{"$resolver":"logger","field":"name"},'
    '"message":{"$resolver":"message","stringified":true},"event":"log",'
    '"exception":{"$resolver":"exception","field":"stackTrace","stackTrace":{"stringified":true}}}\n'
)
LOG4J2_JSON_PROPERTIES = LOG4J2_PROPERTIES.replace(
    "appender.console.layout.type = PatternLayout\n"
    "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n",
    JSON_LAYOUT,
)


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def session_conf(master: str, overrides: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings a session starts with: our defaults, then the user's."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.scheduler.mode": "FAIR",
        # Jobs here have no shuffle; keep Spark from planning 200 empty reducers if one appears.
        "spark.sql.shuffle.partitions": "8",
    }
    # The driver JVM only schedules here (data never passes through it), so the quick C1 JIT
    # is enough: measured on 2 cores, session start ~1 s shorter, and per job half the JVM CPU
    # (~0.11 s instead of ~0.25 s) and ~0.14 s instead of ~0.19 s of wall time.
    conf["spark.driver.extraJavaOptions"] = f"-Dlog4j.configurationFile={_log4j_file()} -XX:TieredStopAtLevel=1"
    if is_local(master):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(_driver_path())
    conf.update(overrides)
    return conf


def _log4j_file() -> str:
    json_logs = os.environ.get("RECONCILER_LOG_FORMAT") == "json"
    text = LOG4J2_JSON_PROPERTIES if json_logs else LOG4J2_PROPERTIES
    kind = "-json" if json_logs else ""
    path = os.path.join(tempfile.gettempdir(), f"connect-reconciler-log4j2{kind}-{os.getuid()}.properties")
    try:
        with open(path) as handle:
            if handle.read() == text:
                return path
    except OSError:
        pass
    temp = f"{path}.{os.getpid()}"
    with open(temp, "w") as handle:
        handle.write(text)
    os.replace(temp, path)  # atomic: concurrent starts never read half a file
    return path


def _driver_path() -> list[str]:
    """The driver's import path, for workers of a local master (they then import the same code)."""
    entries = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(entries))


def start_session(master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None) -> SparkSession:
    """Start (or join the already running) SparkSession of this process."""
    try:
        from pyspark.sql import SparkSession
    except ImportError as exc:
        raise ReconcilerError(
            "running connectors needs PySpark", hint="pip install 'connect-reconciler[spark]'"
        ) from exc
    if is_local(master):
        # Read by PySpark when the context starts: the workers must run this interpreter.
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    failpoints.mark_driver()  # inherited by the JVM and, through it, by every Python worker
    builder = SparkSession.builder.master(master).appName(APP_NAME)
    for key, value in session_conf(master, conf or {}).items():
        builder = builder.config(key, value)
    started = time.monotonic()
    try:
        session = builder.getOrCreate()
    except Exception as exc:  # Py4J / JVM start-up errors come in many types
        raise ReconcilerError(
            f"cannot start Spark (master {master}): {exc}",
            hint="check Java 17 is installed (JAVA_HOME), --spark-master and --spark-conf",
        ) from exc
    session.sparkContext.setLogLevel("WARN")
    LOG.info("Spark session (%s) ready in %.1fs", master, time.monotonic() - started)
    return session


def warm_up(session: SparkSession) -> None:
    """Start one Python worker per core and import what tasks use, before the first batch.

    The first job of a session otherwise pays for forking the workers and importing pyarrow,
    confluent_kafka and the connectors (seconds on a small machine) inside a batch's time.
    """
    cores = max(1, session.sparkContext.defaultParallelism)
    run_partitions(session, list(range(cores)), _import_task_modules, pool="default", description="warm-up")


def _import_task_modules(_: int) -> None:
    import confluent_kafka  # noqa: F401
    import pyarrow as pa
    import pyarrow.parquet  # noqa: F401

    from reconciler.connectors.registry import available_connectors

    pa.array([b""], pa.binary())  # pyarrow sets its conversion machinery up on first use
    available_connectors()


def active_session() -> SparkSession | None:
    """The SparkSession already running in this process, if any.

    Not `SparkSession.getActiveSession()`: that one is per thread, so from another thread it
    would miss a running session and the caller would think it started (and may stop) Spark.
    """
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    if SparkContext._active_spark_context is None:  # the process-wide context, any thread
        return None
    session: SparkSession = SparkSession.builder.getOrCreate()  # joins it, starts nothing
    return session


def run_partitions(
    session: SparkSession,
    items: Sequence[Item],
    function: Callable[[Item], Result],
    *,
    pool: str,
    description: str,
) -> list[Result | PartitionFailed]:
    """`function(item)` for every item, each in its own Spark partition; results in item order.

    `function` must be importable by the workers (a module-level function, or a `partial` of
    one) and should catch its own errors; anything it raises comes back as `PartitionFailed`
    rather than failing the job, so one item cannot take the others down with it.
    """
    if not items:
        return []
    context = session.sparkContext
    # Per-thread properties (PySpark pins Python threads to JVM threads): this job's FAIR pool.
    context.setLocalProperty("spark.scheduler.pool", pool)
    context.setJobDescription(description)
    indexes = context.parallelize(range(len(items)), len(items))
    pairs = indexes.mapPartitions(partial(_partition_main, function, list(items))).collect()
    results: dict[int, Result | PartitionFailed] = dict(pairs)
    for index in range(len(items)):  # only if Spark lost a partition: say so rather than guess
        results.setdefault(index, PartitionFailed(f"Spark returned no result for partition {index}"))
    return [results[i] for i in range(len(items))]


def _partition_main(
    function: Callable[[Any], Any], items: list[Any], indexes: Iterator[int]
) -> Iterator[tuple[int, Any]]:
    """Runs in a Python worker: the partition's element is the index of the item to run.

    The cyclic garbage collector is paused meanwhile: moving records allocates millions of
    short-lived containers (one message object per record) that reference counting frees
    anyway, and the collector's passes over them cost ~20% of a sink partition's CPU
    (measured: 1.0–1.3 s instead of 1.3–1.6 s per 500,000 records).
    """
    for index in indexes:
        try:
            with heap.building():
                result: Any = function(items[index])
        except Exception:
            result = PartitionFailed(traceback.format_exc())
        yield index, result
