"""Start and stop a Spark standalone cluster, and a Spark Connect server, on loopback.

For the cluster tests, the benchmarks and trying `reconciler run --spark-master spark://…` by
hand. Everything comes from the installed PySpark (its `bin/spark-class` and `bin/spark-submit`
and its jars), nothing is downloaded:

- a master (`org.apache.spark.deploy.master.Master`) and N workers
  (`org.apache.spark.deploy.worker.Worker`), each a separate process with its own work
  directory, on 127.0.0.1 and free ports; a worker offers 1 core and 1 GiB by default;
- a Spark Connect server (`org.apache.spark.sql.connect.service.SparkConnectServer`, submitted
  with `spark-submit` as PySpark's `start-connect-server.sh` does), on a `local[N]` master.

Every process is started in its own session and stopped by its PID, never by name
(docs/real-components.md#spark-standalone-cluster-and-spark-connect).

    python -m reconciler.devtools.spark_cluster [--workers 2] [--connect]   # prints the URLs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from reconciler.devtools.process import HOST, ManagedProcess, free_port, launch, port_open, tail, wait_ready
from reconciler.errors import ReconcilerError
from reconciler.runtime.spark.data_source import kafka_source_jars

READY_TIMEOUT_S = 90.0
CONNECT_SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


class SparkStartError(ReconcilerError):
    """A cluster process or the Spark Connect server could not be started."""


def spark_home() -> Path:
    """The installed PySpark's own Spark distribution (its `bin/`, `jars/`)."""
    try:
        import pyspark
    except ImportError as exc:
        raise SparkStartError("PySpark is not installed", hint="pip install 'connect-reconciler[spark]'") from exc
    return Path(pyspark.__file__).resolve().parent


def spark_env(log_dir: Path, python: str | None = None) -> dict[str, str]:
    """The environment Spark's scripts run in: this PySpark as SPARK_HOME, loopback only."""
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP=HOST,
        SPARK_LOG_DIR=str(log_dir),
        SPARK_NO_DAEMONIZE="1",
        SPARK_CONF_DIR=str(log_dir),  # no stray spark-defaults.conf from the machine
    )
    env.pop("SPARK_REMOTE", None)  # the server itself must not try to be a Connect client
    # The executors' Python and path are the cluster's, not those of whoever started it.
    for name in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "RECONCILER_FAILPOINTS"):
        env.pop(name, None)
    if python is not None:
        env["PYSPARK_PYTHON"] = python
    return env


@dataclass
class SparkProcess(ManagedProcess):
    """One JVM of the cluster (master, worker or Connect server)."""

    work_dir: Path | None = None
    port: int = 0


def _launch(name: str, command: Sequence[str], env: Mapping[str, str], log_dir: Path) -> SparkProcess:
    started = launch(f"Spark {name}", command, log_dir / f"{name}.log", env=env)
    return SparkProcess(started.name, started.log_path, started.process)


@dataclass(kw_only=True)
class RunningCluster:
    """A standalone master and its workers; `master_url` is what `--spark-master` takes."""

    master_url: str
    master: SparkProcess
    workers: list[SparkProcess]
    log_dir: Path
    ui_port: int
    worker_memory: str
    python: str | None

    def alive_workers(self) -> int:
        """Workers the master counts as ALIVE (from its JSON status page)."""
        try:
            with urllib.request.urlopen(f"http://{HOST}:{self.ui_port}/json/", timeout=2) as answer:
                status = json.load(answer)
        except (OSError, ValueError):
            return 0
        return sum(1 for worker in status.get("workers", []) if worker.get("state") == "ALIVE")

    def kill_worker(self, index: int) -> SparkProcess:
        """SIGKILL worker `index` (its executors notice and exit): a lost machine."""
        worker = self.workers[index]
        worker.kill()
        return worker

    def restart_worker(self, index: int, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Start worker `index` again (same work directory) and wait until the master has it."""
        old = self.workers[index]
        old.stop()
        self.workers[index] = _start_worker(self, index, old.work_dir or self.log_dir / f"worker-{index}")
        self._wait_workers(ready_timeout_s)

    def _wait_workers(self, ready_timeout_s: float) -> None:
        try:
            wait_ready(self.master, self._all_registered, timeout_s=ready_timeout_s, error=SparkStartError,
                       what="did not register its workers", poll_s=0.2)
        except SparkStartError as exc:
            self.stop()
            raise SparkStartError(exc.message, hint=f"logs in {self.log_dir}") from exc

    def _all_registered(self) -> bool:
        dead = next((worker for worker in self.workers if not worker.alive()), None)
        if dead is not None:
            raise SparkStartError(f"{dead.name} exited:\n{tail(dead.log_path, 15)}")
        return self.alive_workers() >= len(self.workers)

    def stop(self) -> None:
        for process in [*self.workers, self.master]:
            process.stop()

    def kill(self) -> None:
        """SIGKILL the workers and the master (and so their executors): nothing is left to flush."""
        for process in [*self.workers, self.master]:
            process.kill()

    def __enter__(self) -> RunningCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _start_worker(cluster: RunningCluster, index: int, work_dir: Path) -> SparkProcess:
    work_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    command = [
        str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", cluster.master_url,
        "--host", HOST, "--port", str(port), "--webui-port", str(free_port()),
        "--cores", "1", "--memory", cluster.worker_memory, "--work-dir", str(work_dir),
    ]
    env = spark_env(cluster.log_dir, cluster.python)
    # Small JVMs: a worker only launches executors; its own heap needs little.
    env["SPARK_DAEMON_MEMORY"] = "256m"
    env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1"
    worker = _launch(f"worker-{index}", command, env, cluster.log_dir)
    worker.work_dir, worker.port = work_dir, port
    return worker


def start_cluster(
    log_dir: Path | None = None,
    *,
    workers: int = 2,
    worker_memory: str = "1g",
    python: str | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> RunningCluster:
    """A master and `workers` workers (1 core each) on loopback, ready when all have registered.

    `python`: PYSPARK_PYTHON in the workers' environment (the default Python of executors that
    are given no `spark.pyspark.python`); None keeps Spark's default.
    """
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-spark-"))
    log_dir = log_dir / f"spark-cluster-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    log_dir.mkdir(parents=True, exist_ok=True)
    port, ui_port = free_port(), free_port()
    command = [
        str(spark_home() / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master",
        "--host", HOST, "--port", str(port), "--webui-port", str(ui_port),
    ]
    env = spark_env(log_dir, python)
    env["SPARK_DAEMON_MEMORY"] = "256m"
    env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1"
    master = _launch("master", command, env, log_dir)
    master.port = port
    cluster = RunningCluster(
        master_url=f"spark://{HOST}:{port}", master=master, workers=[], log_dir=log_dir, ui_port=ui_port,
        worker_memory=worker_memory, python=python,
    )
    _wait_port(master, port, ready_timeout_s, cluster.stop)
    cluster.workers = [_start_worker(cluster, i, log_dir / f"worker-{i}") for i in range(workers)]
    cluster._wait_workers(ready_timeout_s)
    return cluster


def _wait_port(process: SparkProcess, port: int, timeout_s: float, on_failure: Callable[[], None]) -> None:
    try:
        wait_ready(process, lambda: port_open(HOST, port), timeout_s=timeout_s, error=SparkStartError,
                   what=f"did not listen on port {port}", poll_s=0.2)
    except SparkStartError:
        on_failure()
        raise


@dataclass
class RunningConnectServer:
    """A Spark Connect server; `url` is what `--spark-remote` takes."""

    url: str
    server: SparkProcess
    command: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    log_dir: Path | None = None

    def stop(self) -> None:
        self.server.stop()

    def kill(self) -> None:
        self.server.kill()

    def restart(self, ready_timeout_s: float = READY_TIMEOUT_S) -> None:
        """Stop the server and start it again on the same port: its sessions are gone."""
        assert self.command and self.log_dir is not None, "a server start_connect_server started"
        port = self.server.port
        self.server.stop()
        self.server = _launch("connect-server-restarted", self.command, self.env, self.log_dir)
        self.server.port = port
        _wait_port(self.server, port, ready_timeout_s, self.server.stop)

    def __enter__(self) -> RunningConnectServer:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_connect_server(
    log_dir: Path | None = None,
    *,
    master: str = "local[2]",
    jars: Sequence[Path] = (),
    python: str | None = None,
    conf: Mapping[str, str] | None = None,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> RunningConnectServer:
    """A Spark Connect server on a free loopback port. `jars`: extra jars on its classpath (the
    Kafka data source); `python`: the Python its workers run."""
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-spark-"))
    log_dir = log_dir / f"spark-connect-{os.getpid()}-{time.monotonic_ns() % 10**6}"
    log_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    settings = {
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.driver.host": HOST,
        "spark.driver.bindAddress": HOST,
        "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1",
        **(conf or {}),
    }
    command = [str(spark_home() / "bin" / "spark-submit"), "--master", master, "--class", CONNECT_SERVER_CLASS,
               "--name", "spark-connect-server"]
    if jars:
        command += ["--jars", ",".join(str(jar) for jar in jars)]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")  # spark-submit's name for "no application jar"
    env = spark_env(log_dir, python)
    server = _launch("connect-server", command, env, log_dir)
    server.port = port
    _wait_port(server, port, ready_timeout_s, server.stop)
    return RunningConnectServer(f"sc://{HOST}:{port}", server, command, env, log_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.spark_cluster",
        description="Run a Spark standalone cluster (and optionally a Spark Connect server) on loopback "
        "until interrupted; prints the master URL (and the sc:// URL).",
    )
    parser.add_argument("--workers", type=int, default=2, help="workers, 1 core each (default: %(default)s)")
    parser.add_argument("--worker-memory", default="1g", help="memory each worker offers (default: %(default)s)")
    parser.add_argument("--connect", action="store_true", help="also start a Spark Connect server (local[2])")
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the logs and work directories")
    args = parser.parse_args(argv)
    stop = False

    def _request_stop(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    try:
        cluster = start_cluster(args.log_dir, workers=args.workers, worker_memory=args.worker_memory)
    except SparkStartError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    server = None
    try:
        print(cluster.master_url, flush=True)
        if args.connect:
            server = start_connect_server(args.log_dir, jars=kafka_source_jars() or ())
            print(server.url, flush=True)
        print(f"master pid {cluster.master.pid}, workers {[w.pid for w in cluster.workers]}, logs in "
              f"{cluster.log_dir}; Ctrl-C stops them", file=sys.stderr, flush=True)
        while not stop and cluster.master.alive():
            time.sleep(0.2)
    except ReconcilerError as exc:
        print(exc.render(), file=sys.stderr)
        return 1
    finally:
        if server is not None:
            server.stop()
        cluster.stop()
        if args.log_dir is None:
            shutil.rmtree(cluster.log_dir.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
