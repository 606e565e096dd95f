"""The SparkSession's settings for local and cluster masters, master URLs, and the Spark target `run`
resolves from its flags and SPARK_REMOTE (`runtime.spark.session`, `cli.run_options.spark_target`).
(Jobs themselves run in tests/integration/spark/.)"""

from __future__ import annotations

import os
import re
import sys

import pytest

from reconciler.cli.run_options import spark_target
from reconciler.errors import ReconcilerError
from reconciler.runtime.spark.session import (
    SparkTarget,
    SparkUnavailable,
    connect_address,
    is_local,
    master_addresses,
    session_conf,
    workers_run_this_python,
)


def test_local_sessions_bind_loopback_and_run_this_interpreters_path() -> None:
    conf = session_conf("local[*]", {"spark.ui.enabled": "true", "spark.executor.memory": "2g"})
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.ui.enabled"] == "true" and conf["spark.executor.memory"] == "2g"  # user wins
    paths = conf["spark.executorEnv.PYTHONPATH"].split(os.pathsep)
    assert all(os.path.isabs(p) for p in paths) and any(p.endswith("site-packages") for p in paths)
    assert all(p in paths for p in map(os.path.abspath, sys.path) if p and os.path.isdir(p))
    assert conf["spark.python.daemon.module"] == "reconciler.runtime.spark.daemon"  # in this package


def test_cluster_sessions_advertise_the_address_that_routes_to_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert not is_local("spark://host:7077") and is_local("local") and is_local("local[2]")
    conf = session_conf("spark://127.0.0.1:7077", {})
    # Executors call the driver back: the address on the route to the master, not the host name's.
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.executorEnv.PYTHONPATH" not in conf  # the code is shipped instead
    assert "spark.python.daemon.module" not in conf  # PySpark's own: executors may lack this package
    assert conf["spark.ui.enabled"] == "false"
    assert session_conf("spark://127.0.0.1:7077", {"spark.driver.host": "10.0.0.5"})["spark.driver.host"] == "10.0.0.5"


def test_master_urls_with_several_masters_are_all_read() -> None:
    assert master_addresses("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert master_addresses("spark://[::1]:7077") == [("::1", 7077)]
    assert master_addresses("spark://nohost") == []


def test_spark_target_takes_the_remote_from_spark_remote_unless_a_master_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert spark_target(None, None) == ("local[*]", None)
    monkeypatch.setenv("SPARK_REMOTE", "sc://h:15002")
    assert spark_target(None, None) == ("local[*]", "sc://h:15002")
    assert spark_target("spark://m:7077", None) == ("spark://m:7077", None)
    with pytest.raises(ReconcilerError, match="not both"):
        spark_target("spark://m:7077", "sc://h:1")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("bogus", "cannot read the Spark Connect URL 'bogus'"),
        ("http://h:15002", "cannot read the Spark Connect URL 'http://h:15002'"),
        ("sc://h:abc", "the Spark Connect URL 'sc://h:abc' has no valid port"),  # urlparse raised ValueError
        ("sc://h:99999", "the Spark Connect URL 'sc://h:99999' has no valid port"),
    ],
)
def test_a_spark_connect_url_that_cannot_work_fails_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, url: str, message: str
) -> None:
    """`run` resolves its Spark target before it applies: flag or SPARK_REMOTE alike."""
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    with pytest.raises(SparkUnavailable, match=re.escape(message)):
        spark_target(None, url)
    monkeypatch.setenv("SPARK_REMOTE", url)
    with pytest.raises(SparkUnavailable, match=re.escape(message)):
        spark_target(None, None)
    assert connect_address("sc://h") == ("h", 15002) and connect_address("sc://h:1/;token=x") == ("h", 1)


def test_the_preflight_is_skipped_only_where_workers_run_this_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert workers_run_this_python(SparkTarget(master="local[2]"))
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    assert workers_run_this_python(SparkTarget(master="local[*]"))
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/other/bin/python3")  # the user's choice: check it
    assert not workers_run_this_python(SparkTarget(master="local[2]"))
    monkeypatch.delenv("PYSPARK_PYTHON")
    assert not workers_run_this_python(SparkTarget(master="spark://10.0.0.5:7077"))
    assert not workers_run_this_python(SparkTarget(remote="sc://10.0.0.5:15002"))
