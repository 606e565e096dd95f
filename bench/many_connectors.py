"""Benchmark: one `run`/`watch` tick over many connectors (issue 30, item 5).

    .venv/bin/python bench/many_connectors.py [--connectors 1000] [--records 1000] [--runs 3] [--idle-ticks 3] [--bootstrap HOST:PORT]

Starts its own Apache Kafka (one KRaft node, `reconciler.devtools.broker`; or uses `--bootstrap`'s,
in groups and topics of a name of its own) and one Spark session
(`local[*]`), then, in process, exactly what `reconciler run`'s ticks do (`app.tick.TickRunner`:
the apply, then the batch with its statuses), each run in a group and on a topic of its own:

- many: `--connectors` `datagen` connectors of `--records` records each. Its first tick (apply
  them all, start them, move every record), then `--idle-ticks` ticks with nothing to move (every
  count exhausted): the cost of carrying idle connectors;
- one: a single `datagen` connector of `--connectors` × `--records` records, its first tick;
- bare: confluent-kafka alone, no reconciler, no Spark: `--connectors` transactional producers
  (KIP-618's ids), each ONE transaction of `--records` records and 16 offsets records, 32 in
  flight: what any design with a transaction per task per batch pays this broker (its round trips
  and CPU), the floor under the many side.

A fresh broker's JVM is cold: its transaction paths run interpreted until the JIT has seen
thousands of them. Measured on a fresh broker, 1,000 connectors' first tick cost it 42 CPU s; after
three bare rounds of 1,000 transactions, still 25 CPU s, 12.9 of them in its C2 compiler threads;
on a broker that had seen ~10,000, 12.4 CPU s. So before any timed run, the one side once and
the many side `--warm-up-rounds` times (default 2, one record per connector) run untimed and
checked: a long-running Kafka cluster is warm, and whichever side ran first would otherwise pay
for the other.

The two sides alternate (many, one; one, many; …) for `--runs` runs; each figure is the median
with the spread (min–max) beside it, and the many-vs-one ratio is the median of each run's own
ratio. Every run is checked before any figure is printed: no task failed, the ticks moved exactly
what they should (the idle ticks nothing), and the topic read back (read_committed) holds each
id exactly once per connector. A failed check exits 1 with no figure.

Goal: an idle tick over 1,000 connectors ≤ 5 s; the tick moving 1,000 × 1,000 records within 2× of
one connector moving the same million. CPU seconds are of this process and its children (driver,
Spark's JVM, Python workers); the broker's are printed apart (only for a broker the bench started).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import cProfile
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure import (  # bench/measure.py
    DATAGEN_MANIFEST, Spread, TreeMeter, alternating, bench_kafka, load_average, ratios, require,
)

from reconciler.app.tick import TickReport, TickRunner
from reconciler.kafka.io.client import new_producer
from reconciler.kafka.io.admin import create_topic, ensure_topics
from reconciler.kafka.io.consume import batches_to_end
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.manifests import load_or_raise
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.session import start_session, warm_up

PARTITIONS = 2
# The bare side: as many transactions in flight as the shared job has (2 partitions x 16 tasks),
# each with as many offsets records as a datagen task (one per stripe), on Connect's 25
# offsets partitions.
BARE_THREADS = 32
BARE_OFFSETS = 16
OFFSETS_PARTITIONS = 25


@dataclass
class Tick:
    seconds: float
    cpu_s: float
    moved: int
    broker_cpu_s: float = 0.0


@dataclass
class ManyRun:
    first: Tick
    idle: list[Tick]


def timed_tick(runner: TickRunner, paths: list[str], meter: TreeMeter) -> tuple[Tick, TickReport]:
    desired = load_or_raise(paths)
    cpu: dict[str, float] = {}
    with meter.tree(cpu):
        started = time.perf_counter()
        report = runner.tick(desired, manifest_paths=paths)
        seconds = time.perf_counter() - started
    failed = [f"{o.connector}/{o.task_id}: {(o.error or '').strip().splitlines()[-1:]}" for o in report.outcomes if o.error]
    require(not failed, f"{len(failed)} task(s) failed, e.g. {failed[:3]}")
    down = [c.name for c in report.connectors if c.state is None or c.state.value != "RUNNING"]
    require(not down, f"{len(down)} connector(s) not RUNNING after the tick, e.g. {down[:3]}")
    return Tick(seconds, cpu["ours"], sum(o.records for o in report.outcomes), cpu["broker"]), report


PROFILE_TO: Path | None = None  # --profile: the idle ticks' cProfile statistics go there


@contextlib.contextmanager
def profiled(path: Path | None) -> Iterator[None]:
    """cProfile over the block (the driver's Python only: the JVM and the workers are not seen)."""
    if path is None:
        yield
        return
    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(path)


def group_run(
    bootstrap: str, workdir: Path, meter: TreeMeter, group: str, connectors: int, records: int, idle_ticks: int
) -> ManyRun:
    """`connectors` datagen connectors of `records` each in a group of their own: the first tick,
    then the idle ticks; the topic checked to hold each id once per connector."""
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=60)
    ensure_topics(settings)
    create_topic(settings, group, PARTITIONS)
    root = workdir / group
    root.mkdir()
    for index in range(connectors):
        name = f"{group}-{index:05d}"
        (root / f"{name}.yaml").write_text(DATAGEN_MANIFEST.format(name=name, topic=group, count=records))
    paths = [str(root)]
    executor = SparkExecutor(settings)  # joins the session this process started
    runner = TickRunner(settings, executor)
    try:
        first, _ = timed_tick(runner, paths, meter)
        require(first.moved == connectors * records, f"{group}: the first tick moved {first.moved:,}, not {connectors * records:,}")
        with profiled(PROFILE_TO if idle_ticks else None):
            idle = [timed_tick(runner, paths, meter)[0] for _ in range(idle_ticks)]
        require(all(t.moved == 0 for t in idle), f"{group}: an idle tick moved {[t.moved for t in idle]} records")
    finally:
        runner.close()
    check_topic(settings, group, connectors, records)
    return ManyRun(first, idle)


def bare_run(bootstrap: str, meter: TreeMeter, group: str, producers: int, records: int) -> ManyRun:
    """`producers` transactional producers with KIP-618's ids, each ONE transaction of `records`
    records and `BARE_OFFSETS` offsets records, `BARE_THREADS` at a time; the topic checked."""
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=60)
    create_topic(settings, group, PARTITIONS)
    offsets = f"{group}-offsets"
    create_topic(settings, offsets, OFFSETS_PARTITIONS)
    values = [b"v" * 20] * records
    keys = [str(i).encode() for i in range(records)]

    def one(index: int) -> None:
        tuning: dict[str, Any] = {"transactional.id": f"{group}-c{index:05d}-0", "linger.ms": 20}
        producer = new_producer(settings, None, **tuning)
        producer.init_transactions(settings.timeout_s)
        producer.begin_transaction()
        for key, value in zip(keys, values, strict=True):
            producer.produce(group, value, key)
        for stripe in range(BARE_OFFSETS):
            producer.produce(offsets, b'{"position":1}', f'["c{index}",{{"stripe":{stripe}}}]'.encode())
        producer.flush(settings.timeout_s)
        producer.commit_transaction(settings.timeout_s)

    cpu: dict[str, float] = {}
    with meter.tree(cpu):
        started = time.perf_counter()
        with ThreadPoolExecutor(BARE_THREADS) as threads:
            list(threads.map(one, range(producers)))
        seconds = time.perf_counter() - started
    check_topic(settings, group, producers, records)
    return ManyRun(Tick(seconds, cpu["ours"], producers * records, cpu["broker"]), [])


def check_topic(settings: KafkaSettings, topic: str, connectors: int, records: int) -> None:
    """Each id 0…records-1 exactly `connectors` times in the topic, nothing else (read_committed)."""
    seen: collections.Counter[bytes] = collections.Counter()
    for batch in batches_to_end(settings, [topic]):
        seen.update(message.key() for message in batch)
    total = sum(seen.values())
    wrong = [key for key, n in seen.items() if n != connectors]
    require(
        total == connectors * records and len(seen) == records and not wrong,
        f"{topic}: {total:,} records, {len(seen):,} distinct ids (expected {records:,} ids × {connectors:,}); "
        f"{len(wrong):,} ids lost or duplicated",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connectors", type=int, default=1000)
    parser.add_argument("--records", type=int, default=1000, help="records per connector")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--idle-ticks", type=int, default=3, help="idle ticks per run of the many side")
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("--profile", type=Path, help="write the idle ticks' cProfile statistics to this file")
    parser.add_argument("--bootstrap", help="a running Apache Kafka to use (default: one started for the bench)")
    parser.add_argument("--warm-up-rounds", type=int, default=2,
                        help="untimed many-side rounds of one record per connector first (0: time a cold broker)")
    args = parser.parse_args(argv)
    global PROFILE_TO  # noqa: PLW0603 (a bench's switch, read by group_run)
    PROFILE_TO = args.profile
    require(args.idle_ticks >= 1 and args.connectors >= 1 and args.records >= 1, "sizes must be at least 1")
    workdir = Path(tempfile.mkdtemp(prefix="bench-many-"))
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    try:
        with bench_kafka(args.bootstrap, workdir / "broker") as kafka:
            runs = measure(args, kafka.bootstrap, kafka.pid, kafka.run_id, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, runs)
    return 0


def measure(args: argparse.Namespace, bootstrap: str, broker_pid: int | None, run_id: str,
            workdir: Path) -> dict[str, list[ManyRun]]:
    """Both sides, alternating, on one Spark session."""
    session = start_session(args.spark_master)
    try:
        warm_up(Spark.over(session))
        meter = TreeMeter(set() if broker_pid is None else {broker_pid}, broker_pid)
        counter = iter(range(10**6))

        def side(connectors: int, records: int, idle: int) -> Callable[[], ManyRun]:
            return lambda: group_run(bootstrap, workdir, meter, f"m{next(counter)}-{connectors}-{run_id}", connectors,
                                     records, idle)

        def bare(producers: int, records: int) -> Callable[[], ManyRun]:
            return lambda: bare_run(bootstrap, meter, f"b{next(counter)}-{producers}-{run_id}", producers, records)

        if args.warm_up_rounds:  # untimed, still checked: the workers' imports, and the broker's transaction paths
            started = time.perf_counter()
            for warm in (side(1, args.connectors, 0), *[side(args.connectors, 1, 0)] * args.warm_up_rounds):
                warm()
            print(f"warm-up: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        return alternating(args.runs, {
            "many": side(args.connectors, args.records, args.idle_ticks),
            "one": side(1, args.connectors * args.records, 0),
            "bare": bare(args.connectors, args.records),
        })
    finally:
        session.stop()


def report(args: argparse.Namespace, runs: dict[str, list[ManyRun]]) -> None:
    n, total = args.connectors, args.connectors * args.records
    idle = [tick for run in runs["many"] for tick in run.idle]
    idle_s = Spread.of([t.seconds for t in idle])
    idle_cpu = Spread.of([t.cpu_s for t in idle])
    many = Spread.of([r.first.seconds for r in runs["many"]])
    one = Spread.of([r.first.seconds for r in runs["one"]])
    ratio = Spread.of([m.first.seconds / o.first.seconds for m, o in zip(runs["many"], runs["one"], strict=True)])
    print(f"\nmany_connectors: {n:,} datagen connectors, Spark {args.spark_master}, Apache Kafka "
          f"{f'at {args.bootstrap}' if args.bootstrap else '(one KRaft node) on loopback'}; {args.runs} runs alternating, median (min–max); load average at the end {load_average()}")
    print(f"idle tick over {n:,} connectors (nothing to move), {len(idle)} ticks: {idle_s.show()} = "
          f"{idle_s.median / n * 1000:.1f} ms per connector; CPU {idle_cpu.show('CPU s')}   (goal <= 5 s at 1,000)")
    bare = Spread.of([r.first.seconds for r in runs["bare"]])
    print(f"first tick, {n:,} connectors x {args.records:,} records (apply + start + move): {many.show()}, "
          f"{cpu_of_side(runs['many'])}")
    print(f"first tick, one connector x {total:,} records: {one.show()}, {cpu_of_side(runs['one'])}")
    print(f"bare transactions, confluent-kafka alone: {n:,} producers x one transaction of {args.records:,} records, "
          f"{BARE_THREADS} at a time: {bare.show()}, {cpu_of_side(runs['bare'])}")
    print(f"many / one: {ratio.show('x')}   (goal <= 2x)")
    print(f"bare / one: {ratios([r.first.seconds for r in runs['bare']], [r.first.seconds for r in runs['one']]).show('x')}"
          f"   (the floor of a transaction per task on this broker)")


def cpu_of_side(runs: list[ManyRun]) -> str:
    ours = Spread.of([r.first.cpu_s for r in runs]).show("CPU s")
    broker = Spread.of([r.first.broker_cpu_s for r in runs])
    return f"CPU {ours}" + (f", broker {broker.show('CPU s')}" if broker.high > 0 else "")


if __name__ == "__main__":
    sys.exit(main())
