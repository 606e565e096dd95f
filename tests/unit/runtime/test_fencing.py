"""KIP-618 fencing before a new source task generation (runtime.batch.fencing), Connect's rules."""

from __future__ import annotations

import pytest

from reconciler.kafka.replay import ConfigReplay
from reconciler.kafka.formats import records as rec
from reconciler.runtime.batch.fencing import tasks_to_fence


@pytest.mark.parametrize(
    ("recorded", "count", "fenced"),
    [
        (None, 3, 0),  # no record: no task ever ran transactionally
        (1, 1, 0),  # one task before and after: the new one fences the old one itself
        (1, 2, 1),
        (3, 1, 3),  # every producer of the previous generation, also those no new task reuses
        (0, 2, 0),
    ],
)
def test_tasks_to_fence(recorded: int | None, count: int, fenced: int) -> None:
    assert tasks_to_fence(recorded, count) == fenced


def test_a_task_count_record_after_the_commit_ends_pending_fencing() -> None:
    replay = ConfigReplay()
    records = [rec.connector_config_record("c", {"name": "c"}), rec.task_config_record("c", 0, {"k": "v"}),
               rec.commit_record("c", 1)]
    for offset, record in enumerate(records):
        replay.apply(record.key, record.value, offset)
    assert replay.pending_fencing == {"c"}
    record = rec.tasks_fencing_record("c", 1)
    assert record.value == b'{"task-count":1}'
    replay.apply(record.key, record.value, 3)
    assert replay.pending_fencing == set() and replay.task_count_records == {"c": 1}
