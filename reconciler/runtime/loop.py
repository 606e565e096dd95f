"""Repeat ticks every `interval` seconds until SIGTERM or SIGINT, then stop cleanly.

Ticks run in a worker thread while the main thread only waits for signals. That is not just
tidiness: PySpark replaces the SIGINT handler of the main thread when it creates a
SparkContext there (cancel every job, raise KeyboardInterrupt), which would kill a batch
half-way. Created from another thread, it leaves signals alone.

On the first signal the current tick finishes its batch (tasks open and close within a batch:
sinks pre-commit with `closing=True` and their offsets are committed after the files), no new
tick starts, and the caller closes the executor (Spark stops). A second signal exits at once
(code 130), for a batch that hangs.

`wake` lets something else (the manifest watcher) start the next tick early.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType

from reconciler.errors import ReconcilerError

LOG = logging.getLogger(__name__)
FORCED_EXIT = 130


class Stopper:
    """SIGTERM/SIGINT → `stop` is set (and `wake`, so a sleeping loop notices at once)."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.signals = 0
        self._previous: dict[int, object] = {}

    @property
    def stopping(self) -> bool:
        return self.stop.is_set()

    def request_stop(self) -> None:
        self.stop.set()
        self.wake.set()

    def install(self) -> None:
        for signum in (signal.SIGTERM, signal.SIGINT):
            self._previous[signum] = signal.signal(signum, self._on_signal)

    def restore(self) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]  # what signal() returned
        self._previous.clear()

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals > 1:
            print(f"{name} again: exiting now", file=sys.stderr, flush=True)
            os._exit(FORCED_EXIT)  # threads may be stuck in a batch: do not wait for them
        print(f"{name}: finishing the current batch, then stopping", file=sys.stderr, flush=True)
        self.request_stop()


def run_loop(
    tick: Callable[[], None],
    *,
    interval_s: float,
    stopper: Stopper,
    on_error: Callable[[ReconcilerError], None],
) -> None:
    """Call `tick` every `interval_s` seconds (from the start of one to the next) until stopped.

    A tick that raises a ReconcilerError (broker away, invalid plan…) is reported through
    `on_error` and retried at the next interval; anything else is a bug and ends the loop.
    """
    failure: list[BaseException] = []

    def body() -> None:
        try:
            while not stopper.stopping:
                started = time.monotonic()
                try:
                    tick()
                except ReconcilerError as exc:
                    on_error(exc)
                stopper.wake.wait(max(0.0, interval_s - (time.monotonic() - started)))
                stopper.wake.clear()
        except BaseException as exc:  # handed to the main thread, which re-raises it
            failure.append(exc)

    thread = threading.Thread(target=body, name="reconciler-ticks", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)  # short joins: the main thread runs signal handlers in between
    if failure:
        raise failure[0]
