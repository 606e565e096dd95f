"""Throughput of the Spark runtime against kcat, on one topic (issue 4, issue 30).

    .venv/bin/python bench/throughput.py [--records 1000000] [--record-bytes 100] [--partitions 2] [--runs 3]

Starts its own Apache Kafka (one KRaft node, `reconciler.devtools.broker`) on loopback, then:
  (b) `datagen` source → a new topic, one batch on Spark, vs `kcat -P` producing the same key/value
      bytes from a file into a new topic with as many partitions, vs (for scale, "floor") one
      process producing them with confluent-kafka (`produce()` per record, no transaction, no Spark);
  (a) one of those datagen topics → `parquet-sink`, one batch on Spark, vs `kcat -C` reading the
      same topic to the end, vs one process consuming it with confluent-kafka (records untouched).

The sides take turns for `--runs` rounds (ours, kcat, floor; floor, kcat, ours; …: bench/measure.py
`alternating`), so a machine getting busier or quieter weighs on all alike; each figure is the
median of the runs with their spread (min–max) beside it, and each ratio to kcat is the median of
the rounds' own ratios. Every run is checked before any figure is printed (a failed check exits 1,
no figure: `measure.RunFailed`): no task failed and the batch moved exactly `--records`; kcat exited
0, its topic holds `--records` records (`-P`) and it printed one line per record (`-C`); the sink's
Parquet files hold `--records` rows with as many distinct keys, one per datagen id (so each source
run's topic, which a sink round reads, held each record exactly once) and the floor delivered or
read every record.

Prints records/s, MB/s (key + value bytes) and the ratio to kcat, the Spark session start (with the
workers' warm-up) separately, CPU seconds of each path and of the broker (the Kafka JVM, in the
same phase), and peak memory: of the Spark runs (this process, the driver; Spark's JVM; the Python
workers; sampled with psutil, the broker not counted) and of kcat (its exact high-water mark).

The reference client is Debian's `kcat`, as Debian ships it (`apt-get install -y kcat`), given
the librdkafka settings our own clients use on the same path (bench/kcat.py says which, and why).
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import repeat
from operator import length_hint
from pathlib import Path
from typing import TYPE_CHECKING

from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import (  # bench/measure.py
    MemorySampler,
    Spread,
    TreeMeter,
    alternating,
    cpu_of,
    load_average,
    megabytes,
    ratios,
    require,
    run_measured,
)

from reconciler.connectors.datagen import DatagenConnector, DatagenTask
from reconciler.core.kinds import Kind
from reconciler.devtools.broker import start_broker
from reconciler.kafka.io.admin import create_topic, ensure_topics  # ours: usable once it returns
from reconciler.kafka.io.client import new_producer
from reconciler.kafka.io.consume import batches_to_end, end_offsets
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork
from reconciler.runtime.executor import SparkExecutor
from reconciler.runtime.source.task import PRODUCER_TUNING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SIDES = ("ours", "kcat", "floor")


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Measure:
    label: str
    seconds: float
    records: int
    payload_bytes: int
    cpu: dict[str, float] = field(default_factory=dict)  # "ours", "broker": CPU seconds
    peak_rss: int | None = None  # bytes


def datagen_config(name: str, topic: str, records: int, record_bytes: int, tasks: int) -> dict[str, str | None]:
    return {
        "name": name, "connector.class": "datagen", "tasks.max": str(tasks),
        "topic": topic, "count": str(records), "record.bytes": str(record_bytes),
    }


def datagen_records(config: dict[str, str | None]) -> tuple[list[bytes], list[bytes]]:
    """Every record of a datagen connector's life: its keys and values, in id order."""
    task = DatagenTask({**{k: v for k, v in config.items() if v is not None}, "shards": "1", "batch.size": str(10**9)})
    batch = task.poll_batch({}, 10**9)
    return [k or b"" for k in batch.keys], [v or b"" for v in batch.values]


def write_kcat_input(keys: list[bytes], values: list[bytes], path: Path) -> int:
    """The records as `key<TAB>value` lines; returns the key + value bytes."""
    with path.open("wb") as out:
        out.writelines(k + b"\t" + v + b"\n" for k, v in zip(keys, values, strict=True))
    return sum(map(len, keys)) + sum(map(len, values))


def moved(outcomes: list[TaskOutcome]) -> int:
    failed = [(o.error or "").strip().splitlines()[-1:] for o in outcomes if o.error]
    require(not failed, f"{len(failed)} task(s) failed: {failed}")
    return sum(o.records for o in outcomes)


def parquet_check(path: Path) -> tuple[int, int]:
    """(rows, distinct keys) of the Parquet files a sink run wrote."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    files = [f for f in path.rglob("*.parquet") if not f.name.startswith(".")]
    require(bool(files), f"no Parquet file under {path}")
    keys = [pq.read_table(f, columns=["key"]).column("key") for f in files]
    rows = sum(len(k) for k in keys)
    return rows, pc.count_distinct(pa.chunked_array([c for k in keys for c in k.chunks], pa.binary())).as_py()


class LineCounter:
    """Counts the lines written to a pipe (kcat -C's stdout), in a thread of this process: what
    kcat printed is checked without a file to write and read back."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self.lines = 0
        self._thread = threading.Thread(target=self._count, daemon=True, name="kcat-lines")
        self._thread.start()

    def _count(self) -> None:
        with os.fdopen(self.read_fd, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 20):
                self.lines += chunk.count(b"\n")

    def close(self) -> int:
        os.close(self.write_fd)  # the child's copy closed when it exited: now the reader sees EOF
        self._thread.join()
        return self.lines


@contextmanager
def phase(title: str) -> Iterator[None]:
    print(f"  {title}…", file=sys.stderr, flush=True)
    yield


@dataclass
class Bench:
    """What every run shares; each run writes a topic (or a directory) of its own."""

    args: argparse.Namespace
    kcat: str
    workdir: Path
    broker_pid: int | None  # None: a broker this bench cannot see (its CPU is not counted)
    settings: KafkaSettings
    executor: SparkExecutor
    meter: TreeMeter
    sampler: MemorySampler
    keys: list[bytes]
    values: list[bytes]
    payload: int
    datagen_topics: list[str] = field(default_factory=list)  # the source runs', which the sink runs read
    names: Iterator[int] = field(default_factory=itertools.count)

    @property
    def records(self) -> int:
        return int(self.args.records)

    def broker_cpu(self) -> float:
        return float("nan") if self.broker_pid is None else cpu_of(self.broker_pid)

    @contextmanager
    def metered(self, into: dict[str, float]) -> Iterator[None]:
        """CPU seconds of our process tree and of the broker (NaN: a broker not seen) into `into`."""
        with self.meter.tree(into):
            yield
        if self.broker_pid is None:
            into["broker"] = float("nan")

    def new_topic(self, prefix: str) -> str:
        topic = f"bench-{prefix}-{next(self.names)}"
        create_topic(self.settings, topic, self.args.partitions)
        return topic

    def topic_records(self, topic: str) -> int:
        """Records a topic holds, for topics no transaction wrote (end offsets = records)."""
        return sum(end_offsets(self.settings, topic, isolation_level="read_uncommitted").values())

    def spark_run(self, label: str, works: list[TaskWork]) -> Measure:
        measure = Measure(label, 0.0, 0, self.payload)
        self.sampler.peak_total = 0
        with self.metered(measure.cpu):
            started = time.perf_counter()
            outcomes = self.executor.run_batch(works)
            measure.seconds = time.perf_counter() - started
        measure.records, measure.peak_rss = moved(outcomes), self.sampler.peak_total
        require(measure.records == self.records, f"{label}: moved {measure.records:,} records, not {self.records:,}")
        return measure

    def kcat_run(self, label: str, command: list[str], counter: LineCounter | None = None) -> Measure:
        broker_before = self.broker_cpu()
        stdout = counter.write_fd if counter is not None else None
        code, usage = run_measured(command, stdout=stdout if stdout is not None else subprocess.DEVNULL)
        lines = counter.close() if counter is not None else None
        require(code == 0, f"kcat exited with {code}: {' '.join(command)}")
        if lines is not None:
            require(lines == self.records, f"{label}: kcat printed {lines:,} records, not {self.records:,}")
        cpu = {"ours": usage.cpu_s, "broker": self.broker_cpu() - broker_before}
        return Measure(label, usage.seconds, self.records, self.payload, cpu, usage.peak_rss)


# --- (b) the source path: records → a new topic ---------------------------------------------


def source_ours(bench: Bench) -> Measure:
    topic, n, args = bench.new_topic("datagen"), next(bench.names), bench.args
    config = datagen_config(f"bench-datagen-{n}", topic, args.records, args.record_bytes, args.partitions)
    task_configs = DatagenConnector().task_configs(config, args.partitions)
    works = [TaskWork(connector=f"bench-datagen-{n}", task_id=i, connector_class="datagen", kind=Kind.SOURCE,
                      connector_config=config, task_config=tc, task_count=len(task_configs))
             for i, tc in enumerate(task_configs)]
    measure = bench.spark_run("(b) datagen → topic, Spark", works)
    bench.datagen_topics.append(topic)  # its records are checked when a sink run reads it
    return measure


def source_kcat(bench: Bench, kcat_input: Path) -> Measure:
    topic = bench.new_topic("kcat")
    command = [bench.kcat, "-b", bench.settings.bootstrap_servers, "-P", "-t", topic, "-K", "\t", "-l",
               str(kcat_input), *producer_flags()]
    measure = bench.kcat_run("    kcat -P from a file", command)
    held = bench.topic_records(topic)
    require(held == bench.records, f"kcat -P: {topic} holds {held:,} records, not {bench.records:,}")
    return measure


def source_floor(bench: Bench) -> Measure:
    """One process producing the records with confluent-kafka, as a source task does (`produce()`
    per record iterated in C, resuming at the record that did not fit), without a transaction."""
    topic = bench.new_topic("floor")
    keys, values = bench.keys, bench.values
    producer = new_producer(bench.settings, **PRODUCER_TUNING)
    measure = Measure("    confluent-kafka produce()", 0.0, len(values), bench.payload)
    with bench.metered(measure.cpu):
        started = time.perf_counter()
        position, count = 0, len(values)
        while position < count:
            end = min(count, position + 100_000)
            pending = iter(values[position:end])
            try:
                deque(map(producer.produce, repeat(topic, end - position), pending, keys[position:end]), maxlen=0)
                position = end
                producer.poll(0)
            except BufferError:  # the local queue is full: let deliveries drain it
                position = end - length_hint(pending) - 1
                producer.poll(0.05)
        left = producer.flush(60)
        measure.seconds = time.perf_counter() - started
    require(left == 0, f"floor: {left:,} records not delivered")
    held = bench.topic_records(topic)
    require(held == bench.records, f"floor: {topic} holds {held:,} records, not {bench.records:,}")
    return measure


# --- (a) the sink path: a datagen topic → Parquet ---------------------------------------------


def sink_ours(bench: Bench, round_: int) -> Measure:
    topic, tasks = bench.datagen_topics[round_], bench.args.partitions
    name, path = f"bench-sink-{round_}", bench.workdir / f"parquet-{round_}"
    config: dict[str, str | None] = {
        "name": name, "connector.class": "parquet-sink", "tasks.max": str(tasks), "topics": topic, "path": str(path),
    }
    plain = {k: v for k, v in config.items() if v is not None}
    works = [TaskWork(connector=name, task_id=i, connector_class="parquet-sink", kind=Kind.SINK,
                      connector_config=config, task_config=plain, task_count=tasks) for i in range(tasks)]
    measure = bench.spark_run("(a) topic → parquet-sink, Spark", works)
    rows, keys = parquet_check(path)
    require(rows == keys == bench.records, f"{name}: {rows:,} rows with {keys:,} distinct keys, not {bench.records:,}")
    return measure


def sink_kcat(bench: Bench, round_: int) -> Measure:
    command = [bench.kcat, "-b", bench.settings.bootstrap_servers, "-C", "-t", bench.datagen_topics[round_],
               "-o", "beginning", "-e", "-q", *consumer_flags()]
    return bench.kcat_run("    kcat -C, lines counted", command, LineCounter())


def sink_floor(bench: Bench, round_: int) -> Measure:
    """One process consuming the topic to its end with confluent-kafka, the records untouched."""
    measure = Measure("    confluent-kafka consume", 0.0, 0, bench.payload)
    with bench.metered(measure.cpu):
        started = time.perf_counter()
        measure.records = sum(map(len, batches_to_end(bench.settings, [bench.datagen_topics[round_]])))
        measure.seconds = time.perf_counter() - started
    require(measure.records == bench.records, f"floor: read {measure.records:,} records, not {bench.records:,}")
    return measure


# --- the bench ------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions = tasks (default 2)")
    parser.add_argument("--runs", type=int, default=3, help="rounds of each side, alternating (default 3)")
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("-v", "--verbose", action="store_true", help="the runtime's timings (debug log)")
    args = parser.parse_args(argv)
    require(args.records >= 1 and args.runs >= 1 and args.partitions >= 1, "sizes must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Its own broker and Spark session, both stopped at the end."""
    from reconciler.runtime.spark.handle import Spark
    from reconciler.runtime.spark.session import start_session, warm_up

    args = parse(argv)
    if args.verbose:
        logging.basicConfig(level=logging.WARNING, format="%(relativeCreated)8.0f ms %(name)s: %(message)s")
        logging.getLogger("reconciler.runtime").setLevel(logging.DEBUG)
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    try:
        with start_broker(workdir / "broker") as broker, phase("starting Spark"):
            started = time.perf_counter()
            session = start_session(args.spark_master)
            session_s = time.perf_counter() - started
            try:
                warm_up(Spark.over(session))
                warm_s = time.perf_counter() - started - session_s
                print(f"Spark session start: {session_s:.1f} s, + {warm_s:.1f} s Python worker warm-up (not counted)")
                measure(args, workdir, broker.bootstrap, broker.pid, session)
            finally:
                session.stop()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def in_session(argv: list[str], session: SparkSession, bootstrap: str, broker_pid: int | None) -> None:
    """The bench on a running broker and Spark session, left running (the tests' tiny run)."""
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    try:
        measure(parse(argv), workdir, bootstrap, broker_pid, session)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure(args: argparse.Namespace, workdir: Path, bootstrap: str, broker_pid: int | None, session: SparkSession) -> None:
    """Every round of every side, checked, then the report. A group and topics of its own."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=60)
    ensure_topics(settings)
    keys, values = datagen_records(datagen_config("bench", "bench", args.records, args.record_bytes, args.partitions))
    kcat_input = workdir / "records.tsv"
    payload = write_kcat_input(keys, values, kcat_input)
    sampler = MemorySampler(excluded_pids=set() if broker_pid is None else {broker_pid})
    executor = SparkExecutor(settings, master=args.spark_master, source_batch_records=args.records)
    bench = Bench(args, kcat_binary(), workdir, broker_pid, settings, executor,
                  TreeMeter(set(sampler.excluded_pids), broker_pid or 0), sampler, keys, values, payload)
    sampler.start()
    try:
        with phase(f"(b) source: datagen on Spark, kcat -P, confluent-kafka, {args.runs} rounds alternating"):
            source = alternating(args.runs, {
                "ours": lambda: source_ours(bench), "kcat": lambda: source_kcat(bench, kcat_input),
                "floor": lambda: source_floor(bench),
            })
        with phase(f"(a) sink: parquet-sink on Spark, kcat -C, confluent-kafka, {args.runs} rounds alternating"):
            sink = alternating(args.runs, {side: rounds(bench, run) for side, run in
                                           (("ours", sink_ours), ("kcat", sink_kcat), ("floor", sink_floor))})
    finally:
        sampler.stop()
        executor.close()
    report(args, {"source": source, "sink": sink})


def rounds(bench: Bench, run: Callable[[Bench, int], Measure]) -> Callable[[], Measure]:
    """`run` for round 0, 1, …: round i of every sink side reads the topic of source round i."""
    counter = itertools.count()
    return lambda: run(bench, next(counter))


def report(args: argparse.Namespace, paths: dict[str, dict[str, list[Measure]]]) -> None:
    print(
        f"\nthroughput: {args.records:,} records (~{args.record_bytes} B values), topics with {args.partitions} "
        f"partitions, Spark {args.spark_master} on {os.cpu_count()} cores, Apache Kafka (one KRaft node) on loopback; "
        f"{args.runs} rounds, the sides alternating, median (min–max)"
    )
    print(f"load average at the end: {load_average()} (other work on the machine slows every path)")
    print()
    print(f"{'path':<34} {'time':>22} {'records/s':>10} {'MB/s':>6} {'vs kcat':>20} {'CPU s':>6} {'broker CPU s':>12} "
          f"{'peak MB':>8}")
    peaks = []
    for runs in paths.values():
        for side in SIDES:
            ratio = ratios([m.seconds for m in runs["kcat"]], [m.seconds for m in runs[side]]) if side != "kcat" else None
            print(row(runs[side], ratio))
        peaks.extend(runs["ours"])
    worst = max(peaks, key=lambda m: m.peak_rss or 0)
    print(f"\npeak memory of the Spark runs (driver + JVM + Python workers, sampled): {megabytes(worst.peak_rss or 0)}")
    print("vs kcat: kcat's time / this path's time, each round's own ratio (above 1: faster than kcat); "
          "floor: one process with confluent-kafka, no Spark (what any Python task pays per record)")
    print("CPU s: our processes (driver, Spark's JVM, Python workers) or kcat's; broker CPU s: the Kafka JVM's, "
          "in the same phase; each a median")


def row(runs: list[Measure], ratio: Spread | None) -> str:
    seconds = Spread.of([m.seconds for m in runs])
    cpu = Spread.of([m.cpu.get("ours", float("nan")) for m in runs]).median
    broker = Spread.of([m.cpu.get("broker", float("nan")) for m in runs]).median
    peaks = [m.peak_rss for m in runs if m.peak_rss is not None]
    first = runs[0]
    rate = first.records / seconds.median
    mb_s = first.payload_bytes / seconds.median / 1e6
    return (
        f"{first.label:<34} {seconds.show():>22} {rate:>10,.0f} {mb_s:>6.1f} "
        f"{ratio.show('x') if ratio is not None else '':>20} {cpu:>6.2f} {broker:>12.2f} "
        f"{max(peaks) / 2**20 if peaks else float('nan'):>8,.0f}"
    )


if __name__ == "__main__":
    sys.exit(main())
