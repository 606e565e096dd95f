"""A local session's JVM and prefork launched before anything imports PySpark, for a process
that will run one batch and exit (`run --once`): `launch` is called first thing, and the
session's start (`take`, then `session.start_classic`) connects to that JVM instead of
launching one. Spark's start then overlaps the command's imports and apply, not only the apply
(docs/performance.md#the-fixed-cost-of-run---once-phase-by-phase).

Only what `gateway.launch` needs is imported here: no PySpark, no Py4J.
"""

from __future__ import annotations

import logging
import time

from reconciler.runtime.spark import context, jvm_output
from reconciler.runtime.spark.session import EarlyStart, SparkTarget, classic_options, context_running, is_local

LOG = logging.getLogger(__name__)


_LAUNCHED: list[EarlyStart] = []  # at most one: the process's, as PySpark's context is the process's
_EVER: list[EarlyStart] = []  # every launch of this process, taken or not, for `discard`


def launch(target: SparkTarget) -> None:
    """Launch the JVM and the prefork of the local session `target` names, now. Nothing for a
    cluster, Spark Connect, a context already running or a JVM already launched; a launch that
    fails is left to the session's start, which launches again and says why."""
    if target.remote or not is_local(target.master) or _LAUNCHED or context_running():
        return
    started, began = time.monotonic(), time.time()
    options, daemon = classic_options(target.master, target.conf)
    try:
        jvm = context.launch_jvm(options, relay_stderr=jvm_output.json_logs())
    except Exception:  # the session's start launches again and reports why
        LOG.debug("Spark's JVM did not launch early", exc_info=True)
        if daemon is not None:
            daemon.close()
        return
    _LAUNCHED.append(EarlyStart(master=target.master, conf=dict(target.conf), options=options, prefork=daemon,
                                jvm=jvm, started=started, began=began))
    _EVER.append(_LAUNCHED[-1])


def discard() -> None:
    """End every JVM launched here that no session connected to (a tick with nothing to run, a
    run that failed before its batch): the JVM stops now instead of when it next reads its
    stdin, and its gateway file (which holds the gateway's secret) is removed with it."""
    _LAUNCHED.clear()
    while _EVER:
        early = _EVER.pop()
        if not early.jvm.connected:
            early.abandon()


def take(target: SparkTarget) -> EarlyStart | None:
    """The early start of the session `target` names, for its start to connect to; None when
    there is none. One launched for other settings is ended (its JVM killed, its prefork closed)."""
    if not _LAUNCHED:
        return None
    early = _LAUNCHED.pop()
    if not target.remote and early.master == target.master and early.conf == dict(target.conf) \
            and not context_running():
        return early
    early.abandon()
    return None
