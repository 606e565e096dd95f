"""Task configs as Connect's leader writes them, from our runtime (real broker, real Spark):
`task.class` and `topics` in every task config, and for sources KIP-618's task-count record
after the previous generation's producers are fenced (`runtime.batch.fencing`)."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.kafka.io.produce import task_transactional_id
from run_support import Pipeline, pipeline

__all__ = ["pipeline"]  # the fixture


def keys_of(pipeline: Pipeline, name: str) -> list[str]:
    """The config-topic keys written about connector `name`, in order."""
    return [key for key, _ in pipeline.config_records("") if key.endswith(f"-{name}") or key.startswith(f"task-{name}-")]


def test_a_new_source_generation_fences_the_last_one_then_records_its_task_count(pipeline: Pipeline) -> None:
    from confluent_kafka import KafkaException, Producer

    topic = pipeline.topic("gen", 2)
    config: dict[str, Any] = {"topic": topic, "count": 60, "shards": 4}
    pipeline.connector("gen", "datagen", config, tasks_max=3)
    pipeline.tick()
    assert keys_of(pipeline, "gen") == ["connector-gen", "task-gen-0", "task-gen-1", "task-gen-2", "commit-gen", "tasks-fencing-gen"]
    tasks = [value["properties"] for _, value in pipeline.config_records("task-gen-")]
    assert {t["task.class"] for t in tasks} == {"reconciler.connectors.datagen:DatagenTask"}

    # A zombie of task 2, whose id no task of the next (one-task) generation takes over.
    settings = pipeline.settings
    zombie = Producer({"bootstrap.servers": settings.bootstrap_servers,
                       "transactional.id": task_transactional_id(settings.group_id, "gen", 2)})
    zombie.init_transactions(settings.timeout_s)
    zombie.begin_transaction()
    zombie.produce(topic, key=b"zombie", value=b"late")
    pipeline.set("gen", tasksMax=1)
    pipeline.tick()
    with pytest.raises(KafkaException, match="(?i)fenced|epoch"):
        zombie.commit_transaction(settings.timeout_s)
    assert pipeline.config_records("tasks-fencing-gen") == [
        ("tasks-fencing-gen", {"task-count": 3}), ("tasks-fencing-gen", {"task-count": 1})]

    pipeline.tick()  # the same generation: nothing to fence, nothing recorded
    assert len(pipeline.config_records("tasks-fencing-gen")) == 2


def test_sink_task_configs_carry_the_connectors_topics_and_no_task_count(pipeline: Pipeline, tmp_path: Any) -> None:
    topic = pipeline.topic("in", 1)
    pipeline.connector("arch", "parquet-sink", {"topics": topic, "path": str(tmp_path / "out")})
    pipeline.tick()
    [(_, task)] = pipeline.config_records("task-arch-")
    assert task["properties"]["topics"] == topic
    assert task["properties"]["task.class"] == "reconciler.connectors.parquet_sink:ParquetSinkTask"
    assert pipeline.config_records("tasks-fencing-arch") == []
