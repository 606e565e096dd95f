"""`Spark` (runtime/spark/handle.py): a classic context builds its SparkSession only when asked,
once, and stops what was started; a Spark Connect session has no context."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from reconciler.runtime.spark.handle import Spark


class Stoppable:
    def __init__(self) -> None:
        self.stopped = 0

    def stop(self) -> None:
        self.stopped += 1


def classic() -> tuple[Spark, Stoppable, list[Stoppable]]:
    context, built = Stoppable(), []

    def build() -> Any:
        built.append(Stoppable())
        return built[-1]

    return Spark.classic(context, build), context, built  # type: ignore[arg-type]


def test_a_classic_spark_builds_no_session_until_one_is_asked_for() -> None:
    spark, context, built = classic()
    assert not spark.connect and spark.context is context and built == []
    first = spark.session()
    assert spark.session() is first and built == [first]


def test_threads_asking_at_once_get_one_session() -> None:
    spark, _, built = classic()
    threads = [threading.Thread(target=spark.session) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1


def test_stop_stops_the_context_when_no_session_was_built_and_the_session_when_one_was() -> None:
    spark, context, built = classic()
    spark.stop()
    assert context.stopped == 1 and built == []
    spark, context, built = classic()
    spark.session()
    spark.stop()
    assert built[0].stopped == 1 and context.stopped == 0  # a session's stop stops its context


class ConnectSession(Stoppable):
    """A stand-in whose class lives in a `pyspark.sql.connect` module, as Connect's session does."""


ConnectSession.__module__ = "pyspark.sql.connect.session"


def test_a_spark_connect_session_has_no_context() -> None:
    session = ConnectSession()
    spark = Spark.over(session)  # type: ignore[arg-type]
    assert spark.connect and spark.session() is session
    with pytest.raises(TypeError, match="no SparkContext"):
        _ = spark.context
    spark.stop()
    assert session.stopped == 1
