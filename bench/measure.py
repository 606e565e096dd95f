"""Measuring a benchmark phase: wall time, CPU seconds and peak memory, for each side.

- A process run to its end (kcat, `reconciler run --once`): `run_measured` waits for it with
  `os.wait4`, whose CPU times include every descendant it reaped. This process is made a
  child subreaper first (`become_subreaper`), so descendants orphaned on the way (Spark's JVM
  outlives the Python driver by a moment) are re-parented here and reaped with `wait4` too:
  the CPU seconds are exact, not sampled, except for children reaped by a parent that ignores
  SIGCHLD (PySpark's Python workers), whose time no one is told: they are sampled every
  `SAMPLE_S` (what they spend after their last sample is missed). Peak memory is the largest
  sum of the tree's RSS, sampled every `SAMPLE_S`, or a single process's own high-water mark
  if that is larger (kcat is one process: its figure is its exact peak).
- A process that keeps running (the broker, the Java Connect worker): `JvmMeter` takes the
  difference of its CPU times over the phase and samples its RSS.
- The Kafka a bench runs on: `bench_kafka`, `--bootstrap`'s or one it starts.
- This process and its children (throughput.py runs Spark in process): `TreeMeter` and
  `MemorySampler`, the difference of the tree's CPU times and its sampled RSS.
- A standalone Spark cluster's workers (their executors and Python workers come and go with
  each application): `ClusterMeter` samples every process under the worker JVMs, counting
  each one's CPU seconds from its first sample in the phase (or from 0 when it started in the
  phase) to its last, and the largest sum of their RSS.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TypeVar

import psutil

from reconciler.devtools.broker import start_broker
from reconciler.kafka.io.admin import create_topic, ensure_topics
from reconciler.kafka.settings import KafkaSettings, Topics

# One sample costs a few ms of CPU in this process: often enough for a peak, rarely enough
# not to slow what it measures.
SAMPLE_S = 0.1
PR_SET_CHILD_SUBREAPER = 36
ORPHAN_WAIT_S = 60.0


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


@dataclass(frozen=True)
class BenchKafka:
    """The Kafka a bench runs on, and a suffix that keeps its groups and topics apart from
    another run's on the same cluster."""

    bootstrap: str
    pid: int | None  # the broker this bench started (its CPU is measured); None for `--bootstrap`'s
    run_id: str

    def group(self, name: str, partitions: int) -> KafkaSettings:
        """A group of this run's own (`name`-run id), its internal topics and a data topic of the
        same name with `partitions` made."""
        unique = f"{name}-{self.run_id}"
        settings = KafkaSettings(bootstrap_servers=self.bootstrap, group_id=unique, topics=Topics.for_group(unique),
                                 timeout_s=60)
        ensure_topics(settings)
        create_topic(settings, unique, partitions)
        return settings


@contextmanager
def bench_kafka(bootstrap: str | None, log_dir: Path) -> Iterator[BenchKafka]:
    """`--bootstrap`'s Kafka, else one KRaft node started for the bench and stopped after it (the
    tests run the benches on their session's broker: a broker's start is seconds of CI)."""
    run_id = uuid.uuid4().hex[:6]
    if bootstrap:
        yield BenchKafka(bootstrap, None, run_id)
        return
    broker = start_broker(log_dir)
    try:
        yield BenchKafka(broker.bootstrap, broker.pid, run_id)
    finally:
        broker.stop(timeout_s=5.0)


def cpu_of(pid: int | None) -> float:
    """CPU seconds (user + system) a live process has used, 0.0 when it is gone (or not ours: None)."""
    if pid is None:
        return 0.0
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:
        return 0.0
    return float(times.user + times.system)


def high_water_rss(pid: int) -> int:
    """A process's peak RSS since it exec'd (VmHWM), in bytes; 0 when it is gone.

    Not `ru_maxrss` from wait4: Linux keeps that across exec, so a child forked from this
    large Python process would report this process's size."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def become_subreaper() -> None:
    """Orphaned descendants come to this process (not init), so their CPU can be counted."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


@dataclass
class Usage:
    """What one side used in a phase."""

    seconds: float = 0.0
    cpu_s: float = 0.0
    peak_rss: int = 0  # bytes


# --- processes run to their end -------------------------------------------------------------


class TreeSampler:
    """Samples a process tree (members that were orphaned included): the peak of its summed
    RSS, and the CPU seconds `wait4` cannot see.

    A child whose parent ignores SIGCHLD is reaped by the kernel and its CPU time is added to
    no one (PySpark's daemon does this to its Python workers), so for those the last sample of
    their own CPU time is counted instead (`unreaped_cpu`)."""

    def __init__(self, root: int) -> None:
        self.root, self.seen, self.peak, self.high_water = root, {root}, 0, 0
        self.unreaped: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tree-sampler")
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_S)

    def sample(self) -> None:
        try:
            self.seen.update(p.pid for p in psutil.Process(self.root).children(recursive=True))
        except psutil.Error:
            pass
        total = 0
        for pid in list(self.seen):
            try:
                process = psutil.Process(pid)
                total += process.memory_info().rss
                if pid in self.unreaped or _ignores_sigchld(process.ppid()):
                    times = process.cpu_times()
                    self.unreaped[pid] = times.user + times.system
            except psutil.Error:
                continue
            self.high_water = max(self.high_water, high_water_rss(pid))
        self.peak = max(self.peak, total, self.high_water)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _ignores_sigchld(pid: int) -> bool:
    """Whether `pid` ignores SIGCHLD (its children are then reaped without accounting)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("SigIgn:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGCHLD - 1)))
    except (OSError, ValueError):
        pass
    return False


def run_measured(
    command: list[str], *, stdout: IO[bytes] | int | None = subprocess.DEVNULL, env: dict[str, str] | None = None,
    stdin: IO[bytes] | int | None = subprocess.DEVNULL, stderr: IO[bytes] | int | None = None,
) -> tuple[int, Usage]:
    """Run `command` to its end: its exit code, and its wall time, exact CPU seconds (with
    every descendant's) and peak RSS (summed over the tree, sampled)."""
    earlier = _my_children()  # the broker, a Connect worker…: not this command's
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=stdout, stdin=stdin, stderr=stderr, env=env)
    sampler = TreeSampler(process.pid)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    sampler.stop()
    cpu = usage.ru_utime + usage.ru_stime + _reap_orphans(earlier, sampler.unreaped)
    return process.returncode, Usage(seconds, cpu + sum(sampler.unreaped.values()), sampler.peak)


def _my_children() -> set[int]:
    return {child.pid for child in psutil.Process().children()}


def _reap_orphans(earlier: set[int], unreaped: dict[int, float]) -> float:
    """Wait for the command's descendants that outlived their parents: as a subreaper, this
    process inherits every one of them (any child not in `earlier`), and `wait4` gives their
    CPU seconds with those of the children they reaped. One that was sampled as unreaped (its
    parent ignored SIGCHLD, then died first) is counted here instead, exactly. A process still
    running after ORPHAN_WAIT_S is counted by its CPU so far."""
    cpu, deadline = 0.0, time.monotonic() + ORPHAN_WAIT_S
    while time.monotonic() < deadline:
        orphans = _my_children() - earlier
        if not orphans:
            return cpu
        for pid in orphans:
            try:
                done, _, usage = os.wait4(pid, os.WNOHANG)
            except ChildProcessError:
                continue
            if done:
                cpu += usage.ru_utime + usage.ru_stime
                unreaped.pop(pid, None)
        time.sleep(0.05)
    return cpu + sum(cpu_of(pid) for pid in _my_children() - earlier)


# --- processes that keep running ------------------------------------------------------------


class JvmMeter:
    """CPU seconds and peak RSS of a running process (the broker, the Connect worker) over a phase."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    @contextmanager
    def phase(self, into: Usage) -> Iterator[None]:
        before = cpu_of(self.pid)
        sampler = TreeSampler(self.pid)
        try:
            yield
        finally:
            sampler.stop()
            into.cpu_s = cpu_of(self.pid) - before
            into.peak_rss = sampler.peak


class ClusterMeter:
    """CPU seconds and peak RSS of the processes under `roots` (the cluster's worker JVMs) over
    a phase, sampled every SAMPLE_S: an executor's last moments after its last sample are
    missed, and so is a process that lived less than SAMPLE_S."""

    def __init__(self, roots: list[int]) -> None:
        self.roots = roots

    def _tree(self) -> dict[int, tuple[float, int]]:
        found: dict[int, tuple[float, int]] = {}
        for root in self.roots:
            try:
                processes = [psutil.Process(root), *psutil.Process(root).children(recursive=True)]
            except psutil.Error:
                continue
            for process in processes:
                try:
                    times = process.cpu_times()
                    found[process.pid] = (times.user + times.system, process.memory_info().rss)
                except psutil.Error:
                    continue
        return found

    @contextmanager
    def phase(self, into: Usage) -> Iterator[None]:
        baseline = {pid: cpu for pid, (cpu, _) in self._tree().items()}
        last: dict[int, float] = dict(baseline)
        peak, stop = 0, threading.Event()

        def sample() -> None:
            nonlocal peak
            while True:
                tree = self._tree()
                last.update({pid: cpu for pid, (cpu, _) in tree.items()})
                peak = max(peak, sum(rss for _, rss in tree.values()))
                if stop.wait(SAMPLE_S):
                    return

        thread = threading.Thread(target=sample, daemon=True, name="cluster-sampler")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
            into.cpu_s = sum(cpu - baseline.get(pid, 0.0) for pid, cpu in last.items())
            into.peak_rss = peak


# --- this process's tree (Spark in process) ---------------------------------------------------


@dataclass
class MemorySampler:
    """Peak RSS of this process and its descendants, minus the ones excluded, by part."""

    excluded_pids: set[int] = field(default_factory=set)
    excluded_names: frozenset[str] = frozenset({"kcat"})
    peak_total: int = 0
    peak_parts: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True, name="memory-sampler")
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def _run(self) -> None:
        me = psutil.Process()
        while not self._stop.is_set():
            self.sample(me)
            self._stop.wait(SAMPLE_S * 2)

    def sample(self, me: psutil.Process) -> None:
        parts = {"driver": 0, "jvm": 0, "python workers": 0}
        try:
            parts["driver"] = me.memory_info().rss
            children = me.children(recursive=True)
        except psutil.Error:
            return
        for child in children:
            try:
                name = child.name()
                if child.pid in self.excluded_pids or name in self.excluded_names:
                    continue
                parts["jvm" if name == "java" else "python workers"] += child.memory_info().rss
            except psutil.Error:
                continue
        total = sum(parts.values())
        if total > self.peak_total:
            self.peak_total, self.peak_parts = total, parts


@dataclass
class TreeMeter:
    """CPU seconds in a phase: by our process tree (driver, Spark's JVM, Python workers) and by
    the broker (Kafka's JVM). Unlike wall time,
    these hardly change with other work on the machine, so they say what each path costs."""

    excluded_pids: set[int]
    broker_pid: int | None

    def _tree(self) -> dict[int, float]:
        me = psutil.Process()
        times = {}
        for process in [me, *me.children(recursive=True)]:
            try:
                if process.pid not in self.excluded_pids:
                    cpu = process.cpu_times()
                    times[process.pid] = cpu.user + cpu.system
            except psutil.Error:
                continue
        return times

    @contextmanager
    def tree(self, into: dict[str, float]) -> Iterator[None]:
        before, broker = self._tree(), cpu_of(self.broker_pid)
        yield
        after = self._tree()
        into["ours"] = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
        into["broker"] = cpu_of(self.broker_pid) - broker


def file_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))


def megabytes(size: int) -> str:
    return f"{size / 2**20:,.0f} MB"


# --- figures that cannot lie: checked results, medians of alternating runs ------------------

T = TypeVar("T")
FAILED = "FAILED, no figure printed: "


class RunFailed(SystemExit):
    """A timed run that did not do what it was timed for: no figure is printed for it, and the
    bench exits non-zero with this message."""

    def __init__(self, message: str) -> None:
        super().__init__(f"{FAILED}{message}")


def require(ok: bool, message: str) -> None:
    """Refuse a figure for a run whose result is wrong (`RunFailed`, a non-zero exit)."""
    if not ok:
        raise RunFailed(message)


@dataclass(frozen=True)
class Spread:
    """The median of several runs, with their smallest and largest."""

    median: float
    low: float
    high: float
    runs: int

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        require(bool(values), "no run to take a median of")
        ordered = sorted(values)
        middle = len(ordered) // 2
        median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
        return cls(median, ordered[0], ordered[-1], len(ordered))

    def show(self, unit: str = "s", digits: int = 2) -> str:
        """`1.23 s (1.10–1.40, 3 runs)`."""
        return f"{self.median:.{digits}f} {unit} ({self.low:.{digits}f}–{self.high:.{digits}f}, {self.runs} runs)".replace(
            " )", ")"
        )


def ratios(ours: list[float], reference: list[float]) -> Spread:
    """Run i's ratio ours[i] / reference[i], over runs whose sides alternated."""
    require(len(ours) == len(reference), "sides ran a different number of times")
    require(all(r > 0 for r in reference), f"a reference time of 0 s in {reference}: no ratio to it")
    return Spread.of([a / b for a, b in zip(ours, reference, strict=True)])


def alternating(runs: int, sides: dict[str, Callable[[], T]]) -> dict[str, list[T]]:
    """Each side `runs` times, the sides taking turns and the first side changing each round
    (A B, B A, A B…), so a machine getting busier or quieter weighs on both alike."""
    require(runs >= 1, "at least one run")
    results: dict[str, list[T]] = {name: [] for name in sides}
    order = list(sides)
    for round_ in range(runs):
        for name in order if round_ % 2 == 0 else reversed(order):
            results[name].append(sides[name]())
    return results


def run_notes(notes: list[list[str]]) -> list[str]:
    """The runs' notes, each once: as it is when every run made it, else after the runs that
    did (`run 2: …`)."""
    runs: dict[str, list[int]] = {}
    for number, made in enumerate(notes, 1):
        for note in made:
            runs.setdefault(note, []).append(number)
    return [note if len(made) == len(notes) else f"run {', '.join(map(str, made))}: {note}"
            for note, made in runs.items()]


# One small `datagen` connector: the idle-tick benchmarks (many_connectors, watch_idle) write N.
DATAGEN_MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: {name}
spec:
  class: datagen
  tasksMax: 1
  config:
    topic: {topic}
    count: {count}
    record.bytes: 20
"""
