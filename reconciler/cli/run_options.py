"""The options `run` and `watch` share: the runtime's (Spark, ticks, stopping) and the REST
API's, with the checks made before anything is written. Light to import: `run --once` launches
Spark's JVM from them before it imports the use case (`run_cmd`).
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence

from reconciler.cli.logs import LOG_FORMATS
from reconciler.cli.options import add_prune_options, positive_seconds
from reconciler.core.pairs import key_values
from reconciler.errors import ReconcilerError
from reconciler.runtime.spark.session import SparkTarget, connect_address, master_addresses

DEFAULT_INTERVAL_S = 10.0
DEFAULT_GRACE_S = 30.0  # Kubernetes' default terminationGracePeriodSeconds
DEFAULT_SINK_READER = "confluent-kafka"


def add_runtime_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("runtime")
    group.add_argument(
        "--interval", type=positive_seconds, default=DEFAULT_INTERVAL_S, metavar="SECONDS",
        help="seconds from the start of one tick to the next (default: %(default)g)",
    )
    group.add_argument(
        "--spark-master", type=spark_master, default=None,
        help="Spark master URL: local[N] or spark://HOST:PORT of a standalone cluster (default: local[*])",
    )
    group.add_argument(
        "--spark-remote", default=None, metavar="sc://HOST:PORT",
        help="run the tasks through this Spark Connect server instead (default: $SPARK_REMOTE)",
    )
    group.add_argument(
        "--spark-timeout", type=positive_seconds, default=60.0, metavar="SECONDS",
        help="how long the Spark master or Connect server may take to answer and give an executor "
        "(default: %(default)g)",
    )
    group.add_argument(
        "--sink-reader", choices=["confluent-kafka", "spark-kafka", "auto"], default=DEFAULT_SINK_READER,
        help="how sinks read Kafka: confluent-kafka in the Python workers (the default: faster, "
        "measured), Spark's Kafka data source (spark-kafka), or the data source when the session "
        "has it (auto)",
    )
    group.add_argument(
        "--spark-conf", action="append", default=[], metavar="KEY=VALUE",
        help="a Spark setting (repeatable), e.g. --spark-conf spark.executor.memory=2g",
    )
    group.add_argument("--worker-id", default=None, help="worker_id in statuses (default: <hostname>:<pid>)")
    add_prune_options(group)
    group.add_argument(
        "--auto-restart-unit", type=positive_seconds, default=60.0, metavar="SECONDS",
        help="length of one spec.autoRestart back-off unit, Strimzi's minute (default: %(default)g)",
    )
    group.add_argument(
        "--grace-period", type=positive_seconds, default=DEFAULT_GRACE_S, metavar="SECONDS",
        help="after SIGTERM/SIGINT, the time to finish the batch and stop; then exit at once "
        "(default: %(default)g; keep it below Kubernetes' terminationGracePeriodSeconds)",
    )
    group.add_argument(
        "--log-format", choices=LOG_FORMATS, default=os.environ.get("RECONCILER_LOG_FORMAT") or "text",
        help="text lines, or one JSON object per line on stderr for log pipelines "
        "(default: $RECONCILER_LOG_FORMAT or text)",
    )
    _add_http_options(parser)


def _add_http_options(parser: argparse.ArgumentParser) -> None:
    http = parser.add_argument_group("REST API, health and metrics (loop mode)")
    http.add_argument(
        "--http-bind", default=os.environ.get("RECONCILER_HTTP_BIND", "127.0.0.1:8083"), metavar="HOST:PORT",
        help="where to serve the read-only REST API, /healthz, /readyz and /metrics "
        "(default: $RECONCILER_HTTP_BIND or %(default)s)",
    )
    http.add_argument("--no-http", action="store_true", help="serve no HTTP at all")


def spark_of(args: argparse.Namespace) -> SparkTarget:
    """Where the tasks run, as the options say: master or Spark Connect URL, settings, timeout."""
    master, remote = spark_target(args.spark_master, args.spark_remote)
    return SparkTarget(master=master, remote=remote, conf=parse_spark_conf(args.spark_conf), timeout_s=args.spark_timeout)


def spark_target(master: str | None, remote: str | None) -> tuple[str, str | None]:
    """(master, Spark Connect URL or None): `--spark-remote` or SPARK_REMOTE, unless a master
    is named; both named is an error."""
    if master and remote:
        raise ReconcilerError("give --spark-master or --spark-remote, not both")
    if master:
        return master, None
    remote = remote or os.environ.get("SPARK_REMOTE") or None
    if remote is not None:
        connect_address(remote)  # a URL that cannot work fails now, before anything is written
    return "local[*]", remote


# The master URLs Spark takes (`SparkContext.createTaskScheduler`, `SparkSubmit`'s check).
_LOCAL_MASTER = re.compile(r"local(\[([0-9]+|\*)(\s*,\s*[0-9]+)?\])?")
_LOCAL_CLUSTER = re.compile(r"local-cluster\[\s*[0-9]+\s*,\s*[0-9]+\s*,\s*[0-9]+\s*\]")


def spark_master(text: str) -> str:
    """argparse's type for `--spark-master`: a URL Spark takes, checked before anything is
    written (Spark itself refuses a bad one only once its JVM runs, with a Java stack trace)."""
    master = text.strip()
    local = _LOCAL_MASTER.fullmatch(master)
    if local is not None:
        if local.group(2) is not None and local.group(2) != "*" and int(local.group(2)) < 1:
            raise argparse.ArgumentTypeError(f"{text!r} runs no thread: use local[N] with N of at least 1, or local[*]")
        return master
    if _LOCAL_CLUSTER.fullmatch(master) or master == "yarn" or master.startswith("k8s://"):
        return master  # Spark's to check further: they need more than a URL
    if master.startswith("spark://"):  # checked as the runtime will connect to it
        if len(master_addresses(master)) == len(master.removeprefix("spark://").split(",")):
            return master
        raise argparse.ArgumentTypeError(f"{text!r}: a standalone master is spark://HOST:PORT[,HOST:PORT…]")
    raise argparse.ArgumentTypeError(
        f"{text!r} is not a Spark master URL: local, local[N], local[*], spark://HOST:PORT[,HOST:PORT…] "
        "(a standalone cluster), k8s://…, yarn; --spark-remote sc://HOST:PORT for Spark Connect")


def parse_spark_conf(items: Sequence[str]) -> dict[str, str]:
    conf, bad = key_values(items)
    if bad is not None:
        raise ReconcilerError(f"--spark-conf expects KEY=VALUE, got {bad!r}")
    return conf


