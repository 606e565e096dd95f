"""One managed process, as every real component in `devtools` runs: its output to a log file,
ready when a probe says so, stopped by its PID (SIGTERM, then SIGKILL), on loopback ports.

The broker, the Java Connect worker and the Spark processes are each a `ManagedProcess`
started by `launch` and awaited by `wait_ready`; a new component (a database, an object store)
needs only its command line and its readiness probe. A process is stopped by its PID, never by
name, and dies with the process that started it (Linux's PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import ctypes
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Protocol, Self, TypeVar

from reconciler.errors import ReconcilerError

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 15.0
POLL_S = 0.1
_T = TypeVar("_T")


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice; it may be taken before it is bound)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def port_is_free(port: int) -> bool:
    """Whether a server could listen on `port` now. SO_REUSEADDR as servers bind (the JVM's
    default on Linux): the sockets a stopped server leaves in TIME_WAIT do not count, a
    listening one does, so a component restarts on its port at once instead of ~100 s later."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def port_open(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections on `host:port`."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _prctl() -> Callable[[int, int], int] | None:
    try:
        prctl: Callable[[int, int], int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None
    return prctl


# Looked up here, in the parent: the child of a fork may only call what is already loaded.
_PRCTL = _prctl()
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """`preexec_fn` for what we start: the kernel kills it when the starting process dies.

    A test run killed by a timeout, or a Ctrl-C'd quickstart, would otherwise leave a broker or
    a cluster running with its ports and memory (Linux's PR_SET_PDEATHSIG; elsewhere nothing is
    set and `stop()` remains the only way).
    """
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log, for an error message."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@dataclass
class ManagedProcess:
    """A started process: its name (for messages), its log, and how to stop it."""

    name: str
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after `timeout_s`. Idempotent."""
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL, as a crash or a lost machine looks to the others. Idempotent."""
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait()


@dataclass(kw_only=True)
class RunningServer:
    """A started HTTP server on loopback (the object-store servers: S3, GCS, Azure); stop it with
    `stop()` or by leaving the `with` block. Each server adds its credentials and URIs."""

    port: int
    log_path: Path
    process: ManagedProcess = field(repr=False)
    host: str = "127.0.0.1"

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def endpoint(self) -> str:
        return f"http://{self.host}:{self.port}"

    def alive(self) -> bool:
        return self.process.alive()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL after `timeout_s`; what it stored in memory goes with it. Idempotent."""
        self.process.stop(timeout_s)

    def kill(self) -> None:
        self.process.kill()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def launch(name: str, command: Sequence[str], log_path: Path, *, env: Mapping[str, str] | None = None,
           cwd: Path | None = None) -> ManagedProcess:
    """Start `command` with stdout and stderr appended to `log_path`, in a session of its own
    (a Ctrl-C in the terminal goes to us, and we stop it by PID)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        process = subprocess.Popen(
            list(command), env=dict(env) if env is not None else None, cwd=cwd,
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent,
        )
    return ManagedProcess(name, log_path, process)


def wait_ready(
    process: ManagedProcess,
    ready: Callable[[], bool],
    *,
    timeout_s: float,
    error: type[ReconcilerError] = ReconcilerError,
    what: str = "did not become ready",
    log_path: Path | None = None,
    poll_s: float = POLL_S,
) -> None:
    """Poll `ready()` until it is true. If the process exits first, or `timeout_s` passes, the
    process is stopped and `error` raised with the tail of its log (`log_path`: another log
    to quote, e.g. the JVM's own, when the output file says little)."""
    deadline = time.monotonic() + timeout_s
    log = log_path if log_path is not None else process.log_path
    while True:
        if not process.alive():
            raise error(f"{process.name} exited with code {process.returncode}:\n{tail(log)}", hint=f"log: {log}")
        if ready():
            return
        if time.monotonic() > deadline:
            process.stop()
            raise error(f"{process.name} {what} within {timeout_s:g}s:\n{tail(log)}", hint=f"log: {log}")
        time.sleep(poll_s)



def http_status(host: str, port: int, method: str, path: str, *, body: str | None = None,
                headers: Mapping[str, str] | None = None) -> int | None:
    """One plain HTTP request (a readiness probe, a bucket to create): the answer's status, None
    when nothing answers."""
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request(method, path, body=body, headers=dict(headers or {}))
        return connection.getresponse().status
    except OSError:
        return None
    finally:
        connection.close()


def on_a_free_port(port: int, start: Callable[[int], _T], refused: type[ReconcilerError]) -> _T:
    """`start(port)`; with `port` 0, `start` on a free port, trying up to three: a free port can
    be taken between probing and binding. The last try's `refused` (the start error) when none
    starts."""
    last: ReconcilerError | None = None
    for _ in range(1 if port else 3):
        try:
            return start(port or free_port())
        except refused as exc:
            last = exc
    assert last is not None
    raise last


def stop_on_signals() -> Callable[[], bool]:
    """Install SIGTERM/SIGINT handlers that only record the request (a devtools command
    installs them before it prints its address, so a caller signalling at once is heard);
    returns whether a stop was asked."""
    asked: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, frame: asked.append(signum))
    signal.signal(signal.SIGINT, lambda signum, frame: asked.append(signum))
    return lambda: bool(asked)


def serve_until_signal(alive: Callable[[], bool], stopped: Callable[[], bool], poll_s: float = 0.2) -> int:
    """A devtools command's foreground: wait until a stop was asked (exit 0) or the component
    died by itself (exit 1). The caller stops the component afterwards."""
    while not stopped() and alive():
        time.sleep(poll_s)
    return 0 if stopped() else 1


class Component(AbstractContextManager["Component"], Protocol):
    """What a devtools command serves: alive until it dies, stopped when its `with` ends."""

    def alive(self) -> bool: ...


_C = TypeVar("_C", bound=Component)


def serve_in_foreground(start: Callable[[], _C], refused: type[ReconcilerError], *, address: Callable[[_C], str],
                        about: Callable[[_C], str]) -> int:
    """A devtools command's life: start the component (`refused`, its start error, printed: exit
    1), hear signals from then on, print its `address` on stdout and `about` it on stderr, serve
    until a stop is asked (exit 0) or it dies (exit 1), and stop it."""
    try:
        component = start()
    except refused as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    stopped = stop_on_signals()
    print(address(component), flush=True)
    print(about(component), file=sys.stderr, flush=True)
    with component:
        return serve_until_signal(component.alive, stopped)
