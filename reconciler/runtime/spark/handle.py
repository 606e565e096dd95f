"""`Spark`: what the runtime's jobs run on. A classic SparkContext whose SparkSession is built only
when something asks for a DataFrame, or a Spark Connect session (which has no context).

The runtime's default path needs no SparkSession: its jobs are RDD jobs (`jobs.run_partitions`),
shipping code is `addPyFile`, and sinks read Kafka with confluent-kafka in the Python workers.
Building the session on a running context is the JVM's SQL engine starting (its catalog, its
configuration, the Catalyst classes): measured 1.1–1.3 s on a quiet 2-core machine with the
class-data-sharing archive and 2.3–3.4 s without, in the middle of every `run --once`'s start,
where it shared the two cores with the Python workers' warm-up. So a classic `Spark` builds it
on the first `session()`: the DataFrame back end, Spark's Kafka data source, a benchmark.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession


def is_connect(session: SparkSession) -> bool:
    """Whether `session` is a Spark Connect client session (no SparkContext, no RDDs)."""
    return type(session).__module__.startswith("pyspark.sql.connect")


class Spark:
    """A classic context with its session built on demand (`classic`), or a session (`over`)."""

    def __init__(self, *, context: SparkContext | None, session: SparkSession | None,
                 build: Callable[[], SparkSession] | None = None) -> None:
        self._context = context
        self._session = session
        self._build = build
        self._lock = threading.Lock()

    @classmethod
    def classic(cls, context: SparkContext, build: Callable[[], SparkSession]) -> Spark:
        """`context`, whose SparkSession `build()` makes (on it) at the first `session()`."""
        return cls(context=context, session=None, build=build)

    @classmethod
    def over(cls, session: SparkSession) -> Spark:
        """A session already built: classic (its context) or Spark Connect."""
        return cls(context=None if is_connect(session) else session.sparkContext, session=session)

    @property
    def connect(self) -> bool:
        """Whether this is a Spark Connect session: no context, no RDDs, DataFrames only."""
        return self._context is None

    @property
    def context(self) -> SparkContext:
        """The classic SparkContext; a Spark Connect session has none."""
        if self._context is None:
            raise TypeError("a Spark Connect session has no SparkContext")
        return self._context

    def session(self) -> SparkSession:
        """The SparkSession, built now on the context if it was not yet."""
        with self._lock:
            if self._session is None:
                assert self._build is not None, "a classic Spark is made with the way to build its session"
                self._session = self._build()
            return self._session

    def stop(self) -> None:
        """Stop the session if one was built (a classic one stops its context too), else the context."""
        with self._lock:
            if self._session is not None:
                self._session.stop()
            elif self._context is not None:
                self._context.stop()
