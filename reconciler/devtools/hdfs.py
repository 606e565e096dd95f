"""Start and stop a real HDFS on loopback, for the tests and the examples.

Hadoop's MiniDFSCluster: a NameNode and one DataNode in one JVM, the cluster Hadoop's own tests
run on, speaking HDFS's real RPC and data-transfer protocols. Its jars come from Maven Central by
the pinned pom beside this module (`jvm/hdfs/pom.xml`, cached as Kafka's are), and it is started
through Hadoop's `MiniDFSClusterManager`, which writes the NameNode's port to a file once the
cluster is up: that file is the readiness probe. A fresh cluster per start (formatted, in a temp
directory that goes with it), replication 1, the starting user its superuser. Stopped by its
PID, never by name (docs/real-components.md#hdfs).

    python -m reconciler.devtools.hdfs              # prints hdfs://127.0.0.1:<port>, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reconciler.devtools.jvm import java_binary
from reconciler.devtools.process import STOP_TIMEOUT_S, RunningServer, launch, serve_in_foreground, wait_ready
from reconciler.errors import ReconcilerError
from reconciler.toolchain.maven import resolve_classpath

HOST = "127.0.0.1"
POM = Path(__file__).resolve().parent / "jvm" / "hdfs" / "pom.xml"
MAIN = "org.apache.hadoop.test.MiniDFSClusterManager"
READY_TIMEOUT_S = 120.0  # measured: ~10 s on an idle two-core machine, the JVM's start most of it


class HdfsStartError(ReconcilerError):
    """The HDFS cluster could not be started (no Java or Maven, or it did not come up)."""


@dataclass(kw_only=True)
class RunningHdfs(RunningServer):
    """A started MiniDFSCluster, as RunningServer (its port the NameNode's RPC port, not HTTP);
    `uri(path)` names a directory in it. Stopping it removes its files too."""

    base_dir: Path

    @property
    def namenode(self) -> str:
        """The NameNode's RPC address, `host:port`."""
        return f"{self.host}:{self.port}"

    def uri(self, path: str = "") -> str:
        """`hdfs://host:port/path`."""
        return f"hdfs://{self.namenode}/{path.lstrip('/')}"

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM (the JVM's shutdown hook stops the cluster), then SIGKILL. Idempotent."""
        super().stop(timeout_s)
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def kill(self) -> None:
        super().kill()
        shutil.rmtree(self.base_dir, ignore_errors=True)


def jars() -> tuple[Path, ...]:
    """MiniDFSCluster's jars: from the cache, else resolved by Maven (~100 MB the first time)."""
    return resolve_classpath(POM, "Hadoop's MiniDFSCluster (hadoop-client-minicluster)", label="hdfs")


def start_hdfs(log_dir: Path | None = None, *, ready_timeout_s: float = READY_TIMEOUT_S) -> RunningHdfs:
    """A fresh MiniDFSCluster on a free NameNode port of loopback, ready to be written to."""
    classpath = jars()
    base_dir = Path(tempfile.mkdtemp(prefix="reconciler-hdfs-"))
    log_dir = log_dir if log_dir is not None else base_dir
    log_dir.mkdir(parents=True, exist_ok=True)
    details = base_dir / "details.json"
    command = [
        str(java_binary()), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        f"-Dtest.build.data={base_dir / 'data'}", "-cp", ":".join(str(jar) for jar in classpath), MAIN,
        "-datanodes", "1", "-nnport", "0", "-format", "-writeDetails", str(details),
        "-D", "dfs.replication=1", "-D", f"dfs.namenode.rpc-bind-host={HOST}",
    ]
    log_path = log_dir / f"hdfs-{base_dir.name}.log"
    process = launch("HDFS (MiniDFSCluster)", command, log_path, cwd=base_dir)
    try:
        wait_ready(process, lambda: _port(details) is not None, timeout_s=ready_timeout_s, error=HdfsStartError,
                   what="did not report its NameNode's port", poll_s=0.2)
    except BaseException:
        process.kill()
        shutil.rmtree(base_dir, ignore_errors=True)
        raise
    port = _port(details)
    assert port is not None
    return RunningHdfs(port=port, log_path=log_path, process=process, base_dir=base_dir, host=HOST)


def _port(details: Path) -> int | None:
    """The NameNode's port from MiniDFSClusterManager's details file, once it is whole."""
    try:
        port = json.loads(details.read_text())["namenode_port"]
    except (OSError, ValueError, KeyError):
        return None
    return int(port) if isinstance(port, int) and port > 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.hdfs",
        description="Run a real HDFS (Hadoop's MiniDFSCluster) on loopback until interrupted; prints its URI.",
    )
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the cluster's log")
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_hdfs(args.log_dir), HdfsStartError, address=lambda server: server.uri(),
        about=lambda server: f"HDFS (MiniDFSCluster) pid {server.pid}, log {server.log_path}; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
