"""Our marks of when a connector failed (`kafka.replay.marks`)."""

from __future__ import annotations

from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay.marks import FailureLog
from reconciler.kafka.formats.own_records import FailureMark, trace_digest
from reconciler.kafka.formats.own_records import connector_failed_record as failure_mark_record
from reconciler.kafka.formats.own_records import connector_failed_tombstone as failure_mark_tombstone
from reconciler.kafka.formats.own_records import decode_connector_failed as decode_failure_mark


def test_a_mark_round_trips_and_holds_only_for_its_trace() -> None:
    record = failure_mark_record("orders", 41, "boom\n\tat x")
    assert record.topic_role == "reconciler" and record.key == b"connector-failed/orders"
    mark = decode_failure_mark(record.value or b"")
    assert mark == FailureMark(41, trace_digest("boom\n\tat x"))
    assert isinstance(mark, FailureMark)
    assert mark.holds_for("boom\n\tat x") and not mark.holds_for("another failure") and not mark.holds_for(None)


def test_the_log_keeps_the_latest_mark_and_forgets_on_a_tombstone() -> None:
    log = FailureLog()
    first, second = failure_mark_record("a", 3, "x"), failure_mark_record("a", 9, "y")
    log.on_reconciler(first.key, first.value)
    log.on_reconciler(second.key, second.value)
    log.on_reconciler(b"owner/a", b"{}")  # not ours to read
    assert log.marks == {"a": FailureMark(9, trace_digest("y"))}
    log.on_reconciler(failure_mark_tombstone("a").key, None)
    assert log.marks == {}


def test_bad_marks_are_ignored() -> None:
    for value in (b"{}", b'{"config-end":"1","trace-sha256":"x"}', b"not json"):
        assert isinstance(decode_failure_mark(value), Invalid)
    log = FailureLog()
    log.on_reconciler(b"connector-failed/a", b"{}")
    assert log.marks == {}
