"""The Python daemon of a local session's workers: PySpark's own (`pyspark.daemon`), importing
PySpark from the installed package rather than from Spark's `pyspark.zip`.

Spark starts its Python workers with `python/lib/pyspark.zip` and py4j's zip first on their
path. Python keeps no compiled modules for a zip, so every daemon, and every worker it forks
(each imports `pyspark.worker` after the fork), compiles PySpark from source again: measured,
`import pyspark.daemon, pyspark.worker` takes 0.84–0.93 s from the zips and 0.17 s from the
installed package; a local session's first Python job 1.87–1.99 s with the zips first, and
0.86–0.89 s with them last. The zips are moved last only when they are the installed packages'
own (PySpark's pip package carries them: the same code, packed); another Spark's stay first.
Local masters only (`session.session_conf`): a cluster's executors may not have this package.

The daemon also imports what every task imports (`PRELOADED`) once, before it forks a worker
per task: each worker starts with them instead of importing them again, measured 1.4 CPU s per
worker (`pyspark.worker` 0.7 s, the sink and source task modules 0.45 s each, shared). Only
modules that start no thread when imported: PySpark imports its worker after the fork because
pyarrow and pandas start threads on import (numpy's BLAS too), so those stay out
(tests/unit/runtime/test_spark_daemon.py checks it); a prefork imports them in an environment
where they start none, when the batch has sinks (`prefork.ask_to_import`).

When the session started a prefork (`prefork`: a process that did all of that while the JVM
started), the daemon Spark launches hands its place to it first (`hand_over`) and does none of it;
so this module imports only the standard library's lighter modules before that.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import sys
from collections.abc import Sequence
from importlib.machinery import PathFinder
from pathlib import Path

PREFORK_ENV = "RECONCILER_SPARK_PREFORK"  # the prefork's socket in the daemon's environment; "off" in ours
HAND_OVER_TIMEOUT_S = 30.0  # longer than a prefork still importing on a busy machine
# A SIGTERM passed on is sent again this often until the daemon that took over is gone: PySpark's
# daemon loses one that lands while `os.fork()` runs its after-fork hooks (its handler's
# `sys.exit` is raised in logging's hook and ignored there); the next finds its default action.
RESEND_SIGTERM_S = 1.0
MESSAGE_BYTES = 1 << 20
STREAMS = (0, 1, 2)  # what the daemon hands over: its stdin, stdout and stderr


def installed_first(path: list[str]) -> list[str]:
    """`path` with the zips of the installed PySpark (`pyspark/python/lib/`) moved last: its
    own `pyspark.zip`, and py4j's zip when that is the installed py4j's version."""
    # Only here: 0.1 s of the launched daemon's start, which a prefork spares it (`hand_over`).
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    spec = PathFinder.find_spec("pyspark", [entry for entry in path if not entry.endswith(".zip")])
    if spec is None or spec.origin is None:
        return path
    bundled = Path(spec.origin).parent / "python" / "lib"
    same = {(bundled / "pyspark.zip").resolve()}
    try:
        same.add((bundled / f"py4j-{version('py4j')}-src.zip").resolve())
    except PackageNotFoundError:  # no installed py4j: its zip is the only one
        pass
    moved = [entry for entry in path if entry.endswith(".zip") and Path(entry).resolve() in same]
    return [entry for entry in path if entry not in moved] + moved


PRELOADED = ("pyspark.worker", "confluent_kafka", "reconciler.runtime.sink.task", "reconciler.runtime.source.task")


def preload(modules: Sequence[str] = PRELOADED) -> None:
    """Import `modules` now; one that fails is left to the worker (its error is the task's)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 — the worker imports it again and reports why
            continue


def hand_over() -> None:
    """In the daemon Spark launched: hand its streams to the prefork named in the environment,
    then wait for the process that took them over and exit with it. Returns when there is no
    prefork, or it refused or failed before taking over: this process goes on as the daemon."""
    address = os.environ.get(PREFORK_ENV)
    if not address or not os.path.isabs(address):
        return
    request = json.dumps({
        "env": dict(os.environ), "argv": sys.argv, "cwd": os.getcwd(), "path": sys.path,
        "executable": os.path.realpath(sys.executable), "package": package_location(),
    }).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        conn.settimeout(HAND_OVER_TIMEOUT_S)
        conn.connect(address)
        socket.send_fds(conn, [request], list(STREAMS))
        if not json.loads(conn.recv(MESSAGE_BYTES) or b"{}").get("ready"):
            conn.close()
            return  # refused, or the prefork is gone: go on as the daemon
        conn.send(b"go")  # from here the prefork may fork: never go on as the daemon too
    except (OSError, ValueError):
        conn.close()
        return  # it never got the word: nothing was written to the streams
    try:
        conn.settimeout(None)
        pid = int(json.loads(conn.recv(MESSAGE_BYTES))["pid"])
        terminated: list[bool] = []

        def on_sigterm(*_: object) -> None:
            terminated.append(True)
            _forward(pid)

        signal.signal(signal.SIGTERM, on_sigterm)
        conn.settimeout(RESEND_SIGTERM_S)
        while True:  # until EOF: the daemon that took over (and its workers) ended
            try:
                if not conn.recv(16):
                    break
            except TimeoutError:
                if terminated:
                    _forward(pid)
    except (OSError, ValueError, KeyError):
        os._exit(1)  # the prefork failed after the word: the JVM sees its daemon fail
    os._exit(0)


def package_location() -> str:
    """Where this process imported this package from (it runs one of its modules)."""
    return os.path.realpath(sys.modules["reconciler"].__file__ or "")


def _forward(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    hand_over()  # returns only when no prefork took this daemon's place (`prefork`)
    sys.path[:] = installed_first(sys.path)
    preload()
    from pyspark import daemon

    daemon.manager()
