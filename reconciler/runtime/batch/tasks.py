"""What one batch runs and what it reports: a `TaskWork` per task in, a `TaskOutcome` per task
out, and the `TaskExecutor` interface between the worker's tick and whatever runs the tasks
(`runtime.executor.SparkExecutor`). The sink and source jobs build on these; nothing here runs Spark.

`TaskExecutor.run_batch(works)` runs one batch of every given task and returns exactly one
`TaskOutcome` per `TaskWork`, never raising for a task's failure: a failed task's outcome
carries the Python traceback (the worker writes it as the FAILED status `trace`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from reconciler.core.kinds import Kind
from reconciler.core.offsets_rules import TopicPartition
from reconciler.core.outcomes import TaskOutcome as TaskOutcome  # re-exported: the REST API reads it too


@dataclass(frozen=True, kw_only=True)
class TaskWork:
    connector: str  # connector name
    task_id: int
    connector_class: str  # as in the config (`connector.class`): registry name or module:Class
    kind: Kind
    connector_config: dict[str, str | None]  # the connector's properties (offsets hooks, topics…)
    task_config: dict[str, str]  # the committed task config (`task-<name>-<id>`)
    # How many tasks the connector has (its committed task configs), when known: sink
    # partitions are dealt over all of them, so a task left out of this batch (FAILED, say)
    # keeps its partitions and no other task reads them. None: the highest task id given + 1.
    task_count: int | None = None


class TaskExecutor(Protocol):
    def prepare(self) -> None:
        """Get ready to run a batch (start Spark); raise if that is impossible. Called before
        the worker writes anything for the batch."""

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]: ...

    def close(self) -> None: ...


def assign_partitions(
    topics_partitions: Sequence[TopicPartition], task_count: int
) -> dict[int, list[TopicPartition]]:
    """Kafka partitions dealt to tasks round-robin over the sorted (topic, partition) list.

    Every task id 0…task_count-1 is a key (an idle task gets an empty list); each partition
    goes to exactly one task, and the same inputs always give the same assignment.
    """
    if task_count < 1:
        raise ValueError(f"task_count must be at least 1, got {task_count}")
    assignment: dict[int, list[TopicPartition]] = {task: [] for task in range(task_count)}
    for index, tp in enumerate(sorted(set(topics_partitions))):
        assignment[index % task_count].append(tp)
    return assignment


def connector_task_count(works: Sequence[TaskWork]) -> int:
    declared = [w.task_count for w in works if w.task_count is not None]
    return max(declared) if declared else max(w.task_id for w in works) + 1


@dataclass(frozen=True)
class NotRun:
    """Why tasks do not run in this batch: they wait for the next one (`waited`, their status
    kept) or they fail (`trace`)."""

    waited: str | None = None
    trace: str | None = None

    def outcomes(self, works: Sequence[TaskWork]) -> list[TaskOutcome]:
        return [
            TaskOutcome(connector=w.connector, task_id=w.task_id, records=0, error=self.trace, waited=self.waited)
            for w in works
        ]
