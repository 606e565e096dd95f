"""Sinks that read through Spark's Kafka data source (`spark-sql-kafka-0-10`).

The JVM reads Kafka in record batches and hands each Python worker Arrow batches, so no
Python object is made per record (docs/runtime.md#reading-through-sparks-kafka-data-source).
Chosen with `--sink-reader spark-kafka` (or `auto`); not the default, because on the reference
machine it measured ~5x slower than confluent-kafka in the Python worker
(docs/runtime.md#back-ends-measured).

- The jars: `spark-sql-kafka-0-10` of the installed Spark version and its runtime
  dependencies, resolved from Maven Central through the pinned
  `runtime/spark/jvm/spark-kafka/pom.xml` and cached (`toolchain.maven`); jars Spark already ships are
  left out. A classic session gets them as `spark.jars`; a Spark Connect server must have them
  on its own classpath (`--jars`/`--packages` when it is started).
- One DataFrame per sink connector batch: `assign` the planned partitions, the exact
  `startingOffsets`/`endingOffsets` of each range (`[start, end)`), `read_committed`,
  headers included. The source makes one Spark partition per Kafka partition range, and
  `runtime.sink.spark_reader.sink_batches` drives the connector's task over that partition's batches.

When the data source is unavailable (no Maven, no network for a cold cache, a Connect server
without the jars), `auto` falls back to confluent-kafka in the Python workers and logs the
reason once; `spark-kafka` fails the sink's tasks with that reason.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from reconciler.errors import ReconcilerError
from reconciler.toolchain.maven import resolve_classpath

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from reconciler.kafka.settings import KafkaSettings

LOG = logging.getLogger(__name__)

POM = Path(__file__).resolve().parent / "jvm" / "spark-kafka" / "pom.xml"
FORMAT = "kafka"



class OffsetRange(Protocol):
    """What the data source reads of one Kafka partition: `[start, end)` (a sink's range)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def end(self) -> int: ...


_unavailable: dict[str, str] = {}  # why the data source cannot be used, said once per reason
_lock = threading.Lock()
_available_in: dict[int, bool] = {}  # per session (by id): whether `format("kafka")` resolves


def spark_version() -> str:
    import pyspark

    return str(pyspark.__version__)


def _artifact(jar: Path) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`: the name without its version."""
    return re.sub(r"-\d[^-]*(-[^-]+)?\.jar$", "", jar.name) if re.search(r"-\d", jar.name) else jar.stem


@cache
def kafka_source_jars() -> tuple[Path, ...] | None:
    """The data source's jars for the installed Spark, minus what Spark ships; None if they
    cannot be had (the reason is logged once)."""
    version = spark_version()
    try:
        import pyspark

        jars = resolve_classpath(
            POM, f"Spark's Kafka data source (spark-sql-kafka-0-10 {version})", label=f"spark-kafka-{version}",
            properties={"spark.version": version}, scope="runtime",
        )
    except (ReconcilerError, ImportError) as exc:
        say_unavailable(getattr(exc, "message", str(exc)))
        return None
    shipped = {_artifact(jar) for jar in (Path(pyspark.__file__).resolve().parent / "jars").glob("*.jar")}
    return tuple(jar for jar in jars if _artifact(jar) not in shipped)


def say_unavailable(reason: str) -> None:
    """Log, once per reason, that sinks fall back to the confluent-kafka reader."""
    with _lock:
        if reason in _unavailable:
            return
        _unavailable[reason] = reason
    LOG.warning("Spark's Kafka data source is unavailable, sinks read with confluent-kafka instead: %s", reason)


def with_kafka_jars(conf: Mapping[str, str]) -> dict[str, str]:
    """`conf` with the data source's jars added to `spark.jars` (unchanged if unavailable)."""
    jars = kafka_source_jars()
    result = dict(conf)
    if jars:
        listed = [j for j in result.get("spark.jars", "").split(",") if j]
        result["spark.jars"] = ",".join(dict.fromkeys([*listed, *map(str, jars)]))
    return result


def available(session: SparkSession) -> bool:
    """Whether `session` resolves `format("kafka")` (asked once per session)."""
    key = id(session)
    with _lock:
        if key in _available_in:
            return _available_in[key]
    try:
        probe = session.read.format(FORMAT).option("kafka.bootstrap.servers", "127.0.0.1:9").option("subscribe", "x")
        _ = probe.load().schema  # resolves the source class; connects to nothing
        found = True
    except Exception as exc:  # AnalysisException (DATA_SOURCE_NOT_FOUND) and its Connect twin
        say_unavailable(f"the Spark session cannot load format('kafka'): {str(exc).splitlines()[0][:300]}")
        found = False
    with _lock:
        _available_in[key] = found
    return found


def client_options(settings: KafkaSettings, consumer_config: Mapping[str, str]) -> dict[str, str]:
    """The Java consumer's settings, as the data source takes them (`kafka.` prefixed)."""
    options = {"kafka.bootstrap.servers": settings.bootstrap_servers, "kafka.isolation.level": "read_committed"}
    for key, value in consumer_config.items():
        if key in ("group.id", "enable.auto.commit", "auto.offset.reset", "key.deserializer", "value.deserializer"):
            continue  # the data source owns these (it refuses some of them outright)
        options[f"kafka.{key}"] = value
    return options


def read_ranges(
    session: SparkSession, settings: KafkaSettings, items: Sequence[OffsetRange], consumer_config: Mapping[str, str]
) -> DataFrame:
    """One DataFrame over every item's range `[start, end)`, read with the consumer settings given."""
    assign: dict[str, list[int]] = {}
    starting: dict[str, dict[str, int]] = {}
    ending: dict[str, dict[str, int]] = {}
    for item in items:
        assign.setdefault(item.topic, []).append(item.partition)
        starting.setdefault(item.topic, {})[str(item.partition)] = item.start
        ending.setdefault(item.topic, {})[str(item.partition)] = item.end
    reader = session.read.format(FORMAT)
    for key, value in client_options(settings, consumer_config).items():
        reader = reader.option(key, value)
    return (
        reader.option("assign", json.dumps(assign))
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .option("includeHeaders", "true")
        # Offsets with no record (transaction markers, aborted or compacted records) are gaps
        # in a read_committed range, not lost data.
        .option("failOnDataLoss", "false")
        .load()
    )
