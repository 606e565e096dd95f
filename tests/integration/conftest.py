"""Integration fixtures shared by the runtime tests: ONE local SparkSession per test session.

Starting Spark costs ~7 s and ~400 MB, so every test that runs connector tasks shares this
session (`SparkExecutor` joins the session already running in the process and does not stop
it on `close()`). Tests that need a fresh process (crash tests) start their own `reconciler`
subprocesses instead.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SPARK_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from reconciler.runtime.spark import start_session

    session = start_session(SPARK_MASTER, {})
    try:
        yield session
    finally:
        session.stop()
