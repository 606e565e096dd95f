"""Spark fixtures: ONE real local SparkSession for the whole test session.

Starting Spark costs seconds (6–10 s on a 2-core machine), so every test that runs tasks
shares `spark_session`; `spark_executor` is a cheap per-test `SparkExecutor` bound to the
test's own group (`kafka_settings`) that joins that session and never stops it.

`plugins/` (a connector outside the package, `unpackaged:PickySink`) is put on `sys.path` here,
at import time, so that it is on the driver's path before any session starts: a local
master hands the driver's import path to its Python workers.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.kafka.settings import KafkaSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from reconciler.runtime.executor import SparkExecutor

PLUGINS_DIR = Path(__file__).resolve().parent / "plugins"
if str(PLUGINS_DIR) not in sys.path:
    sys.path.insert(0, str(PLUGINS_DIR))

TEST_MASTER = "local[2]"


@pytest.fixture(scope="session")
def spark_session() -> Iterator[SparkSession]:
    from reconciler.runtime.spark import active_session, start_session, warm_up
    from reconciler.runtime.spark_kafka import with_kafka_jars

    existing = active_session()
    # With Spark's Kafka data source, as `reconciler run` starts it: sinks read through it.
    session = existing or start_session(TEST_MASTER, with_kafka_jars({}))
    warm_up(session)
    yield session
    if existing is None:
        session.stop()


@pytest.fixture(scope="session")
def spark(spark_session: SparkSession) -> SparkSession:
    """The same shared session under its shorter, older name."""
    return spark_session


@pytest.fixture
def spark_executor(spark_session: SparkSession, kafka_settings: KafkaSettings) -> Iterator[SparkExecutor]:
    from reconciler.runtime.executor import SparkExecutor

    executor = SparkExecutor(kafka_settings, master=TEST_MASTER)
    yield executor
    executor.close()
