"""A classic session's SparkContext, started before the session is built on it: with the JVM's
stderr relayed as JSON lines (`--log-format json`), and with its Python workers started meanwhile.

A classic session's first Python job pays for the JVM launching the Python daemon, which imports
PySpark's worker and the task modules (`daemon.PRELOADED`), and forking a worker: measured 1.7–1.8
s of a one-record `run --once` on a quiet machine, 3 s at load average 5, after Spark's start and
before the first record moves. A one-partition job that does nothing, submitted as soon as the
SparkContext is up (`start_workers`), makes the JVM do that while it builds the SparkSession
(~1 s more of its own work) and while the caller still reads the topics and applies: the first
real job then finds the daemon up and its worker idle (PySpark reuses workers), and no job waits
for this one. Only where the workers run this interpreter on our path
(`session.workers_run_this_python`), so the job can fail only as the real jobs would; its
failure is left to them.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING

from reconciler.runtime.spark import gateway, jvm_output
from reconciler.runtime.spark.cds import launcher_environment

if TYPE_CHECKING:
    from pyspark import SparkContext

LOG = logging.getLogger(__name__)


def start_context(options: Mapping[str, str], *, relay_stderr: bool, launched: gateway.Launched | None = None) -> SparkContext:
    """The process's SparkContext with `options`, started now unless one runs already (a session
    built after it joins it); `relay_stderr`: the JVM's stderr piped through `jvm_output.relay`
    (every line JSON); `launched`: its JVM, when `launch_jvm` started it earlier with these
    options and that relay."""
    from pyspark import SparkConf, SparkContext

    if SparkContext._active_spark_context is not None:
        return SparkContext._active_spark_context
    spark_conf = SparkConf()
    for key, value in options.items():
        spark_conf.set(key, value)
    if launched is None:
        if getattr(SparkContext, "_gateway", None) is not None:
            # A JVM that runs already (a session stopped and started again) keeps its relay.
            return SparkContext(conf=spark_conf)
        launched = launch_jvm(options, relay_stderr=relay_stderr)
    return SparkContext(conf=spark_conf, gateway=gateway.connect(launched))


def launch_jvm(options: Mapping[str, str], *, relay_stderr: bool) -> gateway.Launched:
    """The driver's JVM started with `options` (`gateway.launch`), its launcher's archive mapped."""
    # PySpark hands `spark-submit` a copy of this process's environment; nothing else reads it.
    os.environ.update(launcher_environment(os.environ))
    if not relay_stderr:
        return gateway.launch(options)
    # Our own pipe, read from before the JVM starts: a JVM that fails to start says why there.
    read_end, write_end = os.pipe()
    jvm_output.relay(os.fdopen(read_end, "rb"))
    try:
        return gateway.launch(options, stderr=write_end)
    finally:
        os.close(write_end)  # the JVM has its copy: the relay ends when the JVM exits


def _nothing(_: Iterable[object]) -> Iterator[object]:
    return iter(())


def _warm_up(context: SparkContext) -> None:
    try:
        context.setLocalProperty("spark.job.description", "start the Python workers")
        context.parallelize([0], 1).mapPartitions(_nothing).count()
    except Exception:  # a session stopped meanwhile, a worker that cannot start: the batch's to tell
        LOG.debug("the Python workers' warm-up job failed", exc_info=True)


def start_workers(context: SparkContext) -> threading.Thread:
    """Submit the warm-up job from a daemon thread of its own; the thread, for who waits for it."""
    thread = threading.Thread(target=_warm_up, args=(context,), name="spark-workers-warm-up", daemon=True)
    thread.start()
    return thread
