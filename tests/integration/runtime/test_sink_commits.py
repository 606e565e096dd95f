"""Sink commits as Java's `WorkerSinkTask` makes them: on a transactional topic, and for a
task's partitions that held nothing to read.

A transactional topic holds a commit marker after each transaction, so its end offset lies past
the last record. Java commits the last delivered record's offset + 1; so do we, and a user who
rewinds the group "by 10" gets 10 records back. The Java worker's own FileStreamSinkConnector,
run on the same topic, commits the same offset.

A task that commits any partition commits every partition it holds, the ones it read nothing
from at their log start; Java's worker, on the same topic, lists the same offsets.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any


from reconciler.devtools.connect import RunningConnect
from reconciler.kafka.io.admin import create_topic, ensure_topics
from reconciler.kafka.io.consume import end_offsets
from reconciler.kafka.io.groups import sink_group_commits, sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.batch.tasks import TaskWork
from reconciler.kafka.io.groups import commit_offsets as commit_group_offsets
from reconciler.runtime.sink.ranges import SCANNED_PREFIX

from txn_support import committed_visible

TRANSACTIONS, PER_TRANSACTION = 3, 10  # offsets 0-9, marker 10, 11-20, marker 21, 22-31, marker 32


def produce_in_transactions(settings: KafkaSettings, topic: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    admin.create_topics([NewTopic(topic, 1)])[topic].result(timeout=settings.timeout_s)
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "transactional.id": f"{topic}-writer"})
    producer.init_transactions(settings.timeout_s)
    for t in range(TRANSACTIONS):
        producer.begin_transaction()
        for i in range(PER_TRANSACTION):
            producer.produce(topic, b"line %d" % (t * PER_TRANSACTION + i), b"%d" % i)
        producer.commit_transaction(settings.timeout_s)
    committed_visible(settings, topic)


def produce_aborted(settings: KafkaSettings, topic: str, count: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": settings.bootstrap_servers, "transactional.id": f"{topic}-aborter"})
    producer.init_transactions(settings.timeout_s)
    producer.begin_transaction()
    for i in range(count):
        producer.produce(topic, b"aborted %d" % i)
    producer.flush(settings.timeout_s)  # in the log before the abort (else librdkafka drops them)
    producer.abort_transaction(settings.timeout_s)
    committed_visible(settings, topic)


def keeping_sink(name: str, topic: str) -> list[TaskWork]:
    """`unpackaged:PickySink` keeps nothing and calls every record safe: the commit is ours."""
    props: dict[str, str | None] = {"name": name, "connector.class": "unpackaged:PickySink", "tasks.max": "1", "topics": topic}
    task = {k: v for k, v in props.items() if v is not None} | {"task.index": "0"}
    return [
        TaskWork(
            connector=name,
            task_id=0,
            connector_class="unpackaged:PickySink",
            kind="sink",
            connector_config=props,
            task_config=task,
            task_count=1,
        )
    ]


def test_a_sink_commits_the_last_delivered_record_plus_one(
    kafka_settings: KafkaSettings, reader_executor: SparkExecutor
) -> None:
    spark_executor = reader_executor
    ensure_topics(kafka_settings)
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    produce_in_transactions(kafka_settings, topic)
    end = end_offsets(kafka_settings, topic)[0]
    last_record = end - 2  # the last offset is the last transaction's commit marker
    name = f"txn-sink-{uuid.uuid4().hex[:6]}"
    group = f"connect-{name}"
    works = keeping_sink(name, topic)

    [first] = spark_executor.run_batch(works)
    assert (first.records, first.error) == (TRANSACTIONS * PER_TRANSACTION, None), first.error
    # Java's offset, with how far the range was read (so the next batch skips the marker)
    assert sink_group_commits(kafka_settings, group) == {(topic, 0): (last_record + 1, f"{SCANNED_PREFIX}{end}")}

    [again] = spark_executor.run_batch(works)  # nothing new: nothing read, the commit unchanged
    assert again.records == 0
    assert sink_group_offsets(kafka_settings, group) == {(topic, 0): last_record + 1}

    # A user rewinds "by 10" (Java's PATCH commits the offset with no metadata): 10 records back.
    commit_group_offsets(kafka_settings, group, {(topic, 0): last_record + 1 - 10})
    [rewound] = spark_executor.run_batch(works)
    assert rewound.records == 10
    assert sink_group_offsets(kafka_settings, group) == {(topic, 0): last_record + 1}

    # Only an aborted transaction follows: nothing is delivered, the offset stays, and the
    # commit says the range was read to its new end, so no later batch schedules it again.
    produce_aborted(kafka_settings, topic, 5)
    new_end = end_offsets(kafka_settings, topic)[0]
    assert new_end == end + 6
    [skipped] = spark_executor.run_batch(works)
    assert (skipped.records, skipped.error) == (0, None), skipped.error
    assert sink_group_commits(kafka_settings, group) == {(topic, 0): (last_record + 1, f"{SCANNED_PREFIX}{new_end}")}


def start_java_file_sink(java_connect: RunningConnect, topic: str, out: Path) -> str:
    """Java's FileStreamSinkConnector on `topic`, one task; its name."""
    name = f"java-{topic}"
    config = {
        "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
        "tasks.max": "1",
        "topics": topic,
        "file": str(out),
    }
    status, _ = java_connect.rest("PUT", f"/connectors/{name}/config", config)
    assert status == 201
    return name


def java_sink_offsets(
    java_connect: RunningConnect, name: str, expected: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    """Java's `GET /connectors/{name}/offsets` as {(topic, partition): offset}, once it says
    `expected` (Java commits every `offset.flush.interval.ms`) or after 30 s; then deleted."""
    deadline = time.monotonic() + 30
    while True:
        _, body = java_connect.rest("GET", f"/connectors/{name}/offsets")
        java = {
            (o["partition"]["kafka_topic"], o["partition"]["kafka_partition"]): o["offset"]["kafka_offset"]
            for o in body["offsets"]
        }
        if java == expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    status, _ = java_connect.rest("DELETE", f"/connectors/{name}")
    assert status == 204
    return java


def test_java_commits_the_same_offset_on_a_transactional_topic(
    kafka: Any, java_connect: RunningConnect, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    """Java's FileStreamSinkConnector and our sink read the same transactional topic: the
    offsets Java's REST API reports for each are the same."""
    settings = kafka.settings(java_connect.group_id)
    topic = f"txn-java-{uuid.uuid4().hex[:8]}"
    produce_in_transactions(settings, topic)
    theirs = start_java_file_sink(java_connect, topic, tmp_path / "out.txt")
    ours = f"ours-{topic}"
    [outcome] = spark_executor.run_batch(keeping_sink(ours, topic))
    assert outcome.error is None
    expected = {(topic, 0): TRANSACTIONS * (PER_TRANSACTION + 1) - 1}
    assert java_sink_offsets(java_connect, theirs, expected) == expected
    assert sink_group_offsets(settings, f"connect-{ours}") == expected


def test_java_and_we_commit_each_partition_of_a_task_that_commits_one(
    kafka: Any, java_connect: RunningConnect, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    """Records in partition 0 of three: Java's task commits all three partitions it holds (each
    at its position, the empty ones at their log start), so its GET offsets lists three; our
    group lists the same three, at the same offsets."""
    from confluent_kafka import Producer

    settings = kafka.settings(java_connect.group_id)
    topic = f"three-{uuid.uuid4().hex[:8]}"
    create_topic(settings, topic, 3)
    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    for i in range(5):
        producer.produce(topic, b"line %d" % i, partition=0)
    assert producer.flush(settings.timeout_s) == 0
    theirs = start_java_file_sink(java_connect, topic, tmp_path / "out.txt")
    ours = f"ours-{topic}"
    [outcome] = spark_executor.run_batch(keeping_sink(ours, topic))
    assert (outcome.records, outcome.error) == (5, None), outcome.error
    expected = {(topic, 0): 5, (topic, 1): 0, (topic, 2): 0}
    assert java_sink_offsets(java_connect, theirs, expected) == expected
    assert sink_group_offsets(settings, f"connect-{ours}") == expected
    [again] = spark_executor.run_batch(keeping_sink(ours, topic))  # nothing new: nothing changes
    assert (again.records, again.error) == (0, None)
    assert sink_group_offsets(settings, f"connect-{ours}") == expected
