"""Both ways a sink reads Kafka, against the real broker and the shared local SparkSession.

`spark-kafka` is Spark's Kafka data source (the JVM reads, the task gets Arrow batches);
`confluent-kafka` is the fallback that reads in the Python worker. Either way a task gets
batches of `sink_schema()` with Connect's fields (headers included), exactly the committed
records of `[committed, end)` under read_committed (an aborted transaction's records never),
and the group's commit is the last delivered record + 1.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer

from reconciler.connectors.api import sink_schema
from reconciler.kafka.io import admin
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.batch.tasks import TaskWork

from recording import recorded  # tests/integration/plugins, on sys.path (conftest)
from txn_support import committed_visible

pytestmark = pytest.mark.spark

BASE_MS = 1_700_000_000_000
TEST_MASTER = "local[2]"  # the shared session's (tests/integration/conftest.py)


def sink_works(name: str, topic: str, path: Path) -> list[TaskWork]:
    config: dict[str, str | None] = {
        "name": name, "connector.class": "recording:RecordingSink", "tasks.max": "2", "topics": topic,
        "path": str(path),
    }
    task_configs = [{k: v for k, v in config.items() if v is not None} | {"task.index": str(i)} for i in range(2)]
    return [
        TaskWork(
            connector=name,
            task_id=i,
            connector_class="recording:RecordingSink",
            kind="sink",
            connector_config=config,
            task_config=tc,
            task_count=2,
        )
        for i, tc in enumerate(task_configs)
    ]


def produce(
    settings: KafkaSettings, topic: str, ids: range, *, abort: bool = False, decide: bool = True, wait: bool = True
) -> Producer:
    """One transaction of records: key = value = id, partition = id % 2, timestamp BASE + id,
    headers on even ids (two, one repeated key), none on odd ones. `decide`: committed (or
    aborted), else left open (the records in the log); `wait`: return only once read_committed
    readers see every transaction on the topic decided (`committed_visible`)."""
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "transactional.id": f"t-{uuid.uuid4()}"})
    producer.init_transactions(settings.timeout_s)
    producer.begin_transaction()
    for i in ids:
        headers = [("h", b"%d" % i), ("h", None)] if i % 2 == 0 else None
        key = None if i % 5 == 0 else b"%d" % i
        producer.produce(topic, b"%d" % i, key, partition=i % 2, timestamp=BASE_MS + i, headers=headers)
    producer.flush(settings.timeout_s)  # in the log before an abort (else librdkafka purges them)
    if decide:
        (producer.abort_transaction if abort else producer.commit_transaction)(settings.timeout_s)
    if wait:
        committed_visible(settings, topic)
    return producer


def test_the_test_session_has_sparks_kafka_data_source(spark_session: object) -> None:
    import pyspark

    from reconciler.runtime.spark.data_source import available, kafka_source_jars

    jars = kafka_source_jars()
    assert jars is not None and f"spark-sql-kafka-0-10_2.13-{pyspark.__version__}.jar" in {j.name for j in jars}
    assert available(spark_session)  # type: ignore[arg-type]


def test_a_sink_gets_exactly_the_committed_records_with_connects_fields(
    reader_executor: SparkExecutor, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    topic, name = f"readers-{uuid.uuid4().hex[:8]}", f"rec-{uuid.uuid4().hex[:8]}"
    admin.create_topic(kafka_settings, topic, 2)
    produce(kafka_settings, topic, range(0, 20))
    produce(kafka_settings, topic, range(20, 30), abort=True)
    produce(kafka_settings, topic, range(30, 40))
    works = sink_works(name, topic, tmp_path / "out")

    first = reader_executor.run_batch(works)
    produce(kafka_settings, topic, range(40, 46))
    second = reader_executor.run_batch(works)

    assert [o.error for o in first + second] == [None] * 4
    assert sum(o.records for o in first) == 30 and sum(o.records for o in second) == 6
    table = recorded(tmp_path / "out")
    assert table.schema == sink_schema()
    ids = [int(v) for v in table.column("value").to_pylist()]
    assert sorted(ids) == [*range(0, 20), *range(30, 46)]  # each once; the aborted ones never
    rows = table.to_pylist()
    for row in rows:
        i = int(row["value"])
        assert row["partition"] == i % 2 and row["timestamp"] == BASE_MS + i
        assert row["key"] == (None if i % 5 == 0 else b"%d" % i)
        assert row["headers"] == (
            [{"key": "h", "value": b"%d" % i}, {"key": "h", "value": None}] if i % 2 == 0 else None
        )
    last = {p: max(r["offset"] for r in rows if r["partition"] == p) for p in (0, 1)}
    # Java's commit: the last delivered record + 1 (the end would lie past the commit marker).
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, p): last[p] + 1 for p in (0, 1)}


def test_a_batch_stops_before_an_undecided_transaction_and_the_next_reads_the_rest(
    reader_executor: SparkExecutor, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    """A transaction whose markers have not landed holds readers back as an open one does (the
    window after commit_transaction returns, made as wide as the test needs): the batch reads
    below it and commits no further than its last record + 1; once it is decided, the next
    batch reads it and what was committed after it."""
    topic, name = f"readers-{uuid.uuid4().hex[:8]}", f"rec-{uuid.uuid4().hex[:8]}"
    admin.create_topic(kafka_settings, topic, 2)
    produce(kafka_settings, topic, range(0, 20))  # per partition: offsets 0-9, marker 10
    held = produce(kafka_settings, topic, range(100, 110), decide=False, wait=False)  # 11-15
    produce(kafka_settings, topic, range(20, 30), wait=False)  # 16-20, marker 21: past the LSO
    works = sink_works(name, topic, tmp_path / "out")

    first = reader_executor.run_batch(works)
    group = sink_group_offsets(kafka_settings, f"connect-{name}")
    held.commit_transaction(kafka_settings.timeout_s)
    committed_visible(kafka_settings, topic)
    second = reader_executor.run_batch(works)

    assert [o.error for o in first + second] == [None] * 4
    assert (sum(o.records for o in first), group) == (20, {(topic, 0): 10, (topic, 1): 10})
    assert sum(o.records for o in second) == 20
    assert sorted(int(v) for v in recorded(tmp_path / "out").column("value").to_pylist()) == [
        *range(30),
        *range(100, 110),
    ]
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, 0): 21, (topic, 1): 21}


def test_spark_kafka_reader_refuses_a_session_without_the_data_source_rather_than_guess(
    kafka_settings: KafkaSettings, spark_session: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reconciler.runtime import executor

    # The executor imports `available` by name: the stand-in goes where it is looked up.
    monkeypatch.setattr(executor, "available", lambda session: False)
    topic = f"readers-{uuid.uuid4().hex[:8]}"
    admin.create_topic(kafka_settings, topic, 2)
    produce(kafka_settings, topic, range(4))
    strict = SparkExecutor(kafka_settings, master=TEST_MASTER, sink_reader="spark-kafka")
    fallback = SparkExecutor(kafka_settings, master=TEST_MASTER, sink_reader="auto")
    refused = strict.run_batch(sink_works("strict", topic, tmp_path / "a"))
    moved = fallback.run_batch(sink_works("fallback", topic, tmp_path / "b"))
    assert all("Kafka data source is not available" in (o.error or "") for o in refused)
    assert [o.error for o in moved] == [None, None] and sum(o.records for o in moved) == 4
