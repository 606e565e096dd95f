"""How a connector's partitions are dealt to its tasks, and how many tasks it has
(`runtime.batch.tasks`)."""

from __future__ import annotations

import pytest

from reconciler.runtime.batch.tasks import TaskWork, assign_partitions, connector_task_count


@pytest.mark.parametrize(
    ("partitions", "tasks", "expected"),
    [
        ([("a", 0), ("a", 1), ("a", 2)], 2, {0: [("a", 0), ("a", 2)], 1: [("a", 1)]}),
        ([("b", 1), ("a", 0), ("b", 0)], 2, {0: [("a", 0), ("b", 1)], 1: [("b", 0)]}),  # sorted first
        ([("a", 0)], 3, {0: [("a", 0)], 1: [], 2: []}),  # idle tasks get nothing
        ([], 1, {0: []}),
        ([("a", 0), ("a", 0)], 1, {0: [("a", 0)]}),  # each partition once
    ],
)
def test_partitions_are_dealt_round_robin_over_the_sorted_list(
    partitions: list[tuple[str, int]], tasks: int, expected: dict[int, list[tuple[str, int]]]
) -> None:
    assert assign_partitions(partitions, tasks) == expected


def test_assignment_needs_a_task() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        assign_partitions([("a", 0)], 0)


def work(task_id: int, task_count: int | None = None) -> TaskWork:
    return TaskWork(
        connector="c",
        task_id=task_id,
        connector_class="parquet-sink",
        kind="sink",
        connector_config={},
        task_config={},
        task_count=task_count,
    )


@pytest.mark.parametrize(
    ("works", "expected"),
    [
        ([work(0, 3)], 3),  # the connector's count, even when only task 0 runs
        ([work(0), work(2)], 3),  # unknown: highest id + 1
        ([work(1)], 2),
    ],
)
def test_task_count(works: list[TaskWork], expected: int) -> None:
    assert connector_task_count(works) == expected
