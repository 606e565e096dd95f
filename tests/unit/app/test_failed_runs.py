"""A failed batch after an apply: `run` says what the apply committed, and a transaction the
broker refuses for a record's size carries no hint that a retry converges (issue 27)."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError

from reconciler.app.apply import ApplyOutcome
from reconciler.app.tick import TickRunner
from reconciler.connectors.checks import MAX_TASKS
from reconciler.core.live import LastBatch, LiveState, TaskBatch
from reconciler.core.plan import Plan
from reconciler.errors import ReconcilerError
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.io.produce import _failed_hint
from reconciler.kafka.settings import KafkaSettings


def test_a_record_too_large_is_no_passing_cause() -> None:
    for code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        hint = _failed_hint(KafkaError(code))
        assert "message.max.bytes" in hint and "fails the same way" in hint and "converges" not in hint
    assert "if the cause was passing" in _failed_hint(KafkaError(KafkaError._TRANSPORT))


class _Executor:
    def prepare(self) -> None: ...
    def run_batch(self, works: Any, *, closing: bool = False) -> list[Any]:
        return []
    def close(self) -> None: ...


def test_a_batch_that_fails_after_an_apply_reports_what_the_apply_wrote(monkeypatch: pytest.MonkeyPatch) -> None:
    worker = TickRunner(KafkaSettings(bootstrap_servers="localhost:1", group_id="g"), _Executor(), worker_id="w:1")
    applied = ApplyOutcome(plan=Plan(), live=LiveState(), records_written=3, pending_offsets=[])
    monkeypatch.setattr(TickRunner, "apply", lambda self, desired, manifest_paths=(): applied)

    def failing(**kwargs: Any) -> Any:
        raise ReconcilerError("writing to Kafka failed")

    monkeypatch.setattr(worker.batches, "work", failing)
    seen: list[ApplyOutcome] = []
    with pytest.raises(ReconcilerError, match="writing to Kafka failed"):
        worker.tick([], on_batch_error=seen.append)
    assert seen == [applied]
    with pytest.raises(ReconcilerError):
        worker.tick(None, on_batch_error=seen.append)  # nothing applied: nothing to say
    assert seen == [applied]


def test_the_batch_record_of_the_most_tasks_the_runtime_serves_fits_a_kafka_record() -> None:
    """Under the broker's default `message.max.bytes` (1,048,588), with the largest counts."""
    big = 2**63 - 1
    tasks = {task: TaskBatch(records=big, bytes=big, failed=False) for task in range(MAX_TASKS)}
    record = own.batch_record("c" * 249, LastBatch(finished_at_ms=big, worker_id="h" * 255 + ":99999", tasks=tasks))
    assert record.value is not None and len(record.value) < 1_000_000
