"""Start and stop Apache Kafka on loopback, for the tests, the benchmarks and the quickstart.

One KRaft node that is both broker and controller, on free loopback ports, its data in a temp
directory (or in `--data-dir`, kept: it starts again there with its cluster id and port), with
settings for one node (replication factors 1, no initial rebalance delay, small internal
topics). Its jars come from Maven Central through the project's pinned pom.xml
(`reconciler.devtools.jvm`, docs/real-components.md). It starts within a few seconds and is
stopped by its PID, never by name (`reconciler.devtools.process`).

    python -m reconciler.devtools.broker            # prints the bootstrap address, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import base64
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from reconciler.devtools.jvm import Classpath, JvmError, java_command, kafka_classpath
from reconciler.devtools.process import HOST as HOST
from reconciler.devtools.process import (
    ManagedProcess,
    launch,
    on_a_free_port,
    port_is_free,
    serve_in_foreground,
    wait_ready,
)
from reconciler.devtools.process import free_port as free_port
from reconciler.errors import ReconcilerError

READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
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


@dataclass(kw_only=True)
class RunningBroker:
    """A started broker; stop it with `stop()` or by leaving the `with` block, start it again on
    the same data, cluster id and port with `start_again()`."""

    bootstrap: str
    log_path: Path  # the broker's own log (log4j); its stdout goes beside it, `.out`
    data_dir: Path
    cluster_id: str
    process: ManagedProcess = field(repr=False)
    owns_data: bool = True  # a temp directory of ours, removed by `stop()`; not a `data_dir` given
    quick: bool = False  # C1 JIT only (`start_broker`), kept by `start_again()`

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    def alive(self) -> bool:
        return self.process.alive()

    def stop(self, timeout_s: float = STOP_TIMEOUT_S, *, keep_data: bool = False) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL after `timeout_s`; then the data goes,
        unless it is kept (`keep_data`, or a `data_dir` the caller gave). Idempotent."""
        self.process.stop(timeout_s)
        if self.owns_data and not keep_data:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL, as a crash; the data directory stays until `stop()`."""
        self.process.kill()

    def start_again(self, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start the stopped (or killed) broker again on its data directory, cluster id and port,
        and wait until it answers; this object then stands for the new process."""
        if self.alive():
            raise BrokerStartError(f"the broker on {self.bootstrap} is still running (pid {self.pid})")
        if not (self.data_dir / "log" / "meta.properties").is_file():
            raise BrokerStartError(f"the broker's data in {self.data_dir} is gone",
                                   hint="stop it with stop(keep_data=True) to start it again")
        again = start_broker(self.log_path.parent, port=self.port, data_dir=self.data_dir,
                             ready_timeout_s=ready_timeout_s, quick=self.quick)
        assert again.cluster_id == self.cluster_id, (again.cluster_id, self.cluster_id)
        self.process = again.process

    def __enter__(self) -> RunningBroker:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_broker(
    log_dir: Path | None = None,
    *,
    port: int = 0,
    data_dir: Path | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
    quick: bool = False,
) -> RunningBroker:
    """Start Apache Kafka on `127.0.0.1:port` and wait until it answers Metadata.

    `data_dir`: where its data lives, kept when it stops; a directory an earlier start formatted
    is started again with its cluster id and, unless `port` says otherwise, its port. Without
    it, a fresh temp directory, removed by `stop()`. `port` 0: a free port. `quick`: a JVM that
    starts sooner and runs slower, for a broker that lives seconds (`jvm.java_command`)."""
    try:
        classpath = kafka_classpath()
    except JvmError as exc:
        raise BrokerStartError(exc.message, hint=exc.hint) from exc
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-broker-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    owned = data_dir is None
    data = Path(tempfile.mkdtemp(prefix="reconciler-kafka-")) if data_dir is None else data_dir
    data.mkdir(parents=True, exist_ok=True)
    earlier = stored_ports(data)
    port = port or (earlier[0] if earlier else 0)
    try:
        broker = on_a_free_port(
            port, lambda chosen: _start_once(classpath, log_dir, data, chosen, ready_timeout_s, quick), BrokerStartError
        )
    except BrokerStartError:
        if owned:
            shutil.rmtree(data, ignore_errors=True)
        raise
    broker.owns_data, broker.quick = owned, quick
    return broker


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


def _properties(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def stored_cluster_id(data_dir: Path) -> str | None:
    """The cluster id an earlier start formatted `data_dir` with (KRaft's meta.properties)."""
    return _properties(data_dir / "log" / "meta.properties").get("cluster.id")


def stored_ports(data_dir: Path) -> tuple[int, int] | None:
    """(port, controller port) of an earlier start on a formatted `data_dir`: the controller
    keeps its address, as the quorum's voters name it."""
    if stored_cluster_id(data_dir) is None:
        return None
    listeners = _properties(data_dir / "server.properties").get("listeners", "")
    ports = dict(item.split("://", 1) for item in listeners.split(",") if "://" in item)
    try:
        return int(ports["PLAINTEXT"].rsplit(":", 1)[1]), int(ports["CONTROLLER"].rsplit(":", 1)[1])
    except (KeyError, ValueError, IndexError):
        return None


def _start_once(classpath: Classpath, log_dir: Path, data_dir: Path, port: int, ready_timeout_s: float,
                quick: bool) -> RunningBroker:
    # Checked first because another broker already on the port would answer our readiness probe.
    if not port_is_free(port):
        raise BrokerStartError(f"port {port} on {HOST} is already in use", hint="choose another --port")
    earlier = stored_ports(data_dir)
    config = data_dir / "server.properties"
    config.write_text(server_properties(port, earlier[1] if earlier else free_port(), data_dir))
    log_path = log_dir / f"kafka-{port}.log"
    cluster_id = stored_cluster_id(data_dir)
    if cluster_id is None:
        cluster_id = new_cluster_id()
        _format_storage(classpath, config, cluster_id, log_path)
    command = java_command(classpath, "kafka.Kafka", str(config), log_file=log_path, quick=quick)
    process = launch("Kafka", command, log_dir / f"kafka-{port}.out")
    broker = RunningBroker(bootstrap=f"{HOST}:{port}", log_path=log_path, data_dir=data_dir, cluster_id=cluster_id, process=process)
    wait_ready(process, lambda: answers_metadata(HOST, port), timeout_s=ready_timeout_s, error=BrokerStartError,
               what=f"did not answer on {broker.bootstrap}", log_path=log_path)
    return broker


def _format_storage(classpath: Classpath, config: Path, cluster_id: str, log_path: Path) -> None:
    """`kafka-storage.sh format`: KRaft refuses to start on an unformatted log directory."""
    command = java_command(classpath, "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config),
                           heap="256m", log_file=log_path, quick=True)
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise BrokerStartError(f"formatting Kafka's storage failed:\n{(done.stdout + done.stderr)[-2000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.broker",
        description="Run Apache Kafka (one KRaft node) on loopback until interrupted; prints its bootstrap address.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the broker log")
    parser.add_argument(
        "--data-dir", type=Path, default=None,
        help="where to keep its data (default: a temp directory, removed when it stops); a directory "
        "an earlier run formatted starts again with its cluster id and port",
    )
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_broker(args.log_dir, port=args.port, data_dir=args.data_dir), BrokerStartError,
        address=lambda broker: broker.bootstrap,
        about=lambda broker: f"Apache Kafka pid {broker.pid}, log {broker.log_path}; "
        f"export RECONCILER_BOOTSTRAP_SERVERS={broker.bootstrap}; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
