"""A local session's Python workers import PySpark and py4j from the installed packages, not from
Spark's zips, which Python compiles again in every worker (`runtime/spark/daemon.py`); and their
daemon is the prefork the session started beside the JVM (`runtime/spark/prefork.py`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _modules(_: int) -> tuple[str, str, str]:
    import py4j
    import pyspark
    import pyspark.worker

    return pyspark.__file__ or "", py4j.__file__ or "", pyspark.worker.__file__ or ""


def test_workers_import_pyspark_from_the_installed_package(spark_session: SparkSession) -> None:
    import py4j
    import pyspark

    found = spark_session.sparkContext.parallelize([0, 1], 2).map(_modules).collect()
    assert found and all(".zip" not in name for names in found for name in names), found
    assert {names[0] for names in found} == {pyspark.__file__}  # the driver's own PySpark
    assert {names[1] for names in found} == {py4j.__file__}


def _daemon(_: int) -> tuple[str, str, str]:
    """The worker's daemon: its command line, its hash seed, the session's prefork variable."""
    cmdline = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    return cmdline, os.environ.get("PYTHONHASHSEED", ""), os.environ.get("RECONCILER_SPARK_PREFORK", "")


def test_workers_are_forked_by_the_prefork_that_took_the_launched_daemons_place(spark_session: SparkSession) -> None:
    """Spark launched its daemon, which handed its place to the prefork: the workers' parent is a
    process forked from the prefork, holding the daemon's environment (Spark's hash seed)."""
    found = set(spark_session.sparkContext.parallelize([0, 1], 2).map(_daemon).collect())
    assert len(found) == 1, found  # one daemon for the session
    cmdline, seed, address = found.pop()
    assert "-m reconciler.runtime.spark.prefork" in cmdline and address and address in cmdline, cmdline
    assert seed == "0"
