"""The loop of `run`/`watch` (`app.serve`): ticks every `interval` seconds until SIGTERM or
SIGINT, then a clean stop.

Ticks run in a worker thread while the main thread only waits for signals. That is not just
tidiness: PySpark replaces the SIGINT handler of the main thread when it creates a
SparkContext there (cancel every job, raise KeyboardInterrupt), which would kill a batch
half-way. Created from another thread, it leaves signals alone.

On the first signal the current tick finishes its batch (tasks open and close within a batch:
sinks pre-commit with `closing=True` and their offsets are committed after the files, then
the statuses are written), no new tick starts, and the caller closes the executor (Spark
stops). All of that must end within the grace period (`--grace-period`, 30 s by default, what
Kubernetes waits before SIGKILL); past it the process exits at once, with code 1. A second
signal exits at once too (code 130), for a batch that hangs. Either way nothing is lost: an
unfinished batch commits nothing, and the next run starts from the committed offsets.

`wake` lets something else (the manifest watcher) start the next tick early. A `resync` pass,
if given, runs whenever no tick has run for `resync_s` seconds (docs/runtime.md#watch-mode).
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
GRACE_EXCEEDED_EXIT = 1


def _to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Stopper:
    """SIGTERM/SIGINT → `stop` is set (and `wake`, so a sleeping loop notices at once).

    `grace_s`: after the first signal the process has that long to finish; then it exits.
    `notify`: where the messages about signals go (stderr, or the structured log).
    """

    def __init__(self, grace_s: float | None = None, notify: Callable[[str], None] = _to_stderr) -> None:
        self.stop = threading.Event()
        self.wake = threading.Event()
        self.signals = 0
        self.grace_s = grace_s
        self.notify = notify
        self._previous: dict[int, object] = {}
        self._deadline: threading.Timer | None = None

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

    def finished(self) -> None:
        """The process is done stopping (Spark too): the grace period no longer runs."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.signals += 1
        name = signal.Signals(signum).name
        if self.signals > 1:
            self.notify(f"{name} again: exiting now")
            os._exit(FORCED_EXIT)  # threads may be stuck in a batch: do not wait for them
        within = f" (grace period {self.grace_s:g} s)" if self.grace_s is not None else ""
        self.notify(f"{name}: finishing the current batch, then stopping{within}")
        self.request_stop()
        if self.grace_s is not None:
            self._deadline = threading.Timer(self.grace_s, self._grace_exceeded)
            self._deadline.daemon = True
            self._deadline.start()

    def _grace_exceeded(self) -> None:
        self.notify(
            f"grace period of {self.grace_s:g} s exceeded: exiting without finishing the batch "
            "(it committed nothing; the next run starts from the committed offsets)"
        )
        os._exit(GRACE_EXCEEDED_EXIT)


def run_loop(
    tick: Callable[[], None],
    *,
    interval_s: float,
    stopper: Stopper,
    on_error: Callable[[ReconcilerError], None],
    resync: Callable[[], None] | None = None,
    resync_s: float | None = None,
) -> None:
    """Call `tick` every `interval_s` seconds (from the start of one to the next) until stopped;
    a wake-up starts the next tick at once. With `resync`, call it whenever neither it nor a
    tick has started for `resync_s` seconds.

    A tick or resync that raises a ReconcilerError (broker away, invalid plan…) is reported
    through `on_error` and retried at the next interval; anything else is a bug and ends the loop.
    """
    failure: list[BaseException] = []
    every = resync_s if resync is not None and resync_s else None

    def body() -> None:
        next_tick = last_pass = time.monotonic()
        try:
            while not stopper.stopping:
                woken, now = stopper.wake.is_set(), time.monotonic()
                stopper.wake.clear()
                try:
                    if woken or now >= next_tick:
                        next_tick, last_pass = now + interval_s, now
                        tick()
                    elif resync is not None and every is not None and now - last_pass >= every:
                        last_pass = now
                        resync()
                except ReconcilerError as exc:
                    on_error(exc)
                due = next_tick if every is None else min(next_tick, last_pass + every)
                stopper.wake.wait(max(0.0, due - time.monotonic()))
        except BaseException as exc:  # handed to the main thread, which re-raises it
            failure.append(exc)

    thread = threading.Thread(target=body, name="reconciler-ticks", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)  # short joins: the main thread runs signal handlers in between
    if failure:
        raise failure[0]
