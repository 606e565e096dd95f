"""A local session's Python daemon started before Spark asks for it (`runtime/spark/prefork.py`):
real processes, as the JVM drives them: the daemon launched with pipes for its streams, its
port read from its stdout, a worker asked for on that port, SIGTERM or a closed stdin to stop it.
No JVM: PySpark's daemon protocol is what the JVM's `PythonWorkerFactory` speaks."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

import reconciler
from reconciler.runtime.spark import prefork

DAEMON = [sys.executable, "-m", "reconciler.runtime.spark.daemon", "pyspark.worker"]


def spark_env(**extra: str) -> dict[str, str]:
    """The environment Spark gives its daemon: ours, the hash seed, unbuffered output, the secret."""
    env = {k: v for k, v in os.environ.items() if k != prefork.ENV}
    env.update(PYTHONHASHSEED="0", PYTHONUNBUFFERED="YES", PYTHON_WORKER_FACTORY_SECRET="s3cret", **extra)
    return env


@contextmanager
def launched(env: dict[str, str]) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """The daemon as the JVM launches it, and the port it wrote to its stdout."""
    with subprocess.Popen(DAEMON, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as daemon:
        try:
            assert daemon.stdout is not None
            port = struct.unpack(">i", daemon.stdout.read(4))[0]
            yield daemon, port
        finally:
            if daemon.poll() is None:
                daemon.kill()
            daemon.wait(30)


def worker_parent(port: int) -> tuple[int, int, str]:
    """Ask the daemon for a worker, as the JVM does: (the worker's pid, its parent's pid, the
    parent's command line)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        pid = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
        with open(f"/proc/{pid}/stat") as stat:
            parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        cmdline = Path(f"/proc/{parent}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return pid, parent, cmdline


def gone(pid: int, within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_the_prefork_becomes_the_daemon_and_ends_when_its_stdin_closes() -> None:
    env = spark_env()
    started = prefork.start(env, {})
    assert started is not None
    try:
        with launched({**env, prefork.ENV: started.address}) as (daemon, port):
            worker, parent, cmdline = worker_parent(port)
            assert "reconciler.runtime.spark.prefork" in cmdline  # forked from the prefork, not the launched daemon
            assert parent != daemon.pid
            assert started.process.wait(10) == 0  # one hand-over, then the prefork is done
            assert not os.path.exists(started.address)
            assert daemon.stdin is not None
            daemon.stdin.close()  # the JVM is done: the daemon that took over, its worker and the launched one end
            assert daemon.wait(20) == 0
            assert gone(parent) and gone(worker)
    finally:
        started.close()


def test_sigterm_to_the_launched_daemon_stops_the_one_that_took_over() -> None:
    env = spark_env()
    started = prefork.start(env, {})
    assert started is not None
    with launched({**env, prefork.ENV: started.address}) as (daemon, port):
        _, parent, cmdline = worker_parent(port)
        assert "prefork" in cmdline
        daemon.send_signal(signal.SIGTERM)  # Spark's `daemon.destroy()`
        daemon.wait(20)
        assert gone(parent)


@pytest.mark.parametrize("why", ["another hash seed", "no prefork listening"])
def test_a_daemon_the_prefork_cannot_serve_starts_as_before(why: str, tmp_path: Path) -> None:
    env = spark_env()
    started = prefork.start(env, {})
    assert started is not None
    if why == "another hash seed":
        launched_env = {**env, prefork.ENV: started.address, "PYTHONHASHSEED": "7"}
    else:
        started.close()
        started.process.wait(20)
        launched_env = {**env, prefork.ENV: str(tmp_path / "none.sock")}
    try:
        with launched(launched_env) as (daemon, port):
            _, parent, cmdline = worker_parent(port)
            assert parent == daemon.pid and "reconciler.runtime.spark.daemon" in cmdline
    finally:
        started.close()


def test_a_prefork_refuses_another_interpreter_settings_or_package_copy(tmp_path: Path) -> None:
    ours = prefork.Request(env=dict(os.environ), argv=["daemon"], cwd=os.getcwd(), path=sys.path,
                           executable=os.path.realpath(sys.executable),
                           package=os.path.realpath(reconciler.__file__ or ""))
    streams = [0, 1, 2]
    assert prefork._refusal(ours, streams) is None
    assert prefork._refusal(replace(ours, executable="/usr/bin/python3.9"), streams) == "another interpreter"
    env = {**os.environ, "PYTHONOPTIMIZE": "2", "PYTHON_WORKER_FACTORY_SECRET": "x", "PYTHONPATH": "/elsewhere"}
    assert prefork._refusal(replace(ours, env=env), streams) == "other start settings: PYTHONOPTIMIZE"
    copy = tmp_path / "reconciler" / "__init__.py"
    refusal = prefork._refusal(replace(ours, package=str(copy)), streams)
    assert refusal == "another copy of this package on the path"
    assert prefork._refusal(ours, [0, 1]) == "a malformed request"


def test_a_request_is_read_only_whole_and_of_strings() -> None:
    fields = {"env": {"A": "1"}, "argv": ["x"], "cwd": "/", "path": ["/p"], "executable": "/bin/python",
              "package": "/p/reconciler/__init__.py"}
    assert prefork.Request.read(json.dumps(fields).encode()) == prefork.Request(**fields)  # type: ignore[arg-type]
    assert prefork.Request.read(json.dumps({**fields, "env": {"A": 1}}).encode()) is None
    assert prefork.Request.read(json.dumps({k: v for k, v in fields.items() if k != "cwd"}).encode()) is None
    assert prefork.Request.read(b"not json") is None
    assert prefork._refusal(None, [0, 1, 2]) == "a malformed request"


def test_turned_off_no_prefork_starts() -> None:
    assert prefork.start({prefork.ENV: "off"}, {}) is None


def test_without_a_writable_temporary_directory_no_prefork_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A read-only file system with no /tmp volume: Spark's daemon starts as before, no error."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "missing"))
    assert prefork.start(spark_env(), {}) is None


def mapped(pid: int, library: str) -> bool:
    """Whether process `pid` has loaded a shared library whose path holds `library`."""
    return library in Path(f"/proc/{pid}/maps").read_text()


def test_asked_before_the_hand_over_the_prefork_imports_arrow_and_pandas_and_still_forks() -> None:
    env = spark_env()
    started = prefork.start(env, {})
    assert started is not None
    try:
        prefork.ask_to_import(["numpy", "pyarrow", "pandas"])
        with launched({**env, prefork.ENV: started.address}) as (daemon, port):
            _, parent, cmdline = worker_parent(port)
            assert "reconciler.runtime.spark.prefork" in cmdline  # their imports started no thread
            assert mapped(parent, "libarrow") and mapped(parent, "pandas/_libs")
            assert len(os.listdir(f"/proc/{parent}/task")) == 1
    finally:
        started.close()


def test_a_module_that_starts_a_thread_makes_the_prefork_refuse_the_hand_over(tmp_path: Path) -> None:
    (tmp_path / "threaded_plugin.py").write_text("import threading, time\n"
                                                 "threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n")
    env = spark_env(PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    started = prefork.start(env, {})
    assert started is not None
    try:
        prefork.ask_to_import(["threaded_plugin"])
        with launched({**env, prefork.ENV: started.address}) as (daemon, port):
            _, parent, cmdline = worker_parent(port)
            assert parent == daemon.pid and "reconciler.runtime.spark.daemon" in cmdline  # started as before
    finally:
        started.close()


def test_an_ask_that_never_came_whole_leaves_the_prefork_waiting_for_its_daemon() -> None:
    env = spark_env()
    started = prefork.start(env, {})
    assert started is not None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as conn:
            conn.connect(started.address)  # and closed without a word
        with launched({**env, prefork.ENV: started.address}) as (daemon, port):
            _, parent, cmdline = worker_parent(port)
            assert "reconciler.runtime.spark.prefork" in cmdline
    finally:
        started.close()
