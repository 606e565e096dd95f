"""A local session's Python workers import PySpark and py4j from the installed packages, not from
Spark's zips, which Python compiles again in every worker (`runtime/spark/daemon.py`)."""

from __future__ import annotations

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
