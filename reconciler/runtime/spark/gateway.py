"""Spark's driver JVM, launched as PySpark launches it (`pyspark.java_gateway.launch_gateway`),
in two halves: `launch` starts `spark-submit` and imports nothing of PySpark; `connect` waits for
the JVM's gateway and connects Py4J to it.

Why two halves: `run --once` launches the JVM first thing (`session.launch_early`), before the
command imports the use case, Kafka's client and PySpark (~0.5 s of a one-record run's start
on 2 cores), and connects when the batch needs Spark. The JVM's start then overlaps all of it
(docs/performance.md#the-fixed-cost-of-run---once-phase-by-phase).

What PySpark does and this does the same way: `spark-submit` from SPARK_HOME with one `--conf`
per setting and PYSPARK_SUBMIT_ARGS (else `pyspark-shell`); the JVM writes its gateway's port
and secret into a file named by `_PYSPARK_DRIVER_CONN_INFO_PATH`; its stdin is a pipe held by
this process, so the JVM ends when this process does; SIGINT is not passed on to it. The file
is polled every 10 ms, not PySpark's 100 ms.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from py4j.clientserver import ClientServer

POLL_S = 0.01
# The classes PySpark's launch_gateway imports into the gateway's JVM view, in its order.
JAVA_IMPORTS = (
    "org.apache.spark.SparkConf", "org.apache.spark.api.java.*", "org.apache.spark.api.python.*",
    "org.apache.spark.ml.python.*", "org.apache.spark.mllib.api.python.*", "org.apache.spark.resource.*",
    "org.apache.spark.sql.Encoders", "org.apache.spark.sql.OnSuccessCall", "org.apache.spark.sql.functions",
    "org.apache.spark.sql.classic.*", "org.apache.spark.sql.api.python.*", "org.apache.spark.sql.hive.*",
    "scala.Tuple2",
)


class GatewayExited(Exception):
    """The JVM ended before it wrote its gateway's address (it says why on its stderr)."""


@dataclass(kw_only=True)
class Launched:
    """A `spark-submit` started with `options`, its gateway not yet connected."""

    options: dict[str, str]
    process: subprocess.Popen[bytes] = field(repr=False)
    info_dir: str
    connected: bool = False

    @property
    def info_file(self) -> str:
        return os.path.join(self.info_dir, "gateway")

    def abandon(self) -> None:
        """End a JVM that will not be used (its settings were not the session's, or no session
        came), and remove its gateway file's directory."""
        self.process.kill()
        self.process.wait()
        if self.process.stdin is not None:
            self.process.stdin.close()
        shutil.rmtree(self.info_dir, ignore_errors=True)


def spark_home() -> str | None:
    """SPARK_HOME, else the installed PySpark's own directory (it holds `bin/spark-submit`),
    found without importing PySpark; None when neither has `bin/spark-submit`."""
    home = os.environ.get("SPARK_HOME")
    if home is None:
        spec = util.find_spec("pyspark")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        home = locations[0] if locations else None
    return home if home and os.path.isfile(os.path.join(home, "bin", "spark-submit")) else None


def command(home: str, options: Mapping[str, str], environ: Mapping[str, str]) -> list[str]:
    """`spark-submit`'s command line, as PySpark's launch_gateway makes it."""
    line = [os.path.join(home, "bin", "spark-submit")]
    for key, value in options.items():
        line += ["--conf", f"{key}={value}"]
    submit_args = environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
    if environ.get("SPARK_TESTING"):
        submit_args = f"--conf spark.ui.enabled=false {submit_args}"
    return line + shlex.split(submit_args)


def launch(options: Mapping[str, str], *, stderr: int | None = None) -> Launched:
    """Start `spark-submit` with `options` (this process's environment); `stderr`: a file
    descriptor for the JVM's stderr, else this process's. GatewayExited when Spark is not found."""
    home = spark_home()
    if home is None:
        raise GatewayExited("no Spark found: neither SPARK_HOME nor PySpark's package holds bin/spark-submit")
    info_dir = tempfile.mkdtemp(prefix="reconciler-gateway-")
    env = {**os.environ, "SPARK_CONNECT_MODE": "0", "_PYSPARK_DRIVER_CONN_INFO_PATH": os.path.join(info_dir, "gateway")}
    try:
        process = subprocess.Popen(command(home, options, os.environ), stdin=subprocess.PIPE, stderr=stderr,
                                    env=env, preexec_fn=_ignore_sigint)
    except OSError:
        shutil.rmtree(info_dir, ignore_errors=True)
        raise
    return Launched(options=dict(options), process=process, info_dir=info_dir)


def connect(launched: Launched) -> ClientServer:
    """Wait for the JVM's gateway and connect to it, as PySpark's launch_gateway does (a
    ClientServer: PySpark pins each Python thread to a JVM thread by default)."""
    from py4j.clientserver import ClientServer, JavaParameters, PythonParameters
    from py4j.java_gateway import java_import

    port, secret = _address(launched)
    gateway = ClientServer(java_parameters=JavaParameters(port=port, auth_token=secret, auto_convert=True),
                           python_parameters=PythonParameters(port=0, eager_load=False))
    gateway.proc = launched.process  # PySpark keeps it there: the pipe the JVM's life hangs on
    launched.connected = True
    for name in JAVA_IMPORTS:
        java_import(gateway.jvm, name)
    return gateway


def _address(launched: Launched) -> tuple[int, str]:
    """The port and secret the JVM wrote: a 4-byte big-endian port, then the secret as PySpark's
    UTF8Deserializer reads it (a 4-byte length, then UTF-8)."""
    try:
        while launched.process.poll() is None and not os.path.isfile(launched.info_file):
            time.sleep(POLL_S)
        if not os.path.isfile(launched.info_file):
            raise GatewayExited(f"Spark's JVM exited (code {launched.process.returncode}) before it was ready")
        with open(launched.info_file, "rb") as info:
            data = info.read()
    finally:
        shutil.rmtree(launched.info_dir, ignore_errors=True)
    (port,), (length,) = struct.unpack(">i", data[:4]), struct.unpack(">i", data[4:8])
    return port, data[8:8 + length].decode()


def _ignore_sigint(*_: Any) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops this process, which ends the JVM
