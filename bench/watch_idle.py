"""Benchmark: what `reconciler watch` costs while it has nothing to do (issue 30, item 6).

    .venv/bin/python bench/watch_idle.py [--connectors 10] [--ticks 1000] [--interval 0.05] [--bootstrap HOST:PORT]

Starts its own Apache Kafka (one KRaft node, `reconciler.devtools.broker`; or uses `--bootstrap`'s,
in a group and topic of a name of its own), writes `--connectors`
`datagen` manifests of `--records` records each, and runs the real container entrypoint,
`reconciler watch DIR --interval S --log-format json --no-http`, as a process. Once its ticks
have moved every record and `--warmup-ticks` more have run, it measures `--ticks` idle ticks
(counted from the process's own `tick` events): the CPU seconds of the whole process tree (the
driver, Spark's JVM, the Python workers) per tick, and the tree's RSS at the start and the end
of them, sampled at ten points between (the driver's own RSS beside it: the JVM's heap grows
and shrinks by itself). A short `--interval` packs an hour-equivalent of ticks into minutes.

Checked before any figure is printed: the process kept running, every measured tick moved
nothing and no connector or task was FAILED, the process stopped on SIGTERM with exit 0, and
the topic holds each id exactly once per connector (read_committed). Otherwise exit 1.

Goal: ≤ 50 ms CPU per idle tick, and no memory growth across 1,000 ticks, judged over their
second half (a step while the allocator settles, then flat, is not growth; both are printed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import psutil
from measure import DATAGEN_MANIFEST, bench_kafka, load_average, megabytes, require  # bench/measure.py

from reconciler.kafka.io.consume import batches_to_end
from reconciler.kafka.settings import KafkaSettings

NAME = "watch-idle"  # of the group and the topic, with the run's id after it
STALL_S = 300.0  # no tick for this long: the process is stuck; say so and stop


@dataclass
class Ticks:
    """What the process's `tick` events said, read by a thread."""

    count: int = 0
    moved: int = 0
    moved_since: int = 0  # records moved since `mark()`
    failed: list[str] = field(default_factory=list)
    last_at: float = field(default_factory=time.monotonic)
    tail: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def read(self, stream: IO[str]) -> None:
        for line in stream:
            self.tail = [*self.tail[-40:], line.rstrip()]
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") != "tick":
                continue
            with self.lock:
                self.count += 1
                self.moved += int(event.get("records_moved", 0))
                self.moved_since += int(event.get("records_moved", 0))
                self.last_at = time.monotonic()
                self.failed += [f"{c.get('name')}: {c.get('state')}" for c in event.get("connectors", [])
                                if c.get("state") == "FAILED" or any(t.get("state") == "FAILED" for t in c.get("tasks", []))]

    def mark(self) -> int:
        with self.lock:
            self.moved_since = 0
            return self.count


def wait_for(process: subprocess.Popen[str], ticks: Ticks, done: Callable[[], bool], what: str) -> None:
    while not done():
        require(process.poll() is None, f"watch exited ({process.returncode}) while {what}:\n" + "\n".join(ticks.tail[-15:]))
        require(time.monotonic() - ticks.last_at < STALL_S, f"no tick for {STALL_S:g} s while {what}")
        time.sleep(0.05)


def tree(pid: int) -> tuple[float, int, int]:
    """(CPU seconds, RSS bytes) of the process and every descendant, and the process's own RSS."""
    root = psutil.Process(pid)
    cpu, rss = 0.0, 0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
            cpu += times.user + times.system + times.children_user + times.children_system
            rss += process.memory_info().rss
        except psutil.Error:
            continue
    return cpu, rss, root.memory_info().rss


def check_topic(settings: KafkaSettings, topic: str, connectors: int, records: int) -> None:
    seen: Counter[bytes] = Counter(m.key() for batch in batches_to_end(settings, [topic]) for m in batch)
    wrong = [k for k, n in seen.items() if n != connectors]
    require(sum(seen.values()) == connectors * records and len(seen) == records and not wrong,
            f"{topic}: {sum(seen.values()):,} records, {len(seen):,} ids, {len(wrong):,} lost or duplicated")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=10)
    parser.add_argument("--records", type=int, default=100, help="records per connector (moved before measuring)")
    parser.add_argument("--ticks", type=int, default=1000, help="idle ticks measured")
    parser.add_argument("--warmup-ticks", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.05, help="watch --interval, seconds")
    parser.add_argument("--bootstrap", help="a running Apache Kafka to use (default: one started for the bench)")
    args = parser.parse_args(argv)
    require(args.ticks >= 10, "--ticks: at least 10")
    workdir = Path(tempfile.mkdtemp(prefix="bench-watch-idle-"))
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    try:
        with bench_kafka(args.bootstrap, workdir / "broker") as kafka:
            settings = kafka.group(NAME, 2)
            name = settings.group_id  # and the data topic's
            manifests = workdir / "manifests"
            manifests.mkdir()
            for index in range(args.connectors):
                connector = f"idle-{index:03d}"
                (manifests / f"{connector}.yaml").write_text(
                    DATAGEN_MANIFEST.format(name=connector, topic=name, count=args.records))
            figures = measure(args, settings, manifests)
            check_topic(settings, name, args.connectors, args.records)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, *figures)
    return 0


def measure(args: argparse.Namespace, settings: KafkaSettings, manifests: Path) -> tuple[float, list[int], list[int]]:
    """(CPU s per idle tick, the tree's RSS samples, the driver's RSS samples)."""
    command = [sys.executable, "-m", "reconciler.cli.main", "watch", str(manifests), "--interval", str(args.interval),
               "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, "--no-http",
               "--log-format", "json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1"})
    ticks = Ticks()
    reader = threading.Thread(target=ticks.read, args=(process.stdout,), daemon=True)
    reader.start()
    try:
        total = args.connectors * args.records
        wait_for(process, ticks, lambda: ticks.moved >= total, f"moving {total:,} records")
        warm = ticks.count + args.warmup_ticks
        wait_for(process, ticks, lambda: ticks.count >= warm, "warming up")
        start = ticks.mark()
        cpu0, rss0, driver0 = tree(process.pid)
        rss, driver = [rss0], [driver0]
        cpu1, counted = cpu0, 0
        for step in range(1, 11):
            target = start + args.ticks * step // 10
            wait_for(process, ticks, lambda t=target: ticks.count >= t, "measuring idle ticks")  # type: ignore[misc]
            cpu1, rss1, driver1 = tree(process.pid)
            counted = ticks.count - start
            rss.append(rss1)
            driver.append(driver1)
        require(ticks.moved_since == 0, f"the idle ticks moved {ticks.moved_since:,} records")
        require(ticks.moved == total, f"watch moved {ticks.moved:,} records, not {total:,}")
        require(not ticks.failed, f"FAILED: {sorted(set(ticks.failed))[:5]}")
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            code = process.wait()
        reader.join(timeout=5)
    require(code == 0, f"watch exited {code} on SIGTERM:\n" + "\n".join(ticks.tail[-15:]))
    return (cpu1 - cpu0) / counted, rss, driver


# A leak grows with the ticks; an allocator settling takes a step or two and stays. So growth is
# judged over the second half of the ticks: at most this much, in the tree and in the driver.
GROWTH_TOLERANCE = 1 * 2**20
CPU_GOAL_S = 0.050


def report(args: argparse.Namespace, cpu_per_tick: float, rss: list[int], driver: list[int]) -> None:
    growth, driver_growth = rss[-1] - rss[0], driver[-1] - driver[0]
    half = len(rss) // 2
    late = max(rss[-1] - rss[half], driver[-1] - driver[half])
    print(f"\nwatch_idle: `reconciler watch` on {args.connectors} idle datagen connectors, --interval {args.interval:g} s, "
          f"{args.ticks:,} idle ticks measured; load average at the end {load_average()} (a loaded machine inflates CPU "
          "seconds less than wall time)")
    print(f"CPU per idle tick (driver + Spark JVM + Python workers): {cpu_per_tick * 1000:.1f} ms   (goal <= 50 ms)")
    print(f"RSS of the process tree over the idle ticks: {megabytes(rss[0])} -> {megabytes(rss[-1])} "
          f"({growth / 2**20:+,.1f} MB); samples: {', '.join(f'{r / 2**20:.0f}' for r in rss)} MB")
    print(f"RSS of the driver alone: {megabytes(driver[0])} -> {megabytes(driver[-1])} ({driver_growth / 2**20:+,.1f} MB); "
          f"samples: {', '.join(f'{r / 2**20:.0f}' for r in driver)} MB   (goal: no growth)")
    print(f"over the second half of the ticks: the tree {(rss[-1] - rss[half]) / 2**20:+,.1f} MB, the driver "
          f"{(driver[-1] - driver[half]) / 2**20:+,.1f} MB")
    cpu_met = "met" if cpu_per_tick <= CPU_GOAL_S else "not met"
    growth_met = "met" if late <= GROWTH_TOLERANCE else "not met"
    print(f"goals: <= {CPU_GOAL_S * 1000:g} ms CPU per idle tick: {cpu_met}; no growth (at most "
          f"{GROWTH_TOLERANCE / 2**20:g} MB over the second half): {growth_met}")


if __name__ == "__main__":
    sys.exit(main())
