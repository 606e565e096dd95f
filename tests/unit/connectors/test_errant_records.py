"""Records that fail, as Connect handles them: `errors.tolerance` (none: one line naming the
record; all: skipped), Java's `LogReporter` line, and the dead letter queue's records with the
context headers Java's `DeadLetterQueueReporter` writes, name for name and byte for byte."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from reconciler.connectors.api import InvalidConnectorConfig, RecordFailure, SinkRecord, Stage
from reconciler.connectors.errant import ErrantReporter, ErrorHandling, RecordFailed, failed_line
from reconciler.kafka.formats.dead_letter import DeadLetter, java_trace

JSON = "org.apache.kafka.connect.json.JsonConverter"
RECORD = SinkRecord("orders", 2, 17, b"k", b"{oops", 1_700_000_000_123, (("trace-id", b"abc"), ("empty", None)))
FAILURE = RecordFailure(record=RECORD, stage=Stage.VALUE_CONVERTER, executing_class=JSON,
                        message="Converting byte[] to Kafka Connect data failed due to serialization error: ")


class Kept:
    """A DeadLetters that keeps what it is sent (the Kafka one is tested against a broker)."""

    def __init__(self) -> None:
        self.sent: list[DeadLetter] = []

    def send(self, letters: Sequence[DeadLetter]) -> None:
        self.sent += letters


def reporter(dead_letters: Kept | None = None, **config: str) -> ErrantReporter:
    return ErrantReporter(ErrorHandling.parse(config), connector="archive", task_id=3, dead_letters=dead_letters)


def test_tolerance_none_fails_with_one_line_naming_the_record_and_the_reason() -> None:
    with pytest.raises(RecordFailed) as raised:
        reporter().report(FAILURE)
    line = str(raised.value)
    assert "\n" not in line
    assert line.startswith(f"the value of record orders-2@17 cannot be read by {JSON}: Converting byte[]")
    assert "errors.tolerance=all" in line


def test_a_task_put_failure_names_the_record_and_the_column() -> None:
    failure = RecordFailure(record=RECORD, stage=Stage.TASK_PUT, executing_class="x.Task",
                            message="column price: 'abc' is not a decimal")
    assert failed_line(failure).startswith("record orders-2@17 cannot be written: column price: 'abc'")


def test_tolerance_all_skips_and_logs_as_javas_log_reporter(caplog: pytest.LogCaptureFixture) -> None:
    errant = reporter(**{"errors.tolerance": "all", "errors.log.enable": "true",
                         "errors.log.include.messages": "true"})
    with caplog.at_level(logging.ERROR, "reconciler.connectors.errant"):
        errant.report(FAILURE)
        errant.flush()  # no DLQ: nothing to send
    assert errant.skipped == 1 and errant.queued == []
    assert caplog.messages == [
        f"Error encountered in task archive-3. Executing stage 'VALUE_CONVERTER' with class '{JSON}', where "
        "consumed record is {topic='orders', partition=2, offset=17, timestamp=1700000000123, "
        "timestampType=CreateTime}. org.apache.kafka.connect.errors.DataException: Converting byte[] to Kafka "
        "Connect data failed due to serialization error: "]


def test_without_errors_log_enable_nothing_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, "reconciler.connectors.errant"):
        reporter(**{"errors.tolerance": "all"}).report(FAILURE)
    assert caplog.messages == []


def test_dead_letters_carry_the_original_record_and_javas_context_headers() -> None:
    kept = Kept()
    errant = reporter(kept, **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq",
                               "errors.deadletterqueue.context.headers.enable": "true"})
    errant.report(FAILURE)
    assert kept.sent == []  # queued until the task flushes, before its data is durable
    errant.flush()
    [letter] = kept.sent
    assert (letter.key, letter.value, letter.timestamp) == (b"k", b"{oops", 1_700_000_000_123)
    assert letter.all_headers() == [
        ("trace-id", b"abc"), ("empty", None),
        ("__connect.errors.topic", b"orders"),
        ("__connect.errors.partition", b"2"),
        ("__connect.errors.offset", b"17"),
        ("__connect.errors.connector.name", b"archive"),
        ("__connect.errors.task.id", b"3"),
        ("__connect.errors.stage", b"VALUE_CONVERTER"),
        ("__connect.errors.class.name", JSON.encode()),
        ("__connect.errors.exception.class.name", b"org.apache.kafka.connect.errors.DataException"),
        ("__connect.errors.exception.message", FAILURE.message.encode()),
        ("__connect.errors.exception.stacktrace",
         b"org.apache.kafka.connect.errors.DataException: " + FAILURE.message.encode() + b"\n"),
    ]


def test_without_context_headers_the_dead_letter_is_the_original_record_only() -> None:
    kept = Kept()
    errant = reporter(kept, **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq"})
    errant.report(FAILURE)
    errant.flush()
    assert kept.sent[0].all_headers() == [("trace-id", b"abc"), ("empty", None)]


def test_a_dead_letter_queue_without_a_producer_fails_rather_than_losing_records() -> None:
    errant = reporter(None, **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq"})
    errant.report(FAILURE)
    with pytest.raises(Exception, match="errors.deadletterqueue.topic.name is dlq"):
        errant.flush()


def test_java_trace_is_shaped_as_print_stack_trace() -> None:
    assert java_trace("a.B", None) == "a.B\n"
    assert java_trace("a.B", "m", "f1\n  f2\n") == "a.B: m\n\tat f1\n\tat f2\n"


def test_bad_error_settings_are_refused_naming_the_key() -> None:
    with pytest.raises(InvalidConnectorConfig, match="errors.tolerance"):
        ErrorHandling.parse({"errors.tolerance": "some"})
