"""The Spark executor against the real broker and the shared local SparkSession.

Sources: exactly `count` records, unique ids, Connect-format offsets records, resumed without
duplicates; zombie fencing by transactional id. Sinks: exactly the topic's records in files
named by offset range, group offsets committed, nothing written twice. Isolation: a failing
task fails alone, with its traceback.
"""

from __future__ import annotations

import logging
import uuid

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from reconciler.kafka.io import admin
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.range_files import held_ranges, partition_dir
from reconciler.connectors.storage import open_store
from reconciler.kafka.io.admin import ensure_topics
from reconciler.kafka.io.consume import end_offsets, read_to_end
from reconciler.kafka.formats.partitioner import partition_for
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.batch.tasks import TaskWork
from reconciler.runtime.source.committed import CommittedOffsets
from reconciler.kafka.io.produce import task_transactional_id as transactional_id
from run_support import produce_ids

pytestmark = pytest.mark.spark


# --- helpers --------------------------------------------------------------------------------

# One broker serves the whole test session: topics and sink groups (`connect-<name>`) get a
# per-run suffix so no other test module's data can leak into these.
RUN = uuid.uuid4().hex[:8]


def n(name: str) -> str:
    return f"{name}-{RUN}"


def create_topic(settings: KafkaSettings, topic: str, partitions: int = 2) -> None:
    admin.create_topic(settings, topic, partitions)


def datagen_works(name: str, topic: str, count: int, tasks: int = 2, **extra: str) -> list[TaskWork]:
    config: dict[str, str | None] = {
        "name": name, "connector.class": "datagen", "tasks.max": str(tasks),
        "topic": topic, "count": str(count), "shards": "4", "record.bytes": "60", **extra,
    }
    task_configs = DatagenConnector().task_configs(config, tasks)
    return [
        TaskWork(
            connector=name,
            task_id=i,
            connector_class="datagen",
            kind="source",
            connector_config=config,
            task_config=tc,
            task_count=len(task_configs),
        )
        for i, tc in enumerate(task_configs)
    ]


def sink_works(name: str, connector_class: str, tasks: int, **config: str) -> list[TaskWork]:
    props: dict[str, str | None] = {"name": name, "connector.class": connector_class, "tasks.max": str(tasks), **config}
    task_configs = [{k: v for k, v in props.items() if v is not None} | {"task.index": str(i)} for i in range(tasks)]
    return [
        TaskWork(
            connector=name,
            task_id=i,
            connector_class=connector_class,
            kind="sink",
            connector_config=props,
            task_config=tc,
            task_count=tasks,
        )
        for i, tc in enumerate(task_configs)
    ]


def topic_ids(settings: KafkaSettings, topic: str) -> Counter[int]:
    return Counter(int(m.key or b"-1") for m in read_to_end(settings, topic))


def dataset_rows(root: Path) -> list[dict[str, Any]]:
    """Every row readers see: files under topic=/partition=, skipping `.`/`_` names."""
    rows = []
    for file in sorted(root.rglob("*.parquet")):
        if any(part[0] in "._" for part in file.relative_to(root).parts):
            continue
        partition = int(file.parent.name.split("=")[1])
        for row in pq.read_table(file).to_pylist():
            rows.append({"partition": partition, **row})
    return rows


def offsets_records(settings: KafkaSettings, connector: str) -> list[tuple[bytes, bytes | None, int]]:
    prefix = json.dumps([connector]).encode()[:-1] + b","
    return [
        (m.key or b"", m.value, m.partition)
        for m in read_to_end(settings, settings.topics.offsets)
        if (m.key or b"").startswith(prefix)
    ]


# --- sources --------------------------------------------------------------------------------


def test_datagen_produces_exactly_count_records_with_connect_offsets_and_resumes(
    kafka_settings: KafkaSettings, spark_session: Any
) -> None:
    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("gen-data"))
    # 1,000 records per task per batch: 5,000 ids over 2 tasks take three batches.
    executor = SparkExecutor(kafka_settings, source_batch_records=1000)
    works = datagen_works("gen", n("gen-data"), count=5000)
    try:
        moved = [sum(o.records for o in executor.run_batch(works)) for _ in range(4)]
    finally:
        executor.close()

    assert moved == [2000, 2000, 1000, 0]
    ids = topic_ids(kafka_settings, n("gen-data"))
    assert set(ids) == set(range(5000)) and max(ids.values()) == 1  # no loss, no duplicate
    latest = {key: value for key, value, _ in offsets_records(kafka_settings, "gen")}
    assert latest == {f'["gen",{{"shard":{s}}}]'.encode(): b'{"position":1250}' for s in range(4)}
    partitions = kafka_settings.topics.offsets_partitions
    for key, _, partition in offsets_records(kafka_settings, "gen"):
        assert partition == partition_for(key, partitions)  # where a Java worker would look


def test_source_offsets_written_by_connect_are_resumed_and_rewritten_under_both_keys(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    """A Connect worker's offsets under another key spelling are honoured; the new offset goes
    under Java's own bytes for the partition (what its REST API reads) and under that spelling
    (what the client that wrote it reads)."""
    from confluent_kafka import Producer

    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("conn-data"))
    java_key = b'["gen", {"shard": 0}]'  # same partition, different bytes than ours
    producer = Producer({"bootstrap.servers": kafka_settings.bootstrap_servers, "partitioner": "murmur2_random"})
    producer.produce(kafka_settings.topics.offsets, b'{"position":200}', java_key)
    assert producer.flush(kafka_settings.timeout_s) == 0

    outcomes = spark_executor.run_batch(datagen_works("gen", n("conn-data"), count=1000, tasks=1))

    assert [o.error for o in outcomes] == [None]
    ids = topic_ids(kafka_settings, n("conn-data"))
    shard0 = {i for i in range(1000) if i % 4 == 0}
    assert set(ids) == set(range(1000)) - {i for i in shard0 if i < 800}  # shard 0 resumed at 200
    keys = [key for key, _, _ in offsets_records(kafka_settings, "gen")]
    assert keys.count(b'["gen",{"shard":0}]') == 1 and keys.count(java_key) == 2


def test_source_task_fences_a_zombie_with_its_transactional_id(
    kafka: Any, kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    """A leftover producer of task gen-0 with an open transaction cannot commit after the task ran."""
    from confluent_kafka import KafkaException, Producer

    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("fence-data"))
    zombie = Producer(
        {
            "bootstrap.servers": kafka_settings.bootstrap_servers,
            "transactional.id": transactional_id(kafka_settings.group_id, "gen", 0),
        }
    )
    zombie.init_transactions(kafka_settings.timeout_s)
    zombie.begin_transaction()
    zombie.produce("fence-data", b"zombie", b"-1")
    zombie.flush(kafka_settings.timeout_s)

    outcomes = spark_executor.run_batch(datagen_works("gen", n("fence-data"), count=100, tasks=1))

    assert [(o.records, o.error) for o in outcomes] == [(100, None)]
    with pytest.raises(KafkaException) as raised:
        zombie.commit_transaction(5)
    error = raised.value.args[0]
    # Kafka answers PRODUCER_FENCED, a fatal error for the zombie.
    assert error.fatal() or "fenced" in error.str().lower(), error.str()
    assert -1 not in topic_ids(kafka_settings, n("fence-data"))  # the zombie's record was aborted


# --- sinks ----------------------------------------------------------------------------------


def test_parquet_sink_writes_each_record_once_in_offset_range_files_and_commits_after(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    create_topic(kafka_settings, n("orders"), partitions=3)
    produce_ids(kafka_settings, n("orders"), range(3000))
    works = sink_works(n("archive"), "parquet-sink", tasks=2, topics=n("orders"), path=str(tmp_path))

    first = spark_executor.run_batch(works)
    files_after_first = sorted(p.name for p in tmp_path.rglob("*.parquet"))
    second = spark_executor.run_batch(works)  # nothing new: nothing read, nothing written
    produce_ids(kafka_settings, n("orders"), range(3000, 3500))
    third = spark_executor.run_batch(works)

    assert [o.error for o in first + second + third] == [None] * 6
    assert sum(o.records for o in first) == 3000 and sum(o.records for o in second) == 0
    assert sum(o.records for o in third) == 500
    assert len(files_after_first) == 3
    rows = dataset_rows(tmp_path)
    assert Counter(int(r["key"]) for r in rows) == Counter(range(3500))
    ends = {(n("orders"), p): end for p, end in end_offsets(kafka_settings, n("orders")).items()}
    for (topic, partition), end in ends.items():
        ranges = held_ranges(open_store(str(tmp_path), {}), partition_dir(topic, partition), topic, partition, (".parquet",))
        assert ranges[0][0] == 0 and ranges[-1][1] == end - 1  # contiguous files cover [0, end)
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:], strict=False))
        assert sorted(r["offset"] for r in rows if r["partition"] == partition) == list(range(end))
    assert sink_group_offsets(kafka_settings, "connect-" + n("archive")) == ends


def test_sink_partitions_are_dealt_round_robin_and_a_missing_task_keeps_its_share(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    """Task 1 is not run (say it is FAILED): its partitions move for nobody."""
    create_topic(kafka_settings, n("clicks"), partitions=4)
    produce_ids(kafka_settings, n("clicks"), range(400))
    works = sink_works(n("clicks-archive"), "parquet-sink", tasks=2, topics=n("clicks"), path=str(tmp_path))

    outcomes = spark_executor.run_batch(works[:1])

    assert [o.task_id for o in outcomes] == [0] and outcomes[0].error is None
    partitions = {r["partition"] for r in dataset_rows(tmp_path)}
    assert partitions == {0, 2}  # sorted [(clicks,0)…(clicks,3)] dealt to tasks 0,1,0,1
    assert set(sink_group_offsets(kafka_settings, "connect-" + n("clicks-archive"))) == {
        (n("clicks"), 0),
        (n("clicks"), 2),
    }


def test_a_refused_commit_fails_no_task_and_the_next_batch_commits(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Java's WorkerSinkTask logs a commit the broker refuses and goes on; its next commit
    carries the offsets. Here a member holds the group (Kafka answers UNKNOWN_MEMBER_ID to a
    commit from outside it): the batch writes its files, its task stays well, nothing is
    committed; once the member leaves, the next batch commits, and no record is held twice."""
    from reconciler.kafka.io.client import new_consumer

    topic, name = n("held"), n("held-archive")
    create_topic(kafka_settings, topic, partitions=2)
    produce_ids(kafka_settings, topic, range(200))
    works = sink_works(name, "parquet-sink", tasks=1, topics=topic, path=str(tmp_path))
    member = new_consumer(
        kafka_settings, None, **{"group.id": f"connect-{name}", "session.timeout.ms": 6000, "enable.auto.commit": False}
    )
    try:
        assigned: list[object] = []
        member.subscribe([topic], on_assign=lambda c, ps: assigned.extend(ps))
        while not assigned:
            member.poll(0.1)
        with caplog.at_level(logging.ERROR, logger="reconciler.runtime.sink.job"):
            held = spark_executor.run_batch(works)
    finally:
        member.close()
    left_uncommitted = sink_group_offsets(kafka_settings, f"connect-{name}")
    produce_ids(kafka_settings, topic, range(200, 250))
    after = spark_executor.run_batch(works)

    assert [(o.records, o.error, o.offsets_committed) for o in held] == [(200, None, False)]
    assert f"sink {name}: committing its offsets failed, the next batch reads those records again" in caplog.text
    assert left_uncommitted == {}
    assert [(o.error, o.offsets_committed) for o in after] == [(None, True)]
    assert Counter(int(r["key"]) for r in dataset_rows(tmp_path)) == Counter(range(250))
    ends = {(topic, p): end for p, end in end_offsets(kafka_settings, topic).items()}
    assert sink_group_offsets(kafka_settings, f"connect-{name}") == ends


# --- isolation ------------------------------------------------------------------------------


def test_a_failing_task_fails_alone_with_its_traceback(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("mixed"), partitions=2)
    produce_ids(kafka_settings, n("mixed"), range(200))
    missing = tmp_path / "no-such-dir"
    broken_source = TaskWork(
        connector="files",
        task_id=0,
        connector_class="file-source",
        kind="source",
        connector_config={
            "name": "files",
            "connector.class": "file-source",
            "topic": n("mixed"),
            "path": str(missing),
            "format": "jsonl",
        },
        task_config={"topic": n("mixed"), "path": str(missing), "format": "jsonl"},
    )
    picky = sink_works(n("picky"), "unpackaged:PickySink", tasks=2, topics=n("mixed"), **{"fail.tasks": "1"})
    create_topic(kafka_settings, n("mixed-gen"), partitions=1)
    works = [broken_source, *picky, *datagen_works("gen", n("mixed-gen"), count=50, tasks=1)]

    outcomes = spark_executor.run_batch(works)

    assert [(o.connector, o.task_id) for o in outcomes] == [(w.connector, w.task_id) for w in works]
    by_task = {(o.connector, o.task_id): o for o in outcomes}
    source_error = by_task[("files", 0)].error or ""
    assert "Traceback (most recent call last)" in source_error and "does not exist" in source_error
    picky_error = by_task[(n("picky"), 1)].error or ""
    assert "picky sink task 1 fails on purpose" in picky_error
    assert by_task[(n("picky"), 0)].error is None and by_task[(n("picky"), 0)].records > 0
    assert by_task[("gen", 0)].error is None and by_task[("gen", 0)].records == 50
    # The healthy task's partition is committed; the failed task's is not.
    assert set(sink_group_offsets(kafka_settings, "connect-" + n("picky"))) == {(n("mixed"), 0)}


def test_no_work_never_starts_spark(kafka_settings: KafkaSettings) -> None:
    executor = SparkExecutor(kafka_settings, master="local[1]")
    assert executor.run_batch([]) == []
    assert not executor.started
    executor.close()


def test_unknown_connector_class_fails_its_tasks_only(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    ensure_topics(kafka_settings)
    bogus = TaskWork(
        connector="bogus",
        task_id=0,
        connector_class="no.such.module:Nope",
        kind="sink",
        connector_config={"topics": "x"},
        task_config={},
    )
    outcomes = spark_executor.run_batch([bogus])
    assert outcomes[0].records == 0 and "cannot import module 'no.such.module'" in (outcomes[0].error or "")


def test_source_tasks_wait_while_an_open_transaction_hides_committed_offsets(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    """A killed task of a connector not in the batch left a transaction open in the offsets
    topic: offsets after it are invisible, so sources skip the batch (no error) until it ends."""
    from confluent_kafka import Producer

    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("held-data"))
    zombie = Producer(
        {
            "bootstrap.servers": kafka_settings.bootstrap_servers,
            "transactional.id": transactional_id(kafka_settings.group_id, "paused-connector", 0),
        }
    )
    zombie.init_transactions(kafka_settings.timeout_s)
    zombie.begin_transaction()
    zombie.produce(kafka_settings.topics.offsets, b'{"position":1}', b'["paused-connector",{"shard":0}]')
    zombie.flush(kafka_settings.timeout_s)
    works = datagen_works("gen", n("held-data"), count=100, tasks=1)

    waiting = spark_executor.run_batch(works)
    zombie.abort_transaction(kafka_settings.timeout_s)
    resumed = spark_executor.run_batch(works)

    assert [(o.records, o.error) for o in waiting] == [(0, None)]
    assert [(o.records, o.error) for o in resumed] == [(100, None)]
    assert set(topic_ids(kafka_settings, n("held-data"))) == set(range(100))


def test_an_open_transaction_in_one_connectors_own_offsets_topic_holds_back_only_that_connector(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor
) -> None:
    """Each Java task reads its own offsets: a transaction left open in one connector's own
    offsets topic (`offsets.storage.topic`) keeps that connector's tasks waiting, not the others'."""
    from confluent_kafka import Producer

    from reconciler.kafka.io.admin import ensure_offsets_topic

    ensure_topics(kafka_settings)
    own = n("own-offsets")
    ensure_offsets_topic(kafka_settings, own)
    create_topic(kafka_settings, n("own-data"))
    create_topic(kafka_settings, n("free-data"))
    zombie = Producer(
        {
            "bootstrap.servers": kafka_settings.bootstrap_servers,
            "transactional.id": transactional_id(kafka_settings.group_id, "other", 0),
        }
    )
    zombie.init_transactions(kafka_settings.timeout_s)
    zombie.begin_transaction()
    zombie.produce(own, b'{"position":1}', b'["other",{"shard":0}]')
    zombie.flush(kafka_settings.timeout_s)
    held = datagen_works("held", n("own-data"), count=100, tasks=1, **{"offsets.storage.topic": own})
    free = datagen_works("free", n("free-data"), count=100, tasks=1)

    first = spark_executor.run_batch(held + free)
    zombie.abort_transaction(kafka_settings.timeout_s)
    second = spark_executor.run_batch(held + free)

    assert [(o.connector, o.records, o.error) for o in first] == [("held", 0, None), ("free", 100, None)]
    assert first[0].waited is not None and f"offsets topic {own} at " in first[0].waited and first[1].waited is None
    assert [(o.connector, o.records, o.error) for o in second] == [("held", 100, None), ("free", 0, None)]
    assert set(topic_ids(kafka_settings, n("own-data"))) == set(range(100))


def test_a_full_producer_queue_loses_and_repeats_nothing(
    kafka_settings: KafkaSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The produce loop resumes at the record that did not fit (run in-process, tiny queue)."""
    from reconciler.runtime.source import task as source_task

    ensure_topics(kafka_settings)
    create_topic(kafka_settings, n("queue-data"))
    monkeypatch.setitem(source_task.PRODUCER_TUNING, "queue.buffering.max.messages", 100)
    monkeypatch.setattr(source_task, "PRODUCE_CHUNK", 64)
    work = datagen_works("gen", n("queue-data"), count=3000, tasks=1)[0]
    item = source_task.SourceTaskWork(
        settings=kafka_settings,
        connector="gen",
        connector_class="datagen",
        task_id=0,
        task_config=work.task_config,
        committed=CommittedOffsets({}, {}),
    )

    result = source_task.source_partition(item)

    assert (result.records, result.error) == (3000, None)
    assert topic_ids(kafka_settings, n("queue-data")) == Counter(range(3000))
