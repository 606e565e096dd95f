"""Shares of a large load run in forked child processes, their results sent back through pipes.

Why fork and not a process pool: a worker needs the parent's imports and nothing else, so a
fork is ready in milliseconds where a spawned interpreter pays ~0.3 s of imports, and the
parent keeps working on its own share meanwhile.

A child can fail in any way (an exception, a crash, a kill): `collect` then says None and the
caller does that share itself, so the outcome is always what a serial load gives. Forking is
only offered while this process runs a single thread (`available`): a thread holding a lock
(logging, imports, a native library's) at the moment of the fork would leave it locked forever
in the child. `run` and `watch` have Spark, Kafka or file-watching threads: they read serially.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass

# Shares smaller than this are not worth a process: a fork and the pickling cost ~10 ms,
# reading 200 manifests ~35 ms.
MIN_SHARE = 200


@dataclass(frozen=True, slots=True)
class Child:
    pid: int
    pipe: int  # read end


def available() -> bool:
    if not hasattr(os, "fork") or threading.active_count() != 1:
        return False
    try:  # native threads too (librdkafka's, py4j's…), which `threading` does not see
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return True  # no /proc (macOS): Python's own count is what there is


def worker_count(items: int, limit: int | None = None) -> int:
    """How many processes (this one included) to split `items` over: one per usable CPU."""
    if not available():
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    wanted = cpus if limit is None else limit
    return max(1, min(wanted, items // MIN_SHARE))


def start(work: Callable[[], bytes]) -> Child | None:
    """Fork a child that runs `work` and writes what it returns to a pipe; None if fork fails."""
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return None
    if pid == 0:  # pragma: no cover - the child; its outcome is checked through `collect`
        _run_child(work, read_end, write_end)
    os.close(write_end)
    return Child(pid, read_end)


def _run_child(work: Callable[[], bytes], read_end: int, write_end: int) -> None:
    """Never returns: `os._exit` skips the parent's atexit handlers and its unflushed output."""
    code = 1
    try:
        os.close(read_end)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the child, not a traceback
        view = memoryview(work())
        while view:
            view = view[os.write(write_end, view) :]
        code = 0
    except BaseException:  # noqa: B036 - any failure is reported as exit status 1
        pass
    finally:
        os._exit(code)


def collect(child: Child) -> bytes | None:
    """The child's bytes once it exited cleanly; None if it failed (its share must be redone)."""
    chunks = []
    try:
        while chunk := os.read(child.pipe, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(child.pipe)
        _, status = os.waitpid(child.pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


def abandon(child: Child) -> None:
    """Stop and reap a child whose result is no longer wanted (the parent is failing)."""
    with contextlib.suppress(OSError):
        os.kill(child.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.close(child.pipe)
    with contextlib.suppress(OSError):
        os.waitpid(child.pid, 0)
