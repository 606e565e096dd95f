"""uvicorn in a thread beside the loop, the broker probe, and `serving()` that runs them both.

The socket is bound here, before uvicorn starts, so a taken port is a clear error at start-up
(and `--http-bind 127.0.0.1:0` reports the port it got). uvicorn installs no signal handlers
outside the main thread: SIGTERM stays the loop's (`app.loop.Stopper`).

While serving, the interpreter switches threads every millisecond rather than every five: the
loop's thread mostly waits on Kafka, and each time a call returns it must take the interpreter
lock back from whichever thread holds it; under a burst of requests that wait, up to the switch
interval per call, made ticks measurably slower (tests/integration/api/test_api_burst.py).

The probe asks the broker for its cluster id every few seconds (also `GET /`'s
`kafka_cluster_id`), with the command's `--timeout`, from its own thread: `/readyz` answers
from its last result at once, even while the broker is away and a request to it would hang.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
from confluent_kafka import KafkaException

from reconciler.api.app import create_app
from reconciler.api.metrics import Metrics
from reconciler.api.observer import LoopObserver
from reconciler.api.state import ApiState, Board, BrokerInfo
from reconciler.core.live import LiveState
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.client import describe, new_admin, probe_bootstrap
from reconciler.kafka.io.store import LiveStore, TopicsMode
from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)
DEFAULT_BIND = "127.0.0.1:8083"  # Connect's port; loopback unless asked (the image binds all interfaces)
PROBE_INTERVAL_S = 5.0
START_TIMEOUT_S = 10.0
SWITCH_INTERVAL_S = 0.001


def parse_bind(text: str) -> tuple[str, int]:
    """`HOST:PORT` (`[::1]:8083` for IPv6) → (host, port)."""
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ReconcilerError(f"--http-bind expects HOST:PORT, got {text!r}", hint="e.g. 127.0.0.1:8083 or 0.0.0.0:8083")
    return host, int(port)


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on accepted sockets only when the protocol
    # says TCP; with Nagle's algorithm every answer would wait 40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ReconcilerError(f"cannot serve the REST API on {host}:{port}: {exc.strerror}",
                              hint="choose another address with --http-bind HOST:PORT, or --no-http") from exc
    sock.listen(128)
    return sock


class ApiServer:
    """A uvicorn server on an already bound socket, run by a daemon thread."""

    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.sock = sock
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, name="rest-api", daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise ReconcilerError("the REST API server did not start")
            time.sleep(0.01)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5.0)
        self.sock.close()


class BrokerProbe:
    """Every `interval_s`, describe the cluster; the answer (or the error) goes to the board."""

    def __init__(self, settings: KafkaSettings, board: Board, interval_s: float = PROBE_INTERVAL_S) -> None:
        self.settings, self.board, self.interval_s = settings, board, interval_s
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="broker-probe", daemon=True)
        self._admin: Any = None

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        # Not waiting out a describe that an absent broker holds up to `timeout_s`: stopping
        # must fit in the grace period, and the daemon thread has nothing to finish.
        self.thread.join(1.0)

    def _run(self) -> None:
        while not self.stop_event.is_set():
            self.probe()
            self.stop_event.wait(self.interval_s)

    def probe(self) -> None:
        try:
            cluster_id = self._cluster_id()
        except ReconcilerError as exc:
            self.board.replace(broker=BrokerInfo(
                reachable=False, checked_at=time.time(), error=exc.message, cluster_id=self.board.state.broker.cluster_id
            ))
            return
        self.board.replace(broker=BrokerInfo(reachable=True, checked_at=time.time(), cluster_id=cluster_id))

    def _cluster_id(self) -> str | None:
        if self._admin is None:
            self._admin = new_admin(self.settings)
        probe_bootstrap(self.settings)  # a wrong address is reported now, not after the timeout
        try:
            future = self._admin.describe_cluster(request_timeout=self.settings.timeout_s)
            return str(future.result(timeout=self.settings.timeout_s).cluster_id)
        except KafkaException as exc:
            raise ReconcilerError(f"{self.settings.bootstrap_servers}: {describe(exc)}") from exc
        except Exception as exc:  # a timeout of the future itself
            raise ReconcilerError(f"{self.settings.bootstrap_servers} did not answer within "
                                  f"{self.settings.timeout_s:g}s ({type(exc).__name__})") from exc


def server_version() -> tuple[str, str]:
    """(version, commit) for `GET /`: the package's version; the commit from `RECONCILER_COMMIT`
    (set when an image is built) or the checkout's git HEAD, else `unknown`."""
    version = importlib.metadata.version("connect-reconciler")
    commit = os.environ.get("RECONCILER_COMMIT", "").strip()
    if not commit:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            root = Path(__file__).resolve().parents[2]
            done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
            commit = done.stdout.strip()[:16] if done.returncode == 0 else ""
    return version, commit or "unknown"


@dataclass(frozen=True)
class Service:
    url: str  # http://host:port
    board: Board
    observer: LoopObserver  # what the loop reports to


@contextlib.contextmanager
def serving(
    settings: KafkaSettings,
    bind_to: str,
    worker_id: str,
    *,
    interval_s: float,
    read_live: Callable[[], LiveState] | None = None,
) -> Iterator[Service]:
    """The REST API and the probe run while the block runs. `read_live`: how the observer reads
    the live state after a tick (the loop's own store); by default, a store of its own."""
    board = Board(ApiState(worker_id=worker_id))
    metrics = Metrics(board)
    # The broker's answer is stale after two missed probes (each may take the whole timeout).
    stale_after = 2 * (PROBE_INTERVAL_S + settings.timeout_s)
    app = create_app(board, metrics, settings, stale_after_s=stale_after, server_version=server_version())
    server = ApiServer(app, bind(*parse_bind(bind_to)))
    probe = BrokerProbe(settings, board, min(PROBE_INTERVAL_S, interval_s))
    switch_interval = sys.getswitchinterval()
    sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL_S))
    server.start()
    probe.start()
    host, port = server.address
    url = f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
    own = LiveStore(settings, topics=TopicsMode.PREPARED)  # connects on its first read only
    try:
        yield Service(url, board, LoopObserver(board, metrics, read_live or (lambda: own.read().live)))
    finally:
        own.close()
        probe.stop()
        server.stop()
        sys.setswitchinterval(switch_interval)
