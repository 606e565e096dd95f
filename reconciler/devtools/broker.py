"""Start and stop Apache Kafka on loopback, for the tests, the benchmarks and the quickstart.

One KRaft node that is both broker and controller, on free loopback ports, its data in a temp
directory, with settings for one node (replication factors 1, no initial rebalance delay, small
internal topics). Its jars come from Maven Central through the project's pinned pom.xml
(`reconciler.devtools.jvm`, docs/real-components.md). It starts within a few seconds and is
stopped by its PID, never by name.

    python -m reconciler.devtools.broker            # prints the bootstrap address, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from reconciler.devtools.jvm import die_with_parent, Classpath, JvmError, java_command, kafka_classpath
from reconciler.errors import ReconcilerError

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
HOST = "127.0.0.1"
# One node: every internal topic with replication factor 1 and few partitions (creating the
# default 50 partitions of __consumer_offsets and __transaction_state costs seconds at first use).
NODE_SETTINGS = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "5",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "5",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
    "num.partitions": "1",
    "log.segment.bytes": str(64 * 1024 * 1024),
}


class BrokerStartError(ReconcilerError):
    """The broker could not be started (Java/Maven missing, port taken, did not answer)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def answers_metadata(host: str, port: int, timeout_s: float = 1.0) -> bool:
    """True when a Kafka Metadata (v4) request gets a well-formed answer naming >= 1 broker.

    Spoken by hand on purpose: a librdkafka client would retry in the background and log every
    refused connection while the broker is still starting. v4 because Kafka 4 removed v0-v3.
    """
    client_id = b"reconciler-probe"
    correlation_id = 7
    header = struct.pack(">hhih", 3, 4, correlation_id, len(client_id)) + client_id
    body = header + struct.pack(">ib", -1, 0)  # all topics (null array), no auto-creation
    try:
        with socket.create_connection((host, port), timeout=timeout_s) as sock:
            sock.sendall(struct.pack(">i", len(body)) + body)
            answer = _recv_exact(sock, 16)  # size, correlation id, throttle time, broker count
    except OSError:
        return False
    if answer is None:
        return False
    _size, got_correlation, _throttle, brokers = struct.unpack(">iiii", answer)
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
    data_dir: Path
    cluster_id: str
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL after `timeout_s`; the data goes. Idempotent."""
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                os.kill(self.pid, signal.SIGKILL)
                self.process.wait()
        shutil.rmtree(self.data_dir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL, as a crash; the data directory stays until `stop()`."""
        if self.process.poll() is None:
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
    """Start Apache Kafka on `127.0.0.1:port` (0 = a free port) and wait until it answers Metadata."""
    try:
        classpath = kafka_classpath()
    except JvmError as exc:
        raise BrokerStartError(exc.message, hint=exc.hint) from exc
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-broker-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    # A free port can be taken between probing and binding: retry with another one.
    attempts = 1 if port else 3
    last: BrokerStartError | None = None
    for _ in range(attempts):
        try:
            return _start_once(classpath, log_dir, port or free_port(), ready_timeout_s)
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


def new_cluster_id() -> str:
    """Kafka's cluster id format: a UUID as 22 characters of URL-safe base64."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def server_properties(port: int, controller_port: int, data_dir: Path) -> str:
    settings = {
        **NODE_SETTINGS,
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.quorum.voters": f"1@{HOST}:{controller_port}",
        "log.dirs": str(data_dir / "log"),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def _start_once(classpath: Classpath, log_dir: Path, port: int, ready_timeout_s: float) -> RunningBroker:
    # Checked first because another broker already on the port would answer our readiness probe.
    if not port_is_free(port):
        raise BrokerStartError(f"port {port} on {HOST} is already in use", hint="choose another --port")
    data_dir = Path(tempfile.mkdtemp(prefix=f"reconciler-kafka-{port}-"))
    config = data_dir / "server.properties"
    config.write_text(server_properties(port, free_port(), data_dir))
    cluster_id = new_cluster_id()
    log_path = log_dir / f"kafka-{port}.log"
    _format_storage(classpath, config, cluster_id, log_path)
    with (log_dir / f"kafka-{port}.out").open("wb") as out:
        process = subprocess.Popen(
            java_command(classpath, "kafka.Kafka", str(config), log_file=log_path),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=die_with_parent,  # Ctrl-C in a terminal goes to us; we stop it by PID
        )
    broker = RunningBroker(f"{HOST}:{port}", process.pid, log_path, data_dir, cluster_id, process)
    deadline = time.monotonic() + ready_timeout_s
    while time.monotonic() < deadline:
        if not broker.alive():
            broker.stop()
            raise BrokerStartError(
                f"Kafka exited with code {process.returncode} while starting on port {port}:\n{_tail(log_path)}",
                hint=f"full log: {log_path}",
            )
        if answers_metadata(HOST, port):
            return broker
        time.sleep(0.1)
    broker.stop()
    raise BrokerStartError(f"Kafka did not answer on {broker.bootstrap} within {ready_timeout_s:g}s",
                           hint=f"log: {log_path}")


def _format_storage(classpath: Classpath, config: Path, cluster_id: str, log_path: Path) -> None:
    """`kafka-storage.sh format`: KRaft refuses to start on an unformatted log directory."""
    command = java_command(classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config),
                           heap="256m", log_file=log_path)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BrokerStartError(f"formatting Kafka's storage failed:\n{(done.stdout + done.stderr)[-2000:]}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.broker",
        description="Run Apache Kafka (one KRaft node) on loopback until interrupted; prints its bootstrap address.",
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
        f"Apache Kafka pid {broker.pid}, log {broker.log_path}; "
        f"export RECONCILER_BOOTSTRAP_SERVERS={broker.bootstrap}; Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )
    with broker:
        while not stop and broker.alive():
            time.sleep(0.2)
    return 0 if stop else 1


if __name__ == "__main__":
    sys.exit(main())
