"""KIP-618 zombie fencing before a new generation of source tasks runs, as Connect's leader does.

Connect (`DistributedHerder.doFenceZombieSourceTasks`, `ZombieFencing`, and
`KafkaConfigBackingStore.processTasksCommitRecord` / `processTaskCountRecord`): a source
connector whose task configs were committed after its latest `tasks-fencing-<name>` record is
"pending fencing". Before a task of that new generation starts, the leader fences the
transactional producers of the generation the record counted — ids `<group>-<name>-0..N-1`,
N = the record's `task-count` — and then writes `tasks-fencing-<name>` = {"task-count": M}, M
the new generation's task count. Two exceptions, as in Java: with no record yet no task ever
ran transactionally, so nothing is fenced; with N = M = 1 the new task's own initialisation
fences the old one. Either way the record is written.

Our source tasks are always transactional, with those ids (`kafka.io.produce.task_transactional_id`),
so the worker does the same before a batch of a new generation: fences, then writes the record
after the commit, in the tick's transaction. A Java leader reading the config topic then sees
our generations fenced, never pending.
"""

from __future__ import annotations

from collections.abc import Mapping

from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Record
from reconciler.kafka.io.overrides import PRODUCER, client_settings
from reconciler.kafka.io.produce import fence_source_tasks
from reconciler.kafka.settings import KafkaSettings


def tasks_to_fence(recorded: int | None, count: int) -> int:
    """How many of the previous generation's producers to fence (ids 0..n-1)."""
    if recorded is None or (recorded == 1 and count == 1):
        return 0
    return max(recorded, 0)


def fence_generation(
    settings: KafkaSettings, name: str, config: Mapping[str, str | None], count: int, recorded: int | None
) -> list[Record]:
    """Fence the previous generation's task producers; return the task-count record to write
    before the new generation's tasks run."""
    fence = tasks_to_fence(recorded, count)
    if fence:
        # The task producers live where the connector produces (its producer overrides).
        fence_source_tasks(client_settings(settings, config, PRODUCER), name, fence)
    return [rec.tasks_fencing_record(name, count)]
