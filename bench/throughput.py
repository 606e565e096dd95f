"""Throughput of the Spark runtime against kcat, on one topic, in one run (issue 4).

    .venv/bin/python bench/throughput.py [--records 1000000] [--record-bytes 100] [--partitions 2]

Starts its own Apache Kafka (one KRaft node, `reconciler.devtools.broker`) on loopback, then:
  (b) `datagen` source → topic, one batch on Spark, vs `kcat -P` producing the same key/value
      bytes from a file into a topic with as many partitions;
  (a) that same topic → `parquet-sink`, one batch on Spark, vs `kcat -C` reading it to /dev/null.
Then, for scale, the floor every Python task built on confluent-kafka stands on: the same
records produced (`produce()` per record, no transaction) and consumed (to the end, records
left untouched) by one process with confluent-kafka, no Spark.

Prints records/s, MB/s (key + value bytes) and the ratio to kcat for both, the Spark session
start (with the workers' warm-up) separately, CPU seconds of each path and of the broker (the
Kafka JVM, in the same phase), and peak memory: of the Spark runs (this process, the driver;
Spark's JVM; the Python workers; sampled with psutil, the broker not counted) and of kcat (its
exact `ru_maxrss`).

The reference client is Debian's `kcat`, as Debian ships it (`apt-get install -y kcat`), given
the librdkafka settings our own clients use on the same path (bench/kcat.py says which, and why).
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import MemorySampler, TreeMeter, cpu_of, load_average, megabytes, run_measured  # bench/measure.py

from reconciler.connectors.datagen import DatagenConnector, DatagenTask
from reconciler.core.kinds import Kind
from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.kafka.io.admin import create_topic, ensure_topics  # ours: usable once it returns
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork
from reconciler.runtime.executor import SparkExecutor

GROUP = "bench"
SOURCE_TOPIC = "bench-datagen"


# --- the runs -------------------------------------------------------------------------------


@dataclass
class Measure:
    label: str
    seconds: float
    records: int
    payload_bytes: int
    cpu: dict[str, float] = field(default_factory=dict)  # "ours", "broker": CPU seconds
    peak_rss: int | None = None  # bytes

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.payload_bytes / self.seconds / 1e6


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
    works = [TaskWork(connector="bench-datagen", task_id=i, connector_class="datagen", kind=Kind.SOURCE,
                      connector_config=config, task_config=tc, task_count=len(task_configs))
             for i, tc in enumerate(task_configs)]
    started = time.perf_counter()
    outcomes = executor.run_batch(works)
    return time.perf_counter() - started, moved(outcomes)


def run_sink(executor: SparkExecutor, path: Path, tasks: int) -> tuple[float, int]:
    config: dict[str, str | None] = {
        "name": "bench-sink", "connector.class": "parquet-sink", "tasks.max": str(tasks),
        "topics": SOURCE_TOPIC, "path": str(path),
    }
    plain = {k: v for k, v in config.items() if v is not None}
    works = [TaskWork(connector="bench-sink", task_id=i, connector_class="parquet-sink", kind=Kind.SINK,
                      connector_config=config, task_config=plain, task_count=tasks) for i in range(tasks)]
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
    kcat = kcat_binary()
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    workdir = Path(tempfile.mkdtemp(prefix="bench-throughput-"))
    sampler = MemorySampler()
    broker = start_broker(workdir / "broker")
    sampler.excluded_pids.add(broker.pid)
    sampler.start()
    try:
        return measure(args, kcat, workdir, broker, sampler)
    finally:
        sampler.stop()
        broker.stop(timeout_s=5.0)
        shutil.rmtree(workdir, ignore_errors=True)


def measure(args: argparse.Namespace, kcat: str, workdir: Path, broker: RunningBroker, sampler: MemorySampler) -> int:
    from reconciler.runtime.spark.session import start_session, warm_up

    settings = KafkaSettings(bootstrap_servers=broker.bootstrap, group_id=GROUP, topics=Topics.for_group(GROUP), timeout_s=60)
    ensure_topics(settings)
    create_topic(settings, SOURCE_TOPIC, args.partitions)
    config = datagen_config(args.records, args.record_bytes, args.partitions)
    kcat_input = workdir / "records.tsv"
    payload = write_kcat_input(config, kcat_input)
    meter = TreeMeter({broker.pid}, broker.pid)

    with phase("starting Spark"):
        started = time.perf_counter()
        session = start_session(args.spark_master)
        session_s = time.perf_counter() - started
        warm_up(session)
        warm_s = time.perf_counter() - started - session_s
    executor = SparkExecutor(settings, master=args.spark_master, source_batch_records=args.records)
    results: list[tuple[Measure, Measure]] = []
    try:
        with phase("(b) datagen source → topic on Spark"):
            source = Measure("(b) datagen → topic, Spark", 0.0, 0, payload)
            sampler.peak_total = 0
            with meter.tree(source.cpu):
                source.seconds, source.records = run_source(executor, config, args.partitions)
            source.peak_rss = sampler.peak_total
            source_peak = (sampler.peak_total, dict(sampler.peak_parts))
        assert source.records == args.records, source.records
        with phase("kcat -P from a file"):
            create_topic(settings, "bench-kcat", args.partitions)
            command = [kcat, "-b", settings.bootstrap_servers, "-P", "-t", "bench-kcat", "-K", "\t", "-l", str(kcat_input),
                       *producer_flags()]
            kcat_p = kcat_run("    kcat -P from a file", command, broker.pid, args.records, payload)
        results.append((source, kcat_p))

        with phase("(a) topic → parquet-sink on Spark"):
            sink = Measure("(a) topic → parquet-sink, Spark", 0.0, 0, payload)
            sampler.peak_total = 0
            with meter.tree(sink.cpu):
                sink.seconds, sink.records = run_sink(executor, workdir / "parquet", args.partitions)
            sink.peak_rss = sampler.peak_total
        assert sink.records == args.records == parquet_rows(workdir / "parquet"), sink.records
        with phase("kcat -C to /dev/null"):
            command = [kcat, "-b", settings.bootstrap_servers, "-C", "-t", SOURCE_TOPIC, "-o", "beginning", "-e", "-q",
                       *consumer_flags()]
            kcat_c = kcat_run("    kcat -C to /dev/null", command, broker.pid, args.records, payload)
        results.append((sink, kcat_c))

        spark_peak = max(source_peak, (sampler.peak_total, dict(sampler.peak_parts)), key=lambda peak: peak[0])
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


def kcat_run(label: str, command: list[str], broker_pid: int, records: int, payload: int) -> Measure:
    broker_before = cpu_of(broker_pid)
    code, usage = run_measured(command)
    if code != 0:
        raise SystemExit(f"kcat exited with {code}: {' '.join(command)}")
    cpu = {"ours": usage.cpu_s, "broker": cpu_of(broker_pid) - broker_before}
    return Measure(label, usage.seconds, records, payload, cpu, usage.peak_rss)


def client_produce_floor(
    settings: KafkaSettings, config: dict[str, str | None], args: argparse.Namespace, payload: int, meter: TreeMeter
) -> Measure:
    from collections import deque
    from itertools import repeat
    from operator import length_hint

    from reconciler.kafka.io.client import new_producer
    from reconciler.runtime.source.task import PRODUCER_TUNING

    topic = "bench-floor"
    create_topic(settings, topic, args.partitions)
    task = DatagenTask({**{k: v for k, v in config.items() if v is not None}, "shards": "1", "batch.size": str(10**9)})
    batch = task.poll_batch({}, 10**9)
    keys, values = list(batch.keys), list(batch.values)
    producer = new_producer(settings, **PRODUCER_TUNING)
    measure = Measure("    confluent-kafka produce()", 0.0, len(values), payload)
    with meter.tree(measure.cpu):
        started = time.perf_counter()
        position, count = 0, len(values)
        while position < count:  # as the source task does: resume at the record that did not fit
            end = min(count, position + 100_000)
            pending = iter(values[position:end])
            try:
                deque(map(producer.produce, repeat(topic, end - position), pending, keys[position:end]), maxlen=0)
                position = end
                producer.poll(0)
            except BufferError:  # the local queue is full: let deliveries drain it
                position = end - length_hint(pending) - 1
                producer.poll(0.05)
        if producer.flush(60):
            raise SystemExit("floor: records not delivered")
        measure.seconds = time.perf_counter() - started
    return measure


def client_consume_floor(settings: KafkaSettings, records: int, payload: int, meter: TreeMeter) -> Measure:
    from reconciler.kafka.io.consume import batches_to_end

    measure = Measure("    confluent-kafka consume", 0.0, 0, payload)
    with meter.tree(measure.cpu):
        started = time.perf_counter()
        measure.records = sum(map(len, batches_to_end(settings, [SOURCE_TOPIC])))
        measure.seconds = time.perf_counter() - started
    assert measure.records == records, measure.records
    return measure


def report(
    args: argparse.Namespace,
    session_s: float,
    warm_s: float,
    results: list[tuple[Measure, Measure]],
    peak: tuple[int, dict[str, int]],
    floors: list[tuple[Measure, Measure]],
) -> None:
    print(
        f"\nthroughput: {args.records:,} records (~{args.record_bytes} B values), topic with {args.partitions} "
        f"partitions, Spark {args.spark_master} on {os.cpu_count()} cores, Apache Kafka (one KRaft node) on loopback"
    )
    print(f"load average at the end: {load_average()} (other work on the machine slows every path)")
    print(f"Spark session start: {session_s:.1f} s, + {warm_s:.1f} s Python worker warm-up (not counted below)\n")
    print(f"{'path':<34} {'time':>8} {'records/s':>11} {'MB/s':>7} {'vs kcat':>8} {'CPU s':>7} {'broker CPU s':>13} {'peak MB':>8}")
    for ours, kcat in results:
        print(row(ours, f"{ours.rate / kcat.rate:.2f}"))
        print(row(kcat, ""))
    print("floor: one process, confluent-kafka, no Spark (what any Python task pays per record)")
    for floor, kcat in floors:
        print(row(floor, f"{floor.rate / kcat.rate:.2f}"))
    parts = ", ".join(f"{name} {megabytes(rss)}" for name, rss in peak[1].items())
    print(f"\npeak memory of the Spark runs (driver + JVM + Python workers): {megabytes(peak[0])} ({parts})")
    print("CPU s: our processes (driver, Spark's JVM, Python workers) or kcat's; broker CPU s: the Kafka JVM's, "
          "in the same phase")


def row(measure: Measure, ratio: str) -> str:
    cpu, broker = measure.cpu.get("ours", float("nan")), measure.cpu.get("broker", float("nan"))
    peak = f"{measure.peak_rss / 2**20:,.0f}" if measure.peak_rss is not None else "-"
    return (
        f"{measure.label:<34} {measure.seconds:>6.2f} s {measure.rate:>11,.0f} {measure.mb_per_s:>7.1f} "
        f"{ratio:>8} {cpu:>7.2f} {broker:>13.2f} {peak:>8}"
    )


if __name__ == "__main__":
    sys.exit(main())
