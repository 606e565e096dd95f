"""`runtime.spark.jvm_output.relay`: what the JVM writes to stderr outside logging becomes our JSON,
read from a real OS pipe as the JVM's stderr is."""

from __future__ import annotations

import io
import json
import logging
import os
import threading

import pytest

from reconciler.logs import JsonFormatter
from reconciler.runtime.spark import jvm_output


def relayed(written: bytes, caplog: pytest.LogCaptureFixture) -> tuple[list[str], list[logging.LogRecord]]:
    read_end, write_end = os.pipe()
    out = io.StringIO()
    def jvm() -> None:
        with os.fdopen(write_end, "wb") as stderr:
            stderr.write(written)

    with os.fdopen(read_end, "rb") as stream, caplog.at_level(logging.WARNING, logger="spark.jvm"):
        thread = jvm_output.relay(stream, out)
        writer = threading.Thread(target=jvm, daemon=True)
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "the JVM's side blocked: the relay stopped reading"
        thread.join(timeout=10)
        assert not thread.is_alive(), "the relay ends with the stream"
    return out.getvalue().splitlines(), [r for r in caplog.records if r.name == "spark.jvm"]


def test_json_lines_pass_as_they_are_and_other_lines_become_warnings(caplog: pytest.LogCaptureFixture) -> None:
    event = '{"time":"2026-11-28T06:00:00.000Z","level":"WARN","logger":"org.apache.spark.SparkContext","message":"m"}'
    written = (
        b"WARNING: Using incubator modules: jdk.incubator.vector\n"
        + event.encode() + b"\n"
        + b"\n"
        + b"Picked up JAVA_TOOL_OPTIONS: -Xmx1g\r\n"
        + b"\xff not UTF-8"  # no newline at the end: the JVM died mid-line
    )
    passed, warnings = relayed(written, caplog)
    assert passed == [event]
    assert [r.getMessage() for r in warnings] == [
        "WARNING: Using incubator modules: jdk.incubator.vector", "Picked up JAVA_TOOL_OPTIONS: -Xmx1g", "\ufffd not UTF-8",
    ]
    formatted = json.loads(JsonFormatter().format(warnings[0]))
    assert (formatted["level"], formatted["logger"], formatted["event"]) == ("warning", "spark.jvm", "log")


def test_a_long_burst_is_drained_so_the_jvm_never_blocks(caplog: pytest.LogCaptureFixture) -> None:
    """More than a pipe holds (64 KiB): the writer only finishes if the relay keeps reading."""
    line = b'{"message":"' + b"x" * 500 + b'"}\n'
    passed, _ = relayed(line * 1000, caplog)
    assert len(passed) == 1000
