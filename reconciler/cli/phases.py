"""`run --once --profile`: where the fixed cost of one `run --once` goes, one line per phase on
stderr (issue 30, item 1).

`PhaseClock` wraps the tick's executor (as `progress.BatchProgress` does) and notes when Spark is
started (`prepare`), when the batch's jobs run (`run_batch`) and when Spark stops (`close`); the
command notes when its handler began and when the tick's report came. The process's own start
is the kernel's (`/proc/self/stat`), so the first phase is the interpreter and the imports.
A local master's session starts at the batch's first job (`SparkExecutor.prepare` starts only a
cluster's): the executor's `session_window` then says when, and that time is taken out of the
batch's line and shown as the session start's. `run --once` starts it in the background before
the apply (`SparkExecutor.start_early`): then only the batch's wait for it is that line, and a
last line, not summed, says how long the whole start took.
What comes after the last line (the JVM's exit, the interpreter's) only an outside clock sees:
bench/connect_head_to_head.py times the whole process.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reconciler.runtime.batch.tasks import TaskExecutor, TaskOutcome, TaskWork

# (phase, the mark that ends it), in the order they happen; a phase whose marks are missing
# (no batch ran, Spark was already up) is not printed.
PHASES = (
    ("interpreter and imports", "handler"),
    ("manifests, apply, live state", "prepare"),
    ("Spark session start", "prepared"),
    ("connectors started, task configs, statuses before the batch", "batch"),
    ("batch (Spark jobs)", "batched"),
    ("statuses, UNASSIGNED on stop", "reported"),
    ("Spark stop", "closed"),
)


def process_started() -> float:
    """When this process started, on the `time.time()` clock: the kernel's start tick, counted
    from boot, set against the boot-time clock now (`btime` in /proc/stat has whole seconds only,
    which moved the first phase by up to a second)."""
    with open("/proc/self/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    ticks = int(fields[19])  # field 22, starttime, after the two before ")"
    age = time.clock_gettime(time.CLOCK_BOOTTIME) - ticks / os.sysconf("SC_CLK_TCK")
    return time.time() - age


class PhaseClock:
    """A `TaskExecutor` noting when the executor it wraps starts Spark, runs the batch and stops."""

    def __init__(self) -> None:
        self.inner: TaskExecutor | None = None  # set by `wrapping`, when the runner is built
        self.marks: dict[str, float] = {}
        try:
            self.marks["start"] = process_started()
        except (OSError, ValueError, StopIteration, IndexError):  # not Linux: no first phase
            pass

    def wrapping(self, inner: TaskExecutor) -> PhaseClock:
        self.inner = inner
        return self

    @property
    def _inner(self) -> TaskExecutor:
        assert self.inner is not None, "PhaseClock.wrapping() gives it its executor first"
        return self.inner

    def mark(self, name: str) -> None:
        self.marks.setdefault(name, time.time())

    def prepare(self) -> None:
        self.mark("prepare")
        self._inner.prepare()
        self.mark("prepared")

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        self.mark("prepare")  # a batch without a prepare() before it: the session starts inside
        self.mark("prepared")
        self.mark("batch")
        try:
            return self._inner.run_batch(works, closing=closing)
        finally:
            self.mark("batched")

    def close(self) -> None:
        self._inner.close()
        self.mark("closed")

    def _session_window(self) -> tuple[float, float] | None:
        """When the executor (through wrappers: the progress line's) started Spark, if it did."""
        inner: object = self.inner
        while inner is not None and getattr(inner, "session_window", None) is None:
            inner = getattr(inner, "inner", None)
        window = getattr(inner, "session_window", None) if inner is not None else None
        return None if window is None else (float(window[0]), float(window[1]))

    def _session_in_batch(self) -> tuple[float, bool]:
        """Seconds of the batch spent waiting for Spark's start (0: it was up before, or never
        started), and whether that start began before the batch (in the background)."""
        window = self._session_window()
        batch, batched = self.marks.get("batch"), self.marks.get("batched")
        if window is None or batch is None or batched is None or window[0] > batched:
            return 0.0, False
        return max(0.0, min(window[1], batched) - max(window[0], batch)), window[0] < batch

    def lines(self) -> list[str]:
        """One line per phase whose marks were both taken, then the sum."""
        order = ["start"] + [end for _, end in PHASES]
        lazy, early = self._session_in_batch()
        shift = {"prepared": lazy, "batched": -lazy}  # the session's start, moved to its own line
        label_at = "(at the first job)" if not early else "(the batch's wait for it)"
        lines, total = [], 0.0
        for (name, end), begin in zip(PHASES, order, strict=False):
            if begin in self.marks and end in self.marks:
                seconds = self.marks[end] - self.marks[begin] + shift.get(end, 0.0)
                total += seconds
                label = f"{name} {label_at}" if end == "prepared" and (lazy or early) else name
                lines.append(f"profile: {label:<62} {seconds:7.3f} s")
        lines.append(f"profile: {'sum, to the end of the command (the JVM exit follows)':<62} {total:7.3f} s")
        window = self._session_window()
        if early and window is not None:  # what it overlapped is in the lines above; not summed again
            begun = window[0] - self.marks.get("start", window[0])
            whole = f"(Spark session start, all of it, begun in the background {begun:.2f} s in)"
            lines.append(f"profile: {whole:<62} {window[1] - window[0]:7.3f} s")
        return lines

    def print(self) -> None:
        print("\n".join(self.lines()), file=sys.stderr, flush=True)
