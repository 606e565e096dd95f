"""A sink whose committed offset the log does not hold, or whose group never committed one, on
the real broker and shared SparkSession.

Connect writes a KIP-875 alter as given (an offset past the partition's end included); the
task's consumer then meets OFFSET_OUT_OF_RANGE and applies `auto.offset.reset`, `earliest` for
sinks unless `consumer.override.auto.offset.reset` says otherwise (docs/runtime.md#offset-ranges).
So the sink reads again from the log start, its files drop what they already hold, and every
record ends up archived once; nothing is skipped. With no committed offset the consumer resets
by the same policy: `latest` starts at the end, and that start is committed so the next batch
(a fresh consumer) does not reset again to a later end.
"""

from __future__ import annotations

import logging
import uuid
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from reconciler.kafka.io import admin
from reconciler.kafka.io.groups import commit_offsets, sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.batch.tasks import TaskWork
from offsets_support import delete_records

pytestmark = pytest.mark.spark


def produce(settings: KafkaSettings, topic: str, ids: range) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": settings.bootstrap_servers})
    for i in ids:
        producer.produce(topic, b"%d" % i, b"%d" % i, partition=0)
    assert producer.flush(settings.timeout_s) == 0


def archiving(name: str, topic: str, path: Path, **extra: str) -> list[TaskWork]:
    props: dict[str, str | None] = {
        "name": name, "connector.class": "parquet-sink", "tasks.max": "1", "topics": topic, "path": str(path), **extra
    }
    task = {k: v for k, v in props.items() if v is not None} | {"task.index": "0"}
    return [
        TaskWork(
            connector=name,
            task_id=0,
            connector_class="parquet-sink",
            kind="sink",
            connector_config=props,
            task_config=task,
            task_count=1,
        )
    ]


def archived(path: Path) -> Counter[int]:
    """Each record's id, as often as the dataset holds it (temporary files excluded)."""
    files = [f for f in path.rglob("*.parquet") if not any(p[0] in "._" for p in f.relative_to(path).parts)]
    return Counter(int(key) for f in files for key in pq.read_table(f, columns=["key"]).column("key").to_pylist())


def test_a_commit_past_the_end_reads_again_from_the_log_start_and_skips_nothing(
    kafka_settings: KafkaSettings, reader_executor: SparkExecutor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    topic, name = f"rewound-{uuid.uuid4().hex[:8]}", f"rewound-sink-{uuid.uuid4().hex[:6]}"
    group = f"connect-{name}"
    admin.create_topic(kafka_settings, topic, 1)
    produce(kafka_settings, topic, range(30))
    works = archiving(name, topic, tmp_path)
    [first] = reader_executor.run_batch(works)
    assert (first.records, first.error) == (30, None), first.error

    commit_offsets(kafka_settings, group, {(topic, 0): 5000})  # what the alter writes, Java's too
    produce(kafka_settings, topic, range(30, 50))
    with caplog.at_level(logging.WARNING, logger="reconciler.runtime.sink.job"):
        [second] = reader_executor.run_batch(works)

    assert (second.records, second.error) == (20, None), second.error  # the files held 0..29
    assert archived(tmp_path) == Counter(range(50))
    assert sink_group_offsets(kafka_settings, group) == {(topic, 0): 50}
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"sink connector {name}: committed offset 5000 of {topic}[0] is out of range (the partition holds "
        "offsets 0 to 50); auto.offset.reset is earliest: reading from offset 0"
    ]


@pytest.mark.parametrize("committed", [5000, 3])
def test_with_reset_policy_none_the_task_fails_naming_partition_offset_and_range(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path, committed: int
) -> None:
    """Past the end, or below a log start that DeleteRecords moved to 10: Java's consumer raises."""

    topic, name = f"strict-{uuid.uuid4().hex[:8]}", f"strict-sink-{uuid.uuid4().hex[:6]}"
    admin.create_topic(kafka_settings, topic, 1)
    produce(kafka_settings, topic, range(20))
    delete_records(kafka_settings, topic, 0, 10)
    commit_offsets(kafka_settings, f"connect-{name}", {(topic, 0): committed})

    works = archiving(name, topic, tmp_path, **{"consumer.override.auto.offset.reset": "none"})
    [outcome] = spark_executor.run_batch(works)

    assert outcome.records == 0
    assert outcome.error == (
        f"reconciler.runtime.sink.reset.OffsetOutOfRange: committed offset {committed} of {topic}[0] is out of "
        "range: the partition holds offsets 10 to 20 (log start to log end), and auto.offset.reset is none"
    )
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, 0): committed}
    assert archived(tmp_path) == Counter()


def test_with_reset_policy_latest_the_reset_end_is_committed_and_later_records_are_read(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    """No range reads the partition after a reset to the end: its position is committed, so the
    next batch reads what came since rather than reset again to a later end."""
    topic, name = f"latest-{uuid.uuid4().hex[:8]}", f"latest-sink-{uuid.uuid4().hex[:6]}"
    admin.create_topic(kafka_settings, topic, 1)
    produce(kafka_settings, topic, range(10))
    commit_offsets(kafka_settings, f"connect-{name}", {(topic, 0): 5000})
    works = archiving(name, topic, tmp_path, **{"consumer.override.auto.offset.reset": "latest"})

    [reset] = spark_executor.run_batch(works)
    assert (reset.records, reset.error) == (0, None), reset.error
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, 0): 10}
    produce(kafka_settings, topic, range(10, 15))
    [later] = spark_executor.run_batch(works)
    assert (later.records, later.error) == (5, None), later.error
    assert archived(tmp_path) == Counter(range(10, 15))


@pytest.mark.parametrize("before", [10, 0])
def test_never_committed_with_latest_the_start_is_the_end_and_it_is_committed(
    kafka_settings: KafkaSettings,
    reader_executor: SparkExecutor,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    before: int,
) -> None:
    """What was written before the first batch is not read; what came after is, by the next batch."""
    topic, name = f"fresh-{uuid.uuid4().hex[:8]}", f"fresh-sink-{uuid.uuid4().hex[:6]}"
    admin.create_topic(kafka_settings, topic, 1)
    produce(kafka_settings, topic, range(before))
    works = archiving(name, topic, tmp_path, **{"consumer.override.auto.offset.reset": "latest"})

    with caplog.at_level(logging.INFO, logger="reconciler.runtime.sink.job"):
        [first] = reader_executor.run_batch(works)
    assert (first.records, first.error) == (0, None), first.error
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, 0): before}
    assert [(r.levelno, r.getMessage()) for r in caplog.records if r.levelno >= logging.INFO] == [
        (
            logging.INFO,
            f"sink connector {name}: no offset was ever committed for {topic}[0] (the partition holds "
            f"offsets 0 to {before}); auto.offset.reset is latest: reading from offset {before}",
        )
    ]
    produce(kafka_settings, topic, range(before, before + 5))
    [second] = reader_executor.run_batch(works)
    assert (second.records, second.error) == (5, None), second.error
    assert archived(tmp_path) == Counter(range(before, before + 5))
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {(topic, 0): before + 5}


def test_never_committed_with_reset_policy_none_the_task_fails_naming_the_partition(
    kafka_settings: KafkaSettings, reader_executor: SparkExecutor, tmp_path: Path
) -> None:
    """Java's consumer raises NoOffsetForPartitionException ("Undefined offset with no reset policy")."""
    topic, name = f"unset-{uuid.uuid4().hex[:8]}", f"unset-sink-{uuid.uuid4().hex[:6]}"
    admin.create_topic(kafka_settings, topic, 1)
    produce(kafka_settings, topic, range(10))
    works = archiving(name, topic, tmp_path, **{"consumer.override.auto.offset.reset": "none"})

    [outcome] = reader_executor.run_batch(works)

    assert outcome.records == 0
    assert outcome.error == (
        "reconciler.runtime.sink.reset.NoOffsetForPartition: undefined offset with no reset policy for partition "
        f"{topic}[0]: the group never committed an offset for it, and auto.offset.reset is none"
    )
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == {}
    assert archived(tmp_path) == Counter()
