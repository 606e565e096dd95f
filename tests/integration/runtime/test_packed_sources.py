"""Many source connectors' tasks run as the partitions of ONE Spark job (issue 30, item 5), and
one connector's failure stays its own: a task that raises fails its own outcome in the shared
job; a task that kills its Python worker fails the shared job, after which every connector runs
again in a job of its own, fenced and its offsets read anew, so each id lands exactly once."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path

import pytest

from packing_support import WORKER_KILLER
from pyspark.sql import SparkSession
from run_support import FAULTY_SOURCE

from reconciler.connectors.datagen import DatagenConnector
from reconciler.core.kinds import Kind
from reconciler.kafka.io.admin import create_topic, ensure_topics
from reconciler.kafka.io.consume import batches_to_end
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import TaskWork
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.source.committed import CommittedOffsets
from reconciler.runtime.source.task import SourceTaskWork, source_partition

COUNT = 30


def works(name: str, cls: str, topic: str, **extra: str) -> list[TaskWork]:
    config: dict[str, str | None] = {
        "name": name, "connector.class": cls, "tasks.max": "2", "topic": topic, "count": str(COUNT), "shards": "4",
        **extra,
    }
    task_configs = DatagenConnector().task_configs(config, 2)
    return [
        TaskWork(connector=name, task_id=i, connector_class=cls, kind=Kind.SOURCE, connector_config=config,
                 task_config={**tc, **extra}, task_count=len(task_configs))
        for i, tc in enumerate(task_configs)
    ]


def around(settings: KafkaSettings, middle: str, middle_class: str, **extra: str) -> tuple[str, dict[str, str], list[TaskWork]]:
    """Connectors `a` and `c` (datagen) around `middle` (of `middle_class`, with `extra` keys), each
    on a 2-partition topic of its own: (the run's tag, the topics by role, their tasks' works)."""
    ensure_topics(settings)
    tag = uuid.uuid4().hex[:6]
    topics = {role: f"packed-{role}-{tag}" for role in ("a", middle, "c")}
    for topic in topics.values():
        create_topic(settings, topic, 2)
    batch = (
        works(f"a-{tag}", "datagen", topics["a"])
        + works(f"{middle}-{tag}", middle_class, topics[middle], **extra)
        + works(f"c-{tag}", "datagen", topics["c"])
    )
    return tag, topics, batch


def jobs(session: SparkSession) -> set[int]:
    return set(session.sparkContext.statusTracker().getJobIdsForGroup())


def test_sources_share_one_job_and_a_failing_task_fails_alone(
    spark_session: SparkSession, spark_executor: SparkExecutor, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    marker = tmp_path / "broken"
    marker.touch()
    tag, topics, batch = around(kafka_settings, "bad", FAULTY_SOURCE, **{"fail.tasks.if.exists": str(marker)})

    before = jobs(spark_session)
    outcomes = spark_executor.run_batch(batch)
    assert len(jobs(spark_session) - before) == 1, "the three connectors' six tasks ran in more than one job"
    by_task = {(o.connector, o.task_id): o for o in outcomes}
    for role in ("a", "c"):
        assert [(by_task[(f"{role}-{tag}", t)].records, by_task[(f"{role}-{tag}", t)].error) for t in (0, 1)] == [
            (15, None), (15, None)]
    assert all("fails on purpose" in (by_task[(f"bad-{tag}", t)].error or "") for t in (0, 1))
    for role in ("a", "c"):
        keys = [m.key() for b in batches_to_end(kafka_settings, [topics[role]]) for m in b]
        assert sorted(keys) == sorted(b"%d" % i for i in range(COUNT))  # each id once
    assert not [m for b in batches_to_end(kafka_settings, [topics["bad"]]) for m in b]


def test_a_task_that_kills_its_worker_fails_the_shared_job_and_only_its_connector(
    spark_executor: SparkExecutor, kafka_settings: KafkaSettings, caplog: pytest.LogCaptureFixture
) -> None:
    tag, topics, batch = around(kafka_settings, "killer", WORKER_KILLER)

    outcomes = spark_executor.run_batch(batch)
    by_connector: dict[str, list[str | None]] = {}
    for outcome in outcomes:
        by_connector.setdefault(outcome.connector, []).append(outcome.error)
    assert "the shared job of 3 source connector(s) failed" in caplog.text  # then each ran alone
    assert all("Python worker exited" in (error or "") for error in by_connector[f"killer-{tag}"]), by_connector
    assert by_connector[f"a-{tag}"] == [None, None] and by_connector[f"c-{tag}"] == [None, None], by_connector
    for role in ("a", "c"):  # whether the shared job committed them or not, each id once
        keys = [m.key() for b in batches_to_end(kafka_settings, [topics[role]]) for m in b]
        assert sorted(keys) == sorted(b"%d" % i for i in range(COUNT))

    again = spark_executor.run_batch([w for w in batch if w.connector != f"killer-{tag}"])
    assert [(o.records, o.error) for o in again] == [(0, None)] * 4  # nothing left, nothing re-sent


def test_a_task_run_again_after_a_failed_job_reads_what_a_zombie_committed_after_the_driver(
    kafka_settings: KafkaSettings,
) -> None:
    """The race the rerun guards against (`runtime/source/committed.py`), made deterministic in
    process: the driver read no offsets for the connector; then a task of the failed job, which
    Spark did not stop, started after the driver's fence and committed its batch; then the task
    run again starts with the driver's (stale) offsets. Reading them after its own fence, it finds
    the batch committed and moves nothing; trusting the driver's, it would produce every id again."""
    ensure_topics(kafka_settings)
    topic = f"packed-zombie-{uuid.uuid4().hex[:6]}"
    create_topic(kafka_settings, topic, 2)
    work = works(f"zombie-{topic}", "datagen", topic)[0]
    stale = CommittedOffsets({}, {})  # what the driver read before the zombie's commit
    item = SourceTaskWork(settings=kafka_settings, connector=work.connector, connector_class="datagen", task_id=0,
                          task_config=dict(work.task_config), committed=stale)

    zombie = source_partition(item)
    assert (zombie.records, zombie.error) == (COUNT // 2, None)
    again = source_partition(dataclasses.replace(item, reread=True))
    assert (again.records, again.error) == (0, None)
    keys = [m.key() for b in batches_to_end(kafka_settings, [topic]) for m in b]
    assert len(keys) == len(set(keys)) == COUNT // 2  # each of the task's ids once
