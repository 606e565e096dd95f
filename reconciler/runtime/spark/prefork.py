"""A local session's Python daemon, started before Spark asks for it: a process that imports
PySpark's worker and the task modules while the JVM starts, and becomes the daemon when Spark
launches one.

Spark launches the daemon (`python -m reconciler.runtime.spark.daemon`) only when the first
Python task runs, after the SparkContext is up: a one-record `run --once` then waited for a new
interpreter importing `daemon.PRELOADED` (measured 0.8–1.0 s between the context's start and the
first job's end that a second job does not pay, on a quiet 2-core machine). So `start` forks off
a *prefork* process as the session starts; it imports those modules beside the JVM's start and
waits on a Unix socket in a private directory (`ENV` names it in the daemon's environment, through
`spark.executorEnv`). The daemon Spark launches hands it its standard streams, environment,
arguments and working directory (`daemon.hand_over`); the prefork forks a process that takes them over
and runs PySpark's own `daemon.manager()`: the JVM reads the daemon's port from the same pipe
and writes to the same stdin as before, and a closed stdin (the JVM gone or done) ends it as
before. The launched daemon stays, as the process the JVM knows, until that one ends, and passes
SIGTERM (Spark's way to stop a daemon) on to it.

One hand-over per prefork: it exits after it, and when the driver's end of its stdin closes. It
refuses a daemon whose interpreter settings differ from its own (`PYTHON…` variables other than
PYTHONPATH, which fix the hash seed and the like at start, and PySpark's import-time switches),
or whose path finds another copy of this package; a refused, failed or missing hand-over leaves
the launched daemon to start as before (`daemon.py`), so nothing depends on it but the time.
`RECONCILER_SPARK_PREFORK=off` turns it off.

Before the hand-over, the driver may ask it to import more (`ask_to_import`): what the batch's
first tasks will import, once the driver knows its connectors, such as pyarrow and pandas for
sinks (0.6–0.7 CPU s a worker otherwise). PySpark keeps those out of its daemon because they
start threads when imported; in the prefork they start none: its environment turns jemalloc's
background thread off in Arrow (`JE_ARROW_MALLOC_CONF`) and BLAS's thread pool down to the
calling thread (`OPENBLAS_NUM_THREADS`, `OMP_NUM_THREADS`), unless the user set those. The
prefork counts its threads after each import; one that started a thread makes it refuse the
hand-over (forking a process with threads is unsafe), and Spark's daemon starts as before.

"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reconciler.runtime.spark.daemon import (
    HAND_OVER_TIMEOUT_S,
    MESSAGE_BYTES,
    PREFORK_ENV,
    PRELOADED,
    STREAMS,
    installed_first,
    package_location,
    preload,
)

# Read by the interpreter at its start, or by PySpark's modules as they are imported: a daemon
# whose values differ cannot take modules imported under ours.
_START_SETTINGS = re.compile(r"PYTHON[A-Z]+|PYSPARK_ENABLE_NAMEDTUPLE_PATCH|SPARK_TESTING")

ENV = PREFORK_ENV  # the prefork's socket in the daemon's environment (`spark.executorEnv`); "off" in ours
# Set in the prefork's environment unless the user's has them: Arrow's jemalloc and BLAS start
# no thread when loaded (checked: numpy, pyarrow and pandas imported, one thread).
THREADLESS_IMPORTS = {"JE_ARROW_MALLOC_CONF": "background_thread:false", "OPENBLAS_NUM_THREADS": "1",
                      "OMP_NUM_THREADS": "1"}
ASK_TIMEOUT_S = 0.5
TASKS = "/proc/self/task"  # one entry a thread of this process
_STARTED: list[Prefork] = []  # the prefork this process started last (one a session)


@dataclass(frozen=True)
class Prefork:
    """The driver's handle: the process and the socket's path for the daemon's environment."""

    process: subprocess.Popen[bytes]
    address: str
    stdin: int  # the write end of its stdin: open while this process lives, unless closed

    def close(self) -> None:
        """End it if it is still waiting (the JVM never launched a daemon): its stdin closes."""
        try:
            os.close(self.stdin)
        except OSError:  # closed already
            pass


def start(environ: Mapping[str, str], executor_env: Mapping[str, str]) -> Prefork | None:
    """Start a prefork for a local session whose workers run this interpreter, in the
    environment Spark gives its daemon: the JVM's (`environ`, ours), the session's
    `spark.executorEnv.*` (`executor_env`), and Spark's own additions (the hash seed PySpark's
    context picks, unbuffered output). None when it is turned off or cannot start: Spark then
    starts its daemon as before."""
    if environ.get(ENV, "").lower() in ("off", "0", "false"):
        return None
    try:
        directory = tempfile.mkdtemp(prefix="reconciler-prefork-")  # 0700: only this user connects
    except OSError:  # no writable temporary directory: Spark's daemon starts as before
        return None
    address = os.path.join(directory, "daemon.sock")
    env = {k: v for k, v in environ.items() if k != ENV}
    env.update(executor_env)
    env.update(PYTHONHASHSEED=environ.get("PYTHONHASHSEED", "0"), PYTHONUNBUFFERED="YES")
    for name, value in THREADLESS_IMPORTS.items():  # the prefork's own: the daemon gets the request's
        env.setdefault(name, value)
    # Listening before the prefork runs: a daemon launched at once waits in the backlog.
    # Its stdin's write end is never written: the prefork reads its closing, at the driver's exit.
    read_end, write_end = os.pipe()
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as listener:
        try:
            listener.bind(address)
            listener.listen(1)
            process = subprocess.Popen(
                [sys.executable, "-m", "reconciler.runtime.spark.prefork", address, str(listener.fileno())],
                env=env, stdin=read_end, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                pass_fds=[listener.fileno()],
            )
        except OSError:
            os.close(write_end)
            shutil.rmtree(directory, ignore_errors=True)
            return None
        finally:
            os.close(read_end)
    threading.Thread(target=process.wait, name="prefork-reaper", daemon=True).start()
    started = Prefork(process=process, address=address, stdin=write_end)
    _STARTED[:] = [started]
    return started


def ask_to_import(modules: Sequence[str]) -> None:
    """Ask the prefork this process started, if it still waits, to import `modules` before it
    becomes the daemon (see the module's doc). Best effort: a prefork that handed over already,
    or is busy with a full backlog, is not waited for."""
    if not _STARTED or not modules:
        return
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            conn.settimeout(ASK_TIMEOUT_S)
            conn.connect(_STARTED[0].address)
            conn.send(json.dumps({"import": list(modules)}).encode())
    except OSError:  # gone (handed over, ended) or busy: the workers import them themselves
        pass


def serve(address: str, listener: socket.socket) -> None:
    """The prefork: import, then take over one daemon's streams from `listener` (bound to
    `address` by the driver), or exit when the driver's end of stdin closes. Before that, the
    driver's requests to import more are done as they come."""
    sys.path[:] = installed_first(sys.path)
    preload((*PRELOADED, "pyspark.daemon"))
    unsafe: str | None = None  # why this process may no longer fork a daemon
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [])
            if listener not in ready:
                return  # the driver is gone, or its session stopped before any daemon
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, MESSAGE_BYTES, len(STREAMS))
            modules = _import_request(message, fds)
            if modules is None:
                break  # a daemon's hand-over
            conn.close()
            unsafe = unsafe or import_threadless(modules)
    finally:
        listener.close()
        os.unlink(address)
        os.rmdir(os.path.dirname(address))
    with conn:
        _hand_over(conn, message, fds, unsafe)


def _import_request(message: bytes, fds: Sequence[int]) -> list[str] | None:
    """The modules the driver asks to import (`ask_to_import`), or None for anything else (a
    daemon's hand-over). An empty message is an ask that never came whole: nothing to import."""
    if fds:
        return None
    if not message:
        return []
    try:
        modules = json.loads(message)["import"]
    except (ValueError, KeyError, TypeError):
        return None
    return [m for m in modules if isinstance(m, str)] if isinstance(modules, list) else None


def import_threadless(modules: Sequence[str]) -> str | None:
    """Import `modules` (one that fails is the worker's to report); why forking is no longer
    safe when one started a thread, else None. Where threads cannot be counted (no /proc),
    nothing is imported."""
    if not os.path.isdir(TASKS):
        return None
    for name in modules:
        preload((name,))
        if len(os.listdir(TASKS)) > 1:  # native threads too: one holds locks a fork would copy
            return f"importing {name} started a thread"
    return None


def _hand_over(conn: socket.socket, message: bytes, fds: Sequence[int], unsafe: str | None) -> None:
    """Become the daemon that sent `message` with its streams `fds`, unless refused."""
    request = Request.read(message)
    refusal = unsafe or _refusal(request, fds)
    if refusal is not None:
        conn.send(json.dumps({"refused": refusal}).encode())
        return
    conn.send(b'{"ready": true}')
    conn.settimeout(HAND_OVER_TIMEOUT_S)
    if conn.recv(16) != b"go":
        return  # the daemon gave up waiting and went on by itself
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        assert request is not None  # not refused
        _become_daemon(request, fds, conn)
    conn.send(json.dumps({"pid": pid}).encode())


@dataclass(frozen=True, kw_only=True)
class Request:
    """What the launched daemon hands over (`daemon.hand_over`), beside its streams."""

    env: dict[str, str]
    argv: list[str]
    cwd: str
    path: list[str]
    executable: str
    package: str  # where the launched daemon imported this package from

    @classmethod
    def read(cls, message: bytes) -> Request | None:
        """The request in `message`, or None when it is not one."""
        try:
            fields = json.loads(message)
            request = cls(env=dict(fields["env"]), argv=list(fields["argv"]), cwd=str(fields["cwd"]),
                          path=list(fields["path"]), executable=str(fields["executable"]),
                          package=str(fields["package"]))
        except (ValueError, KeyError, TypeError):
            return None
        strings = [*request.env, *request.env.values(), *request.argv, *request.path]
        return request if all(isinstance(text, str) for text in strings) else None


def _refusal(request: Request | None, fds: Sequence[int]) -> str | None:
    """Why this process cannot become that daemon, or None."""
    if request is None or len(fds) != len(STREAMS):
        return "a malformed request"
    if request.executable != os.path.realpath(sys.executable):
        return "another interpreter"
    theirs = request.env
    differ = sorted(k for k in {*theirs, *os.environ} - {"PYTHONPATH"}
                    if _START_SETTINGS.fullmatch(k) and theirs.get(k) != os.environ.get(k))
    if differ:
        return f"other start settings: {', '.join(differ)}"
    if request.package != package_location():
        return "another copy of this package on the path"
    return None


def _become_daemon(request: Request, fds: Sequence[int], conn: socket.socket) -> None:
    """In the forked child: the launched daemon's streams, environment, arguments and directory,
    then PySpark's daemon. `conn` stays open until this process and its workers end."""
    from pyspark import daemon as spark_daemon  # noqa: PLC0415 — preloaded; the driver imports this module without it

    code = 1
    try:
        for target, fd in zip(STREAMS, fds, strict=True):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request.env)
        os.chdir(request.cwd)
        sys.argv = request.argv
        sys.path[:] = request.path
        for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGINT):
            signal.signal(number, signal.SIG_DFL)
        spark_daemon.manager()
        code = 0
    except SystemExit as exc:  # `manager` ends through `sys.exit`
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os._exit(code)


if __name__ == "__main__":
    serve(sys.argv[1], socket.socket(fileno=int(sys.argv[2])))
