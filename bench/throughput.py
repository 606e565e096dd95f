"""Throughput of the Spark runtime against kcat, on one topic, in one run (issue 4).

    .venv/bin/python bench/throughput.py [--records 1000000] [--record-bytes 100] [--partitions 2]

Starts its own Tansu broker on loopback, then:
  (b) `datagen` source → topic, one batch on Spark, vs `kcat -P` producing the same key/value
      bytes from a file into a topic with as many partitions;
  (a) that same topic → `parquet-sink`, one batch on Spark, vs `kcat -C` reading it to /dev/null.
Then, for scale, the floor every Python task built on confluent-kafka stands on: the same
records produced (`produce()` per record, no transaction) and consumed (to the end, records
left untouched) by one process with confluent-kafka, no Spark.
Prints records/s, MB/s (key + value bytes) and the ratio to kcat for both, the Spark session
start (with the workers' warm-up) separately, and the peak memory of the run: this process
(the driver), the JVM and the Spark Python workers, sampled every 200 ms with psutil (the
broker and kcat are not counted). kcat runs twice per direction, with its defaults and with
the settings that suit Tansu; the faster run is the reference.

Needs `kcat` (Debian: apt-get install kcat). Debian's kcat links an older system librdkafka,
so it is run with LD_LIBRARY_PATH pointing at confluent-kafka's bundled librdkafka, the one our
clients use (docs/real-components.md#kcat).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from kcat import kcat_env_if_installed  # bench/kcat.py

from reconciler.connectors.datagen import DatagenConnector, DatagenTask
from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.kafka.admin import ensure_topics
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.runtime.executor import SparkExecutor, TaskOutcome, TaskWork

GROUP = "bench"
SOURCE_TOPIC = "bench-datagen"
# One sample costs ~3 ms of CPU in this process: often enough for a peak, rarely enough not
# to slow what it measures.
SAMPLE_S = 0.2


# --- memory ---------------------------------------------------------------------------------


@dataclass
class MemorySampler:
    """Peak RSS of this process and its descendants, minus the ones named in `excluded`."""

    excluded_pids: set[int] = field(default_factory=set)
    excluded_names: frozenset[str] = frozenset({"kcat", "tansu"})
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
            self._stop.wait(SAMPLE_S)

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


# --- CPU ------------------------------------------------------------------------------------


@dataclass
class CpuMeter:
    """CPU seconds spent in a phase: by our process tree (driver, JVM, Python workers) or by
    the children that exited in it (kcat), and by the broker. Unlike wall time, these hardly
    change with other work on the machine, so they say what each path costs."""

    broker_pid: int

    def _tree(self) -> dict[int, float]:
        me = psutil.Process()
        times = {}
        for process in [me, *me.children(recursive=True)]:
            try:
                if process.pid != self.broker_pid:
                    cpu = process.cpu_times()
                    times[process.pid] = cpu.user + cpu.system
            except psutil.Error:
                continue
        return times

    def _broker(self) -> float:
        cpu = psutil.Process(self.broker_pid).cpu_times()
        return float(cpu.user + cpu.system)

    @contextmanager
    def tree(self, into: dict[str, float]) -> Iterator[None]:
        before, broker = self._tree(), self._broker()
        yield
        after = self._tree()
        into["ours"] = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())
        into["broker"] = self._broker() - broker

    @contextmanager
    def exited_children(self, into: dict[str, float]) -> Iterator[None]:
        before, broker = resource.getrusage(resource.RUSAGE_CHILDREN), self._broker()
        yield
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        into["ours"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        into["broker"] = self._broker() - broker


# --- kcat -----------------------------------------------------------------------------------


TANSU_CONSUMER = ["-X", "fetch.queue.backoff.ms=10", "-X", "fetch.wait.max.ms=10"]
TANSU_PRODUCER = ["-X", "linger.ms=20", "-X", "batch.num.messages=100000", "-X", "batch.size=4000000"]


def timed_kcat(env: dict[str, str], args: list[str], stdin: Any = None) -> float:
    started = time.perf_counter()
    subprocess.run(["kcat", *args], env=env, check=True, stdout=subprocess.DEVNULL, stdin=stdin)
    return time.perf_counter() - started


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Measure:
    label: str
    seconds: float
    records: int
    payload_bytes: int
    cpu: dict[str, float] = field(default_factory=dict)  # "ours", "broker": CPU seconds

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / self.seconds / 1e6


def create_topic(settings: KafkaSettings, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": settings.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions)])[topic].result(timeout=30)


def datagen_config(records: int, record_bytes: int, tasks: int) -> dict[str, str | None]:
    return {
        "name": "bench-datagen", "connector.class": "datagen", "tasks.max": str(tasks),
        "topic": SOURCE_TOPIC, "count": str(records), "record.bytes": str(record_bytes),
    }


def write_kcat_input(config: dict[str, str | None], path: Path) -> int:
    """The datagen records as `key<TAB>value` lines; returns the key + value bytes."""
    task = DatagenTask({**{k: v for k, v in config.items() if v is not None}, "shards": "1", "batch.size": str(10**9)})
    batch = task.poll_batch({}, 10**9)
    keys, values = [k or b"" for k in batch.keys], [v or b"" for v in batch.values]
    with path.open("wb") as out:
        out.writelines(k + b"\t" + v + b"\n" for k, v in zip(keys, values, strict=True))
    return sum(map(len, keys)) + sum(map(len, values))


def run_source(executor: SparkExecutor, config: dict[str, str | None], tasks: int) -> tuple[float, int]:
    task_configs = DatagenConnector().task_configs(config, tasks)
    works = [TaskWork("bench-datagen", i, "datagen", "source", config, tc, len(task_configs)) for i, tc in enumerate(task_configs)]
    started = time.perf_counter()
    outcomes = executor.run_batch(works)
    return time.perf_counter() - started, moved(outcomes)


def run_sink(executor: SparkExecutor, path: Path, tasks: int) -> tuple[float, int]:
    config: dict[str, str | None] = {
        "name": "bench-sink", "connector.class": "parquet-sink", "tasks.max": str(tasks),
        "topics": SOURCE_TOPIC, "path": str(path),
    }
    plain = {k: v for k, v in config.items() if v is not None}
    works = [TaskWork("bench-sink", i, "parquet-sink", "sink", config, plain, tasks) for i in range(tasks)]
    started = time.perf_counter()
    outcomes = executor.run_batch(works)
    return time.perf_counter() - started, moved(outcomes)


def moved(outcomes: list[TaskOutcome]) -> int:
    failed = [o.error for o in outcomes if o.error]
    if failed:
        raise SystemExit("a task failed:\n" + "\n".join(failed))
    return sum(o.records for o in outcomes)


def parquet_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return sum(pq.ParquetFile(f).metadata.num_rows for f in path.rglob("*.parquet") if not f.name.startswith("."))


@contextmanager
def phase(title: str) -> Iterator[None]:
    print(f"  {title}…", file=sys.stderr, flush=True)
    yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2, help="topic partitions = tasks (default 2)")
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("-v", "--verbose", action="store_true", help="the runtime's timings (debug log)")
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.WARNING, format="%(relativeCreated)8.0f ms %(name)s: %(message)s")
        logging.getLogger("reconciler.runtime").setLevel(logging.DEBUG)
    env = kcat_env_if_installed()
    if env is None:
        print("kcat not found (Debian: apt-get install kcat); Spark figures only", file=sys.stderr)
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    sampler = MemorySampler()
    broker = start_broker(workdir / "broker")
    sampler.excluded_pids.add(broker.pid)
    sampler.start()
    try:
        return measure(args, env, workdir, broker, sampler)
    finally:
        sampler.stop()
        broker.stop(timeout_s=1.0)
        shutil.rmtree(workdir, ignore_errors=True)


def measure(args: argparse.Namespace, env: dict[str, str] | None, workdir: Path, broker: RunningBroker, sampler: MemorySampler) -> int:
    from reconciler.runtime.spark import start_session, warm_up

    settings = KafkaSettings(bootstrap_servers=broker.bootstrap, group_id=GROUP, topics=Topics.for_group(GROUP), timeout_s=60)
    ensure_topics(settings)
    create_topic(settings, SOURCE_TOPIC, args.partitions)
    config = datagen_config(args.records, args.record_bytes, args.partitions)
    kcat_input = workdir / "records.tsv"
    payload = write_kcat_input(config, kcat_input)
    meter = CpuMeter(broker.pid)

    with phase("starting Spark"):
        started = time.perf_counter()
        session = start_session(args.spark_master)
        session_s = time.perf_counter() - started
        warm_up(session)
        warm_s = time.perf_counter() - started - session_s
    executor = SparkExecutor(settings, master=args.spark_master, source_batch_records=args.records)
    results: list[tuple[Measure, Measure | None]] = []
    try:
        with phase("(b) datagen source → topic on Spark"):
            source = Measure("(b) datagen → topic, Spark", 0.0, 0, payload)
            with meter.tree(source.cpu):
                source.seconds, source.records = run_source(executor, config, args.partitions)
        assert source.records == args.records, source.records
        kcat_p = None
        if env is not None:
            with phase("kcat -P from a file"):
                kcat_p = fastest(
                    [kcat_produce_run(settings, env, kcat_input, args, meter, extra, n) for n, extra in enumerate(([], TANSU_PRODUCER))],
                    "    kcat -P from a file", args.records, payload,
                )
        results.append((source, kcat_p))

        with phase("(a) topic → parquet-sink on Spark"):
            sink = Measure("(a) topic → parquet-sink, Spark", 0.0, 0, payload)
            with meter.tree(sink.cpu):
                sink.seconds, sink.records = run_sink(executor, workdir / "parquet", args.partitions)
        assert sink.records == args.records == parquet_rows(workdir / "parquet"), sink.records
        kcat_c = None
        if env is not None:
            with phase("kcat -C to /dev/null"):
                kcat_c = fastest(
                    [kcat_consume_run(settings, env, meter, extra) for extra in ([], TANSU_CONSUMER)],
                    "    kcat -C to /dev/null", args.records, payload,
                )
        results.append((sink, kcat_c))

        spark_peak = (sampler.peak_total, dict(sampler.peak_parts))  # the floor's records would count
        with phase("floor: confluent-kafka in one process, no Spark"):
            floors = [
                (client_produce_floor(settings, config, args, payload, meter), kcat_p),
                (client_consume_floor(settings, args.records, payload, meter), kcat_c),
            ]
    finally:
        executor.close()
        session.stop()
    report(args, session_s, warm_s, results, spark_peak, floors)
    return 0


def client_produce_floor(
    settings: KafkaSettings, config: dict[str, str | None], args: argparse.Namespace, payload: int, meter: CpuMeter
) -> Measure:
    from collections import deque
    from itertools import repeat

    from reconciler.kafka.client import new_producer
    from reconciler.runtime.source_job import PRODUCER_TUNING

    topic = "bench-floor"
    create_topic(settings, topic, args.partitions)
    task = DatagenTask({**{k: v for k, v in config.items() if v is not None}, "shards": "1", "batch.size": str(10**9)})
    batch = task.poll_batch({}, 10**9)
    keys, values = list(batch.keys), list(batch.values)
    producer = new_producer(settings, **PRODUCER_TUNING)
    measure = Measure("    confluent-kafka produce()", 0.0, len(values), payload)
    with meter.tree(measure.cpu):
        started = time.perf_counter()
        for start in range(0, len(values), 100_000):  # the local queue holds 500,000
            end = start + 100_000
            deque(map(producer.produce, repeat(topic, end - start), values[start:end], keys[start:end]), maxlen=0)
            producer.poll(0)
        if producer.flush(60):
            raise SystemExit("floor: records not delivered")
        measure.seconds = time.perf_counter() - started
    return measure


def client_consume_floor(settings: KafkaSettings, records: int, payload: int, meter: CpuMeter) -> Measure:
    from reconciler.kafka.consume import batches_to_end

    measure = Measure("    confluent-kafka consume", 0.0, 0, payload)
    with meter.tree(measure.cpu):
        started = time.perf_counter()
        measure.records = sum(map(len, batches_to_end(settings, [SOURCE_TOPIC])))
        measure.seconds = time.perf_counter() - started
    assert measure.records == records, measure.records
    return measure


KcatRun = tuple[float, dict[str, float]]


def fastest(runs: list[KcatRun], label: str, records: int, payload: int) -> Measure:
    seconds, cpu = min(runs, key=lambda run: run[0])
    return Measure(label, seconds, records, payload, cpu)


def kcat_produce_run(
    settings: KafkaSettings, env: dict[str, str], data: Path, args: argparse.Namespace, meter: CpuMeter, extra: list[str], n: int
) -> KcatRun:
    topic = f"bench-kcat-{n}"
    create_topic(settings, topic, args.partitions)
    cpu: dict[str, float] = {}
    with meter.exited_children(cpu):
        seconds = timed_kcat(env, ["-b", settings.bootstrap_servers, "-P", "-t", topic, "-K", "\t", "-l", str(data), *extra])
    return seconds, cpu


def kcat_consume_run(settings: KafkaSettings, env: dict[str, str], meter: CpuMeter, extra: list[str]) -> KcatRun:
    cpu: dict[str, float] = {}
    with meter.exited_children(cpu):
        seconds = timed_kcat(env, ["-b", settings.bootstrap_servers, "-C", "-t", SOURCE_TOPIC, "-o", "beginning", "-e", "-q", *extra])
    return seconds, cpu


def report(
    args: argparse.Namespace,
    session_s: float,
    warm_s: float,
    results: list[tuple[Measure, Measure | None]],
    peak: tuple[int, dict[str, int]],
    floors: list[tuple[Measure, Measure | None]],
) -> None:
    cores, load = os.cpu_count(), ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(
        f"\nthroughput: {args.records:,} records (~{args.record_bytes} B values), topic with {args.partitions} "
        f"partitions, Spark {args.spark_master} on {cores} cores, Tansu on loopback"
    )
    print(f"load average at the end: {load} (other work on the machine slows every path)")
    print(f"Spark session start: {session_s:.1f} s, + {warm_s:.1f} s Python worker warm-up (not counted below)\n")
    print(f"{'path':<34} {'time':>8} {'records/s':>11} {'MB/s':>7} {'vs kcat':>8} {'CPU s':>7} {'broker CPU s':>13}")
    for ours, kcat in results:
        ratio = f"{ours.rate / kcat.rate:.2f}" if kcat is not None else "n/a"
        print(row(ours, ratio))
        if kcat is not None:
            print(row(kcat, ""))
    print("floor: one process, confluent-kafka, no Spark (what any Python task pays per record)")
    for floor, kcat in floors:
        print(row(floor, f"{floor.rate / kcat.rate:.2f}" if kcat is not None else "n/a"))
    parts = ", ".join(f"{name} {rss / 2**20:,.0f} MB" for name, rss in peak[1].items())
    print(f"\npeak memory of the Spark runs (driver + JVM + Python workers): {peak[0] / 2**20:,.0f} MB ({parts})")
    print("CPU s: our processes (driver, JVM, Python workers) or kcat; broker CPU s: Tansu's, in the same phase")


def row(measure: Measure, ratio: str) -> str:
    cpu, broker = measure.cpu.get("ours", float("nan")), measure.cpu.get("broker", float("nan"))
    return (
        f"{measure.label:<34} {measure.seconds:>6.2f} s {measure.rate:>11,.0f} {measure.mb_per_s:>7.1f} "
        f"{ratio:>8} {cpu:>7.2f} {broker:>13.2f}"
    )


if __name__ == "__main__":
    sys.exit(main())
