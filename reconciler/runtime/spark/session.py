"""The Spark tasks run on (`handle.Spark`): local, a cluster master, or a Spark Connect server.

Session defaults (docs/runtime.md#spark-session):
- `local[*]` unless `--spark-master` (a classic session) or `--spark-remote` / SPARK_REMOTE (a
  Spark Connect session) says otherwise; `--spark-conf` entries override defaults;
- the web UI is off (it opens ports and costs start time), logs at WARN, FAIR scheduling so
  the jobs of different connectors share the cores instead of queueing behind each other;
- a local master: the workers run this very interpreter (`PYSPARK_PYTHON`), see the driver's
  `sys.path` (so a `module:Class` connector the driver imports, the workers import too), and
  the driver listens on 127.0.0.1 only;
- a cluster master: the driver's address is the one that routes to the master (executors call
  back to it), the executors' Python is `spark.pyspark.python` when given (PySpark reads only
  the environment for it, so it is copied there), and the project's code is shipped to them
  (`ship`). The master must answer within the timeout, and an executor must register;
- with `--log-format json`, the JVM logs JSON lines, and what it writes to stderr outside
  logging is made JSON too (`jvm_output`).

A classic start is the SparkContext only; its SparkSession is built when something first asks
for a DataFrame (`handle`). How jobs run is `jobs`; what the executors must have, `ship`.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from pathlib import Path
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from reconciler import failpoints
from reconciler.errors import ReconcilerError
from reconciler.net import reachable
from reconciler.runtime.spark import context, jvm_output
from reconciler.runtime.spark.gateway import Launched
from reconciler.runtime.spark import prefork
from reconciler.runtime.spark.cds import driver_options
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.ship import preflight

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

LOG = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
DEFAULT_TIMEOUT_S = 60.0
APP_NAME = "connect-reconciler"
ENV_REMOTE = "SPARK_REMOTE"
CONNECT_PORT = 15002  # Spark Connect's default port

# Arrow batches to Python workers are bounded by rows only (Spark's 10,000). With a byte bound
# as well, Spark measures the batch after every row, and measuring a list column (the sink's
# headers) walks the whole batch: quadratic, measured at ~15 JVM CPU-seconds per 300,000
# records; Int.MaxValue is the value that turns the measuring off.
SQL_DEFAULTS = {"spark.sql.execution.arrow.maxBytesPerBatch": "2147483647"}


class SparkUnavailable(ReconcilerError):
    """The Spark master or Spark Connect server cannot be reached, or gives no executor."""


@dataclass(frozen=True, kw_only=True)
class SparkTarget:
    """Where tasks run: a classic master, or a Spark Connect server (`remote`)."""

    master: str = DEFAULT_MASTER
    remote: str | None = None
    conf: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S

    @property
    def address(self) -> str:
        return self.remote or self.master


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def workers_run_this_python(target: SparkTarget) -> bool:
    """A local session whose Python workers run this interpreter, on this sys.path (as
    `_python_for_workers` and `session_conf` arrange unless the user chose another Python):
    a preflight there cannot find a module missing that would not be missing here, and only
    costs its own job (measured 2–3 s of a one-record `run --once`, forking a worker per core
    and importing every task module in each, where the batch needs only its tasks' workers)."""
    if target.remote or not is_local(target.master):
        return False
    chosen = os.environ.get("PYSPARK_PYTHON")
    return chosen is None or Path(chosen).resolve() == Path(sys.executable).resolve()


def session_conf(master: str, overrides: Mapping[str, str]) -> dict[str, str]:
    """The Spark settings a classic session starts with: our defaults, then the user's."""
    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.scheduler.mode": "FAIR",
        # Jobs here have no shuffle; keep Spark from planning 200 empty reducers if one appears.
        "spark.sql.shuffle.partitions": "8",
        **SQL_DEFAULTS,
    }
    # The driver JVM only schedules here (data never passes through it), so the quick C1 JIT
    # is enough: measured on 2 cores, session start ~1 s shorter, and per job half the JVM CPU
    # (~0.11 s instead of ~0.25 s) and ~0.14 s instead of ~0.19 s of wall time.
    # Spark's classes mapped from a class-data-sharing archive when one was built: half the start.
    java_options = f"-Dlog4j.configurationFile={jvm_output.log4j_file()} -XX:TieredStopAtLevel=1 {driver_options()}"
    conf["spark.driver.extraJavaOptions"] = java_options.strip()
    if is_local(master):
        conf["spark.driver.host"] = "127.0.0.1"
        conf["spark.driver.bindAddress"] = "127.0.0.1"
        conf["spark.executorEnv.PYTHONPATH"] = os.pathsep.join(_driver_path())
        # PySpark's daemon, importing PySpark from the installed package (compiled once), not
        # from Spark's zip (compiled by every worker): the first Python job ~1 s sooner.
        conf["spark.python.daemon.module"] = "reconciler.runtime.spark.daemon"
    else:
        # Executors connect back to the driver: it must listen on, and advertise, an address
        # they can reach, not whatever the host name resolves to (often 127.0.1.1 on Debian).
        host = os.environ.get("SPARK_LOCAL_IP") or route_to(master_addresses(master))
        conf["spark.driver.host"] = host
        conf["spark.driver.bindAddress"] = host
    conf.update(overrides)
    return conf


def master_addresses(master: str) -> list[tuple[str, int]]:
    """(host, port) of every master in `spark://h1:p1,h2:p2` (standalone HA lists several)."""
    addresses = []
    for part in master.removeprefix("spark://").split(","):
        host, _, port = part.strip().rpartition(":")
        if host and port.isdigit():
            addresses.append((host.strip("[]"), int(port)))
    return addresses


def route_to(addresses: list[tuple[str, int]]) -> str:
    """This machine's address on the route to the first of `addresses` (no packet is sent)."""
    for host, port in addresses:
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
                probe.connect((host, port))
                address: str = probe.getsockname()[0]
                return address
        except OSError:
            continue
    return socket.gethostbyname(socket.gethostname())


def _driver_path() -> list[str]:
    """The driver's import path, for workers of a local master (they then import the same code)."""
    entries = [os.path.abspath(p) for p in sys.path if p and os.path.isdir(p)]
    return list(dict.fromkeys(entries))


def start(target: SparkTarget, *, early: EarlyStart | None = None) -> Spark:
    """Start the Spark `target` names: a Connect client's session, or a classic context (`early`:
    its JVM, launched before: `start_classic`)."""
    if target.remote:
        return Spark.over(start_remote(target.remote, target.conf, timeout_s=target.timeout_s))
    return start_classic(target.master, target.conf, timeout_s=target.timeout_s, early=early)


def _import_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        raise ReconcilerError(
            "running connectors needs PySpark", hint="pip install 'connect-reconciler[spark]'"
        ) from exc


def start_session(
    master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> SparkSession:
    """Start (or join the already running) classic SparkSession of this process, built at once."""
    return start_classic(master, conf, timeout_s=timeout_s).session()


def start_classic(
    master: str = DEFAULT_MASTER, conf: Mapping[str, str] | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
    early: EarlyStart | None = None,
) -> Spark:
    """Start (or join the running) classic SparkContext of this process; its session, on first use.
    `early`: its JVM and prefork, launched before for these very settings (`early.take`)."""
    _import_pyspark()
    from pyspark.sql import SparkSession

    conf = dict(conf or {})
    if master.startswith("spark://"):
        _check_masters(master, timeout_s)
    options, daemon_early = (early.options, early.prefork) if early else classic_options(master, conf)
    builder = SparkSession.builder
    for key, value in options.items():
        builder = builder.config(key, value)
    started = early.started if early else time.monotonic()
    try:
        spark_context = context.start_context(options, relay_stderr=jvm_output.json_logs(),
                                              launched=early.jvm if early else None)
    except Exception as exc:  # Py4J / JVM start-up errors come in many types
        if daemon_early is not None:
            daemon_early.close()
        raise ReconcilerError(
            f"cannot start Spark (master {master}): {exc}",
            hint="check Java 17 is installed (JAVA_HOME), --spark-master and --spark-conf",
        ) from exc
    spark_context.setLogLevel("WARN")
    if is_local(master) and workers_run_this_python(SparkTarget(master=master)):
        context.start_workers(spark_context)  # the Python workers start while the caller goes on
    if not is_local(master):
        _wait_for_executor(spark_context, master, timeout_s)
    LOG.info("Spark session (%s) ready in %.1fs", master, time.monotonic() - started)  # its context: the rest is lazy
    return Spark.classic(spark_context, builder.getOrCreate)  # joins the context: starts no other


@dataclass(kw_only=True)
class EarlyStart:
    """A local session's JVM and prefork, started by `early.launch` for `master` and `conf`."""

    master: str
    conf: dict[str, str]
    options: dict[str, str]  # the session's settings, the prefork's address among them
    prefork: prefork.Prefork | None
    jvm: Launched
    started: float  # time.monotonic() when the launch began
    began: float  # the same moment, time.time()

    def abandon(self) -> None:
        self.jvm.abandon()
        if self.prefork is not None:
            self.prefork.close()


def classic_options(master: str, conf: Mapping[str, str]) -> tuple[dict[str, str], prefork.Prefork | None]:
    """A classic session's settings, the environment its JVM and workers start with, and its
    prefork (started now)."""
    _python_for_workers(master, conf)
    failpoints.mark_driver()  # inherited by the JVM and, through it, by every Python worker
    options = {"spark.master": master, "spark.app.name": APP_NAME, **session_conf(master, conf)}
    return options, _prefork(master, options)


def context_running() -> bool:
    """Whether this process has a classic SparkContext running."""
    pyspark = sys.modules.get("pyspark")  # not imported: no context runs
    return pyspark is not None and pyspark.SparkContext._active_spark_context is not None


def _prefork(master: str, options: dict[str, str]) -> prefork.Prefork | None:
    """A local session's Python daemon, started now to import while the JVM starts
    (`prefork`); its address goes into `options` for the daemon Spark launches."""
    if context_running():
        return None  # joining the running context: its daemon runs already
    if not (is_local(master) and workers_run_this_python(SparkTarget(master=master))):
        return None
    prefix = "spark.executorEnv."
    started = prefork.start(os.environ, {k.removeprefix(prefix): v for k, v in options.items() if k.startswith(prefix)})
    if started is not None:
        options[f"{prefix}{prefork.ENV}"] = started.address
    return started


def _python_for_workers(master: str, conf: Mapping[str, str]) -> None:
    """The Python the executors' workers run, as PySpark reads it: from the environment only
    (a `spark.pyspark.python` given to the builder would be ignored, and workers would start a
    `python3` without this project's dependencies)."""
    chosen = conf.get("spark.pyspark.python")
    if chosen:
        os.environ["PYSPARK_PYTHON"] = chosen
    elif is_local(master):
        os.environ["PYSPARK_PYTHON"] = sys.executable
    if is_local(master):
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")


def _check_masters(master: str, timeout_s: float) -> None:
    """Fail fast, naming the address, when no master of `master` accepts a connection: Spark
    itself would retry registering for a minute and leave jobs waiting for resources."""
    addresses = master_addresses(master)
    if not addresses:
        raise SparkUnavailable(f"cannot read the Spark master URL {master!r}", hint="use spark://HOST:PORT")
    problems = [f"{host}:{port}: {why}" for host, port in addresses
                if (why := reachable(host, port, min(timeout_s, 10.0))) is not None]
    if len(problems) == len(addresses):
        raise SparkUnavailable(
            f"cannot reach the Spark master at {master} ({'; '.join(problems)})",
            hint="check --spark-master, that the master runs, and that this machine can reach it",
        )


def _wait_for_executor(spark_context: SparkContext, master: str, timeout_s: float) -> None:
    """Wait until at least one executor has registered; stop the context and fail otherwise
    (the master accepted us but no worker has free cores or memory for the application)."""
    deadline = time.monotonic() + timeout_s
    while executor_count(spark_context) < 1:
        if spark_context._jsc.sc().isStopped() or time.monotonic() > deadline:
            spark_context.stop()
            raise SparkUnavailable(
                f"no executor registered with the Spark master at {master} within {timeout_s:g}s",
                hint="check that its workers are alive and have the cores and memory asked for "
                "(spark.executor.cores, spark.executor.memory), and that they can reach this "
                "driver (spark.driver.host)",
            )
        time.sleep(0.2)


def executor_count(spark_context: SparkContext) -> int:
    """Executors registered with a classic context (the driver's own block manager excluded)."""
    status = spark_context._jsc.sc().getExecutorMemoryStatus()
    return max(0, int(status.size()) - 1)


def connect_address(url: str) -> tuple[str, int]:
    """(host, port) of a Spark Connect URL, `sc://HOST[:PORT][/;params]` (Spark Connect's
    default port when none is given); SparkUnavailable naming what is wrong otherwise."""
    parsed = urlparse(url.strip())
    try:
        port = parsed.port or CONNECT_PORT
    except ValueError:  # urlparse's "Port could not be cast to integer value", or out of range
        raise SparkUnavailable(f"the Spark Connect URL {url!r} has no valid port", hint="use sc://HOST:PORT") from None
    if parsed.scheme != "sc" or not parsed.hostname:
        raise SparkUnavailable(f"cannot read the Spark Connect URL {url!r}", hint="use sc://HOST:PORT")
    return parsed.hostname, port


def start_remote(url: str, conf: Mapping[str, str] | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> SparkSession:
    """A Spark Connect session with the server at `url` (`sc://host:port`), which must answer."""
    _import_pyspark()
    from pyspark.sql import SparkSession

    host, port = connect_address(url)
    why = reachable(host, port, min(timeout_s, 10.0))
    if why is not None:
        raise SparkUnavailable(
            f"cannot reach the Spark Connect server at {url} ({why})",
            hint="check --spark-remote (or SPARK_REMOTE) and that the server runs",
        )
    builder = SparkSession.builder.remote(url)
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    session = None
    try:
        # A session of its own (not the process's default): a failed attach leaves nothing behind.
        session = builder.create()
        _ = session.version  # one round trip: a server that accepts TCP but is not Spark Connect fails here
        for key, value in SQL_DEFAULTS.items():
            if key not in (conf or {}):
                session.conf.set(key, value)
    except Exception as exc:  # gRPC errors come in many types
        if session is not None:
            session.client.close()
        raise SparkUnavailable(f"the Spark Connect server at {url} did not answer: {exc}") from exc
    return session


def active_spark() -> Spark | None:
    """The classic Spark already running in this process, if any (the tests share one).

    Not `SparkSession.getActiveSession()`: that one is per thread, so from another thread it
    would miss a running session and the caller would think it started (and may stop) Spark.
    """
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return None
    running = SparkContext._active_spark_context  # the process-wide context, any thread
    if running is None:
        return None
    return Spark.classic(running, SparkSession.builder.getOrCreate)  # joins it, starts nothing


def warm_up(spark: Spark) -> None:
    """Start the Python workers and import what tasks use, before the first batch.

    The first job of a session otherwise pays for forking the workers and importing pyarrow,
    confluent_kafka and the connectors (seconds on a small machine) inside a batch's time. On a
    cluster this is the preflight, which reports what the executors lack (`ship`). The
    executor skips it where it cannot find anything (`workers_run_this_python`); benchmarks
    call it to keep the workers' start out of the batch they time.
    """
    preflight(spark)
