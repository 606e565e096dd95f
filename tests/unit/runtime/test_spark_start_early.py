"""`run --once` starts Spark in the background while it applies (`SparkExecutor.start_early`):
the first job waits for that start instead of beginning one, a start that failed is the batch's
error once (not started again), and a process that exits does not wait for a start nothing
needed. Only `run --once` in the CLI's own process asks for it (`cli.run_use.serve_options`).
(Spark itself starts in tests/integration/: every `run --once` there starts it this way.)"""

from __future__ import annotations

import argparse
import threading
import time

import pytest

from reconciler.cli import main as cli_main
from reconciler.cli.run_use import serve_options
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.executor import SparkExecutor


class Started:
    """What `SparkExecutor._start` returns here (with no early launch): a `Spark` stand-in, after `delay_s`."""


def executor(monkeypatch: pytest.MonkeyPatch, *, delay_s: float = 0.0, error: Exception | None = None,
             stop_on_close: bool = False) -> tuple[SparkExecutor, list[float]]:
    starts: list[float] = []
    done = threading.Event()

    def start(self: SparkExecutor) -> tuple[Started, None]:
        starts.append(time.monotonic())
        time.sleep(delay_s)
        done.set()
        if error is not None:
            raise error
        return Started(), None

    monkeypatch.setattr(SparkExecutor, "_start", start)
    return SparkExecutor(KafkaSettings(bootstrap_servers="a:9092"), stop_on_close=stop_on_close), starts


def test_the_first_job_waits_for_the_start_begun_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    spark, starts = executor(monkeypatch, delay_s=0.2)
    began = time.monotonic()
    spark.start_early()
    assert time.monotonic() - began < 0.1  # the caller goes on (the apply) while Spark starts
    started = spark.spark()
    assert isinstance(started, Started) and spark.spark() is started
    assert len(starts) == 1 and time.monotonic() - began >= 0.2
    assert spark.session_window is not None and spark.session_window[0] <= spark.session_window[1]


def test_a_start_that_failed_in_the_background_is_the_batchs_error_once(monkeypatch: pytest.MonkeyPatch) -> None:
    spark, starts = executor(monkeypatch, error=RuntimeError("no java"))
    spark.start_early()
    with pytest.raises(RuntimeError, match="no java"):
        spark.spark()
    with pytest.raises(RuntimeError, match="no java"):  # the batch's other jobs: at once, no second start
        spark.spark()
    assert len(starts) == 1


def test_an_exiting_process_does_not_wait_for_a_start_nothing_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    spark, _ = executor(monkeypatch, delay_s=1.0)
    spark.start_early()
    began = time.monotonic()
    spark.close()  # an idle tick: no job asked for the session; the process exits now
    assert time.monotonic() - began < 0.5


def test_only_run_once_in_the_clis_own_process_starts_spark_early() -> None:
    def options(argv: list[str], *, exiting: bool) -> bool:
        args = cli_main.parse(cli_main.build_parser(argv), argv)
        args.exiting = exiting
        assert isinstance(args, argparse.Namespace)
        return serve_options(args).spark.start_early

    assert options(["run", "m.yaml", "--once"], exiting=True)
    assert not options(["run", "m.yaml", "--once"], exiting=False)  # in process (tests): Spark starts at the job
    assert not options(["run", "m.yaml"], exiting=True)  # the loop: an idle group starts no JVM
