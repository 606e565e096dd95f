"""A live line on the terminal while a long batch runs (`run`/`watch` on a TTY only).

A batch can take minutes (a large backlog, a slow sink), and the tick's report only comes at its
end; a person at a terminal should see that something is going on. The line appears only when a
batch has run for `DELAY_S`, shows how many tasks of how many connectors run and for how long,
and disappears when the batch ends. Not on a pipe, a file or a container log (stderr not a
TTY), and not with `--log-format json`: there it would only be noise.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

    from reconciler.runtime.batch.tasks import TaskExecutor, TaskOutcome, TaskWork

DELAY_S = 2.0
REFRESH_S = 0.5


class BatchProgress:
    """A `TaskExecutor` that shows a spinner while the executor it wraps runs a long batch."""

    def __init__(self, inner: TaskExecutor, console: Console, *, delay_s: float = DELAY_S) -> None:
        self.inner = inner
        self.console = console
        self.delay_s = delay_s

    def prepare(self) -> None:
        self.inner.prepare()

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        if not works:
            return self.inner.run_batch(works, closing=closing)
        done = threading.Event()
        shower = threading.Thread(target=self._show, args=(works, done), name="batch-progress", daemon=True)
        shower.start()
        try:
            return self.inner.run_batch(works, closing=closing)
        finally:
            done.set()
            shower.join()

    def close(self) -> None:
        self.inner.close()

    def _show(self, works: Sequence[TaskWork], done: threading.Event) -> None:
        started = time.monotonic()
        if done.wait(self.delay_s):
            return  # a short batch: no line at all
        connectors = len({work.connector for work in works})
        with self.console.status(_text(len(works), connectors, time.monotonic() - started)) as status:
            while not done.wait(REFRESH_S):
                status.update(_text(len(works), connectors, time.monotonic() - started))


def _text(tasks: int, connectors: int, elapsed_s: float) -> str:
    return f"batch: {tasks} task(s) of {connectors} connector(s) running for {elapsed_s:.0f} s"


def with_progress(executor: TaskExecutor, log_format: str) -> TaskExecutor:
    """`executor`, wrapped with a progress line when stderr is a terminal and logs are text."""
    if log_format != "text" or not sys.stderr.isatty():
        return executor
    from rich.console import Console

    return BatchProgress(executor, Console(file=sys.stderr))
