"""`run --once --profile`'s phase lines (`cli.phases.PhaseClock`): each phase from the marks
around it, in order, the process's start from the kernel's clock, a phase not reached left out."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Sequence

from reconciler.cli.phases import PhaseClock, process_started
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork


class Recorder:
    def __init__(self, clock: PhaseClock) -> None:
        self.clock, self.seen = clock, list[tuple[str, set[str]]]()

    def prepare(self) -> None:
        self.seen.append(("prepare", set(self.clock.marks)))

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        self.seen.append(("run_batch", set(self.clock.marks)))
        return []

    def close(self) -> None:
        self.seen.append(("close", set(self.clock.marks)))


def test_the_process_start_is_read_to_the_clock_tick_not_the_second() -> None:
    before = time.time()
    child = subprocess.run([sys.executable, "-c", "from reconciler.cli.phases import process_started as p; print(p())"],
                           capture_output=True, text=True, check=True)
    after = time.time()
    # the kernel counts in 10 ms ticks; /proc/stat's btime alone was up to a second early
    assert before - 0.02 <= float(child.stdout) <= after


def test_each_phase_is_timed_between_the_marks_around_it() -> None:
    assert 0 <= time.time() - process_started() < 24 * 3600  # this test process started a moment ago
    clock = PhaseClock()
    clock.mark("handler")
    inner = Recorder(clock)
    assert clock.wrapping(inner) is clock
    clock.prepare()
    clock.run_batch([])
    clock.mark("reported")
    clock.close()
    assert [name for name, _ in inner.seen] == ["prepare", "run_batch", "close"]
    assert "prepared" not in inner.seen[0][1] and "batched" not in inner.seen[1][1]
    lines = clock.lines()
    names = [line.removeprefix("profile: ").rsplit(" ", 2)[0].strip() for line in lines]
    assert names[0] == "interpreter and imports" and names[-2] == "Spark stop"
    assert names[-1].startswith("sum")
    seconds = [float(line.rsplit(" ", 2)[1]) for line in lines]
    assert all(s >= 0 for s in seconds) and abs(sum(seconds[:-1]) - seconds[-1]) < 0.01


def test_a_phase_never_reached_is_not_printed() -> None:
    clock = PhaseClock()
    clock.marks.pop("start", None)
    clock.mark("handler")
    clock.wrapping(Recorder(clock))
    clock.mark("reported")  # the tick failed before Spark started
    assert [line for line in clock.lines() if "Spark" in line or "batch" in line] == []


class LazyRecorder(Recorder):
    """An executor whose session starts inside the batch (a local master's, at the first job)."""

    session_window: tuple[float, float] | None = None

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        began = time.time()
        time.sleep(0.05)
        self.session_window = (began, time.time())
        return []


def test_a_session_started_at_the_first_job_is_its_own_line_not_the_batch() -> None:
    clock = PhaseClock()
    clock.mark("handler")
    clock.wrapping(LazyRecorder(clock))
    clock.prepare()
    clock.run_batch([])
    clock.mark("reported")
    clock.close()
    by_name = {line.removeprefix("profile: ").rsplit(" ", 2)[0].strip(): float(line.rsplit(" ", 2)[1])
               for line in clock.lines()}
    assert by_name["Spark session start (at the first job)"] >= 0.05
    assert 0 <= by_name["batch (Spark jobs)"] < 0.05
    total = sum(v for k, v in by_name.items() if not k.startswith("sum"))
    assert abs(total - next(v for k, v in by_name.items() if k.startswith("sum"))) < 0.01


class EarlyRecorder(Recorder):
    """An executor whose session started in the background before the batch and was still
    starting when the batch began (`SparkExecutor.start_early`)."""

    session_window: tuple[float, float] | None = None

    def run_batch(self, works: Sequence[TaskWork], *, closing: bool = False) -> list[TaskOutcome]:
        time.sleep(0.05)  # the batch waits for the rest of the start
        assert self.session_window is not None
        self.session_window = (self.session_window[0], time.time())
        return []


def test_a_session_started_in_the_background_counts_only_the_batchs_wait() -> None:
    clock = PhaseClock()
    clock.mark("handler")
    inner = EarlyRecorder(clock)
    clock.wrapping(inner)
    inner.session_window = (time.time(), time.time())
    time.sleep(0.05)  # the apply, while Spark starts
    clock.prepare()
    clock.run_batch([])
    clock.mark("reported")
    clock.close()
    lines = clock.lines()
    by_name = {line.removeprefix("profile: ").rsplit(" ", 2)[0].strip(): float(line.rsplit(" ", 2)[1])
               for line in lines}
    waited = next(v for k, v in by_name.items() if k.startswith("Spark session start (the batch's wait"))
    assert 0.05 <= waited < 0.1 and by_name["batch (Spark jobs)"] < 0.05
    assert lines[-1].startswith("profile: (Spark session start, all of it, begun") and float(lines[-1].rsplit(" ", 2)[1]) >= 0.1
    summed = [float(line.rsplit(" ", 2)[1]) for line in lines[:-2]]
    assert abs(sum(summed) - float(lines[-2].rsplit(" ", 2)[1])) < 0.01  # the whole start is not summed again
