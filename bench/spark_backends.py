"""The Spark runtime's two choices, measured in one run on `local[*]` (issue 13):

    .venv/bin/python bench/spark_backends.py [--records 1000000] [--rounds 2] [--bootstrap HOST:PORT]

1. Job back ends: a job of 2 partitions that does nothing, as an RDD `mapPartitions` and as a
   DataFrame `mapInArrow` (Spark Connect's only choice): the first job of each and the median
   of 10 more. This is the fixed cost every connector's batch pays.
2. Sink readers: one topic of `--records` records of ~100 B in 2 partitions, written by
   `datagen` (transactions, so commit markers too), then read by `parquet-sink` to the end,
   through Spark's Kafka data source and with confluent-kafka in the Python workers, each in
   its own group and directory, alternating, `--rounds` times. Prints wall time, records/s and
   the CPU seconds of this process and its children (the JVM, the Python workers).
Starts its own Apache Kafka on loopback (its CPU is not counted), or uses `--bootstrap`'s, in a
group and topic of a name of its own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

from reconciler.connectors.datagen import DatagenConnector
from reconciler.core.kinds import Kind
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.batch.tasks import TaskWork
from reconciler.runtime.executor import SinkReader, SparkExecutor
from reconciler.runtime.spark.data_source import with_kafka_jars
from reconciler.runtime.spark.jobs import run_partitions
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.session import start_session, warm_up

from measure import bench_kafka  # bench/measure.py

NAME = "bench-readers"  # of the group and the topic, with the run's id after it


def cpu_parts() -> dict[str, float]:
    """CPU seconds of this process (driver), its JVM and the Spark Python workers (live ones)."""
    me = psutil.Process()
    parts = {"driver": sum(me.cpu_times()[:2]), "jvm": 0.0, "python workers": 0.0}
    for child in me.children(recursive=True):
        try:
            kind = "jvm" if "java" in child.name() else "python workers"
            parts[kind] += sum(child.cpu_times()[:2])
        except psutil.Error:
            continue
    return parts


def cpu_seconds() -> float:
    return sum(cpu_parts().values())


def _nothing(item: int) -> int:
    return item


def job_costs(spark: Spark, dataframe: bool) -> tuple[float, float]:
    """(first job, median of the next 10) in seconds."""
    times = []
    for _ in range(11):
        started = time.perf_counter()
        run_partitions(spark, [0, 1], _nothing, pool="default", description="bench", dataframe=dataframe)
        times.append(time.perf_counter() - started)
    return times[0], statistics.median(times[1:])


def fill_topic(settings: KafkaSettings, executor: SparkExecutor, records: int, topic: str) -> None:
    config: dict[str, str | None] = {"name": "bench-gen", "connector.class": "datagen", "tasks.max": "2",
                                     "topic": topic, "count": str(records), "record.bytes": "100"}
    task_configs = DatagenConnector().task_configs(config, 2)
    works = [TaskWork(connector="bench-gen", task_id=i, connector_class="datagen", kind=Kind.SOURCE,
                      connector_config=config, task_config=tc, task_count=2) for i, tc in enumerate(task_configs)]
    moved = 0
    while moved < records:
        outcomes = executor.run_batch(works)
        if any(o.error for o in outcomes):
            raise SystemExit("\n".join(o.error or "" for o in outcomes))
        moved += sum(o.records for o in outcomes)


def sink_once(settings: KafkaSettings, reader: SinkReader, name: str, path: Path, topic: str) -> tuple[float, float, int]:
    executor = SparkExecutor(settings, sink_reader=reader)
    config: dict[str, str | None] = {"name": name, "connector.class": "parquet-sink", "tasks.max": "2",
                                     "topics": topic, "path": str(path)}
    plain = {k: v for k, v in config.items() if v is not None}
    works = [TaskWork(connector=name, task_id=i, connector_class="parquet-sink", kind=Kind.SINK,
                      connector_config=config, task_config=plain, task_count=2) for i in range(2)]
    before, started = cpu_parts(), time.perf_counter()
    outcomes = executor.run_batch(works)
    seconds, after = time.perf_counter() - started, cpu_parts()
    split = {k: after[k] - before[k] for k in after}
    print("    CPU-s by process: " + ", ".join(f"{k} {v:.2f}" for k, v in split.items()), flush=True)
    cpu = sum(split.values())
    if any(o.error for o in outcomes):
        raise SystemExit("\n".join(o.error or "" for o in outcomes))
    return seconds, cpu, sum(o.records for o in outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--spark-master", default="local[*]")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--readers", default="spark-kafka,confluent-kafka", help="which sink readers to run")
    parser.add_argument("--no-jobs", action="store_true", help="skip the job back ends")
    parser.add_argument("--bootstrap", help="a running Apache Kafka to use (default: one started for the bench)")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="bench-backends-"))
    with bench_kafka(args.bootstrap, workdir / "broker") as kafka:
        settings = kafka.group(NAME, 2)
        name = settings.group_id  # and the data topic's
        conf = with_kafka_jars(dict(item.split("=", 1) for item in args.spark_conf))
        session = start_session(args.spark_master, conf)
        warm_up(Spark.over(session))
        print(f"load average {psutil.getloadavg()[0]:.1f} on {psutil.cpu_count()} cores", flush=True)
        for dataframe in () if args.no_jobs else (False, True):
            first, later = job_costs(Spark.over(session), dataframe)
            kind = "DataFrame mapInArrow" if dataframe else "RDD mapPartitions"
            print(f"job back end {kind:>22}: first job {first:.2f} s, later jobs (median of 10) {later:.3f} s",
                  flush=True)
        fill_topic(settings, SparkExecutor(settings, source_batch_records=args.records), args.records, name)
        for round_ in range(args.rounds):
            for reader in args.readers.split(","):
                connector = f"bench-{reader}-{round_}"
                seconds, cpu, records = sink_once(settings, reader, connector, workdir / connector, name)
                if records != args.records:  # no figure for a run that did not move every record
                    raise SystemExit(f"FAILED, no figure printed: sink via {reader} moved {records:,} of {args.records:,}")
                print(f"sink via {reader:>15}: {records} records in {seconds:.2f} s = "
                      f"{records / seconds:,.0f} rec/s, {cpu:.2f} CPU-s (load {psutil.getloadavg()[0]:.1f})",
                      flush=True)
        session.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
