"""One line of a status trace (`render.common.trace_summary`): the exception, whichever runtime
wrote it, in `status`'s TRACE column and notes and in `run`'s tick lines."""

from __future__ import annotations

import traceback

from reconciler.render.status_view import TaskRow, task_rows
from reconciler.core.live import InstanceState, InstanceStatus, LiveConnector
from reconciler.render.common import trace_summary

JAVA = (
    "org.apache.kafka.connect.errors.ConnectException: boom\n"
    "\tat org.example.Sink.put(Sink.java:42)\n"
    "\tat org.apache.kafka.connect.runtime.WorkerSinkTask.deliverMessages(WorkerSinkTask.java:601)\n"
    "Caused by: java.io.IOException: disk full\n"
    "\tat org.example.Sink.write(Sink.java:7)\n"
    "\t... 2 more\n"
)


def python_trace(exc: BaseException) -> str:
    try:
        raise exc
    except BaseException:
        return traceback.format_exc()


def chained_trace() -> str:
    try:
        try:
            open("/nonexistent/in.csv")  # noqa: SIM115
        except OSError as exc:
            raise RuntimeError("could not read the input") from exc
    except RuntimeError:
        return traceback.format_exc()
    raise AssertionError("unreachable")


def test_a_python_traceback_is_its_exception_not_its_first_line() -> None:
    trace = python_trace(FileNotFoundError(2, "No such file or directory", "/data/in.csv"))
    assert trace.startswith("Traceback (most recent call last):")
    assert trace_summary(trace) == "FileNotFoundError: [Errno 2] No such file or directory: '/data/in.csv'"


def test_a_chained_python_traceback_is_the_last_exception() -> None:
    assert trace_summary(chained_trace()) == "RuntimeError: could not read the input"


def test_a_python_exception_on_several_lines_is_kept_whole() -> None:
    trace = python_trace(ValueError("the connector configuration is invalid:\n  topic: required"))
    assert trace_summary(trace) == "ValueError: the connector configuration is invalid:; topic: required"


def test_a_java_stack_trace_is_its_first_line() -> None:
    assert trace_summary(JAVA) == "org.apache.kafka.connect.errors.ConnectException: boom"


def test_a_message_keeps_its_continuation_lines() -> None:
    assert trace_summary("cannot read /x\nhint: mount it\n") == "cannot read /x; hint: mount it"
    assert trace_summary("") == ""


def test_the_status_tables_trace_column_names_the_exception() -> None:
    trace = python_trace(FileNotFoundError(2, "No such file or directory", "/data/in.csv"))
    connector = LiveConnector(name="src", config={"connector.class": "datagen"}, task_statuses={
        0: InstanceStatus(state=InstanceState.FAILED, worker_id="w:1", trace=trace),
        1: InstanceStatus(state=InstanceState.FAILED, worker_id="w:2", trace=JAVA),
        2: InstanceStatus(state=InstanceState.RUNNING, worker_id="w:1"),
    })
    assert task_rows(connector) == [
        TaskRow(task=0, state=InstanceState.FAILED, worker_id="w:1",
                trace="FileNotFoundError: [Errno 2] No such file or directory: '/data/in.csv'"),
        TaskRow(task=1, state=InstanceState.FAILED, worker_id="w:2",
                trace="org.apache.kafka.connect.errors.ConnectException: boom"),
        TaskRow(task=2, state=InstanceState.RUNNING, worker_id="w:1", trace=""),
    ]
