"""The tick loop: cadence, stop requests, errors, early wake-ups, and signal handling."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from reconciler.errors import ReconcilerError
from reconciler.app.loop import Stopper, run_loop


def test_ticks_repeat_until_stopped_and_the_current_tick_finishes() -> None:
    stopper = Stopper()
    finished: list[int] = []

    def tick() -> None:
        if len(finished) == 2:
            stopper.request_stop()  # as a signal would, in the middle of a tick
        time.sleep(0.01)  # the tick's work, which the stop must let finish
        finished.append(len(finished))

    run_loop(tick, interval_s=0.01, stopper=stopper, on_error=pytest.fail)
    assert finished == [0, 1, 2]  # the third tick ran to its end, no fourth started


def test_reconciler_errors_are_reported_and_the_loop_goes_on() -> None:
    stopper = Stopper()
    reported: list[str] = []
    calls = 0

    def tick() -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            stopper.request_stop()
        raise ReconcilerError(f"broker away ({calls})")

    run_loop(tick, interval_s=0.01, stopper=stopper, on_error=lambda exc: reported.append(exc.message))
    assert reported == ["broker away (1)", "broker away (2)", "broker away (3)"]


def test_other_exceptions_end_the_loop_in_the_callers_thread() -> None:
    def tick() -> None:
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        run_loop(tick, interval_s=0.01, stopper=Stopper(), on_error=pytest.fail)


def test_wake_starts_the_next_tick_before_the_interval() -> None:
    stopper = Stopper()
    started: list[float] = []

    def tick() -> None:
        started.append(time.monotonic())
        if len(started) == 1:
            threading.Timer(0.1, stopper.wake.set).start()  # e.g. the manifest watcher
        else:
            stopper.request_stop()

    run_loop(tick, interval_s=60, stopper=stopper, on_error=pytest.fail)
    assert len(started) == 2 and started[1] - started[0] < 5


def test_sigterm_requests_a_stop_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGTERM)
    stopper = Stopper()
    stopper.install()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        assert stopper.stop.wait(5)
        assert stopper.stopping and stopper.wake.is_set() and stopper.signals == 1
    finally:
        stopper.restore()
    assert signal.getsignal(signal.SIGTERM) is before
