"""A source task with nothing to poll runs no Spark job (issue 30: idle connectors nearly free),
and polls again as soon as it has something: a datagen whose `count` is spent, then raised."""

from __future__ import annotations

import uuid

from pyspark.sql import SparkSession

from reconciler.connectors.datagen import DatagenConnector
from reconciler.core.kinds import Kind
from reconciler.kafka.io.admin import create_topic, ensure_topics
from reconciler.kafka.io.consume import batches_to_end
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import TaskWork
from reconciler.runtime.executor import SparkExecutor


def datagen_works(name: str, topic: str, count: int) -> list[TaskWork]:
    config: dict[str, str | None] = {
        "name": name, "connector.class": "datagen", "tasks.max": "2", "topic": topic, "count": str(count),
        "shards": "4",
    }
    task_configs = DatagenConnector().task_configs(config, 2)
    return [
        TaskWork(connector=name, task_id=i, connector_class="datagen", kind=Kind.SOURCE, connector_config=config,
                 task_config=tc, task_count=len(task_configs))
        for i, tc in enumerate(task_configs)
    ]


def last_job(session: SparkSession) -> int:
    """The newest Spark job's id (jobs get no job group here), -1 before any."""
    return max(session.sparkContext.statusTracker().getJobIdsForGroup(), default=-1)


def test_an_exhausted_source_runs_no_job_and_runs_again_once_it_has_records(
    spark_session: SparkSession, spark_executor: SparkExecutor, kafka_settings: KafkaSettings
) -> None:
    ensure_topics(kafka_settings)
    topic = f"idle-{uuid.uuid4().hex[:8]}"
    create_topic(kafka_settings, topic, 2)
    name = f"gen-{uuid.uuid4().hex[:6]}"

    moved = spark_executor.run_batch(datagen_works(name, topic, 40))
    assert [(o.records, o.error) for o in moved] == [(20, None), (20, None)]

    before = last_job(spark_session)
    idle = spark_executor.run_batch(datagen_works(name, topic, 40))
    assert [(o.records, o.error, o.waited) for o in idle] == [(0, None, None), (0, None, None)]
    assert last_job(spark_session) == before, "an idle source ran a Spark job"

    grown = spark_executor.run_batch(datagen_works(name, topic, 45))  # ids 40-44: stripes 0-3, both tasks
    assert sum(o.records for o in grown) == 5 and not any(o.error for o in grown)
    assert last_job(spark_session) > before

    keys = [m.key() for batch in batches_to_end(kafka_settings, [topic]) for m in batch]
    assert sorted(keys) == sorted(b"%d" % i for i in range(45))  # each id once: nothing lost, nothing twice
