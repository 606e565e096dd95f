"""Head-to-head for the lakehouse sinks (issue 28): Apache Iceberg's own Kafka Connect sink
against our `iceberg-sink`, plus our `delta-sink` and `parquet-sink` on disk and on S3.

    .venv/bin/python bench/lakehouse.py [--records 1000000] [--row-bytes 100] [--partitions 2] [--rounds 3]

N rows of about `--row-bytes` bytes (id, customer, quantity, pad), as JsonConverter records with
their schema (so every sink types the columns; the schema rides in each record as Connect writes
it), produced once by `kcat -P` into a topic of `--partitions` on Apache Kafka
(`reconciler.devtools.broker`, or `--bootstrap`). Then `--rounds` rounds (3 by default): each
side once a round, the sides alternating (this order, then the reverse, …: `measure.alternating`,
so a machine getting busier or quieter weighs on all alike), each run into a table, files, a
connector and a Connect group of its own:

- `kcat -C -e` of the topic: the reference, the least work a Kafka client does to read it;
- Apache Iceberg's sink (`org.apache.iceberg:iceberg-kafka-connect`, pinned by
  reconciler/devtools/jvm/iceberg-connect/pom.xml) in a Java Connect worker started for the
  bench, one task per partition, a control topic of its own per run and a commit every
  `--commit-interval-ms` (the sink's default is 5 minutes), timed from its REST creation to the
  commit that makes the last row visible (the table's snapshot read back by pyiceberg every
  0.25 s); an attempt that stalls is deleted and run once more into a table of its own, the
  report saying so (lake_sides.JavaIceberg);
- ours, `reconciler run --once` with `iceberg-sink`: the same keys, the same SQL catalog
  (SQLite, read by Java's JdbcCatalog and by pyiceberg), its own table; the whole command,
  Spark's start included, exactly once;
- ours with `delta-sink` and `parquet-sink` (typed columns), into a local directory and into an
  S3-compatible server (moto, `reconciler.devtools.s3`, or `--s3-endpoint` with the AWS_*
  variables' credentials).

Each figure is the median of the side's runs, the fastest and slowest beside it (`Spread`);
ours against Java's Iceberg sink is the median of the rounds' own ratios (`measure.ratios`).
CPU seconds (the median): kcat's and ours by `wait4` with every descendant (bench/measure.py);
the Java worker's JVM over its phase. Peak memory (the largest of the runs): kcat's own, ours
summed over the process tree, the Java worker's whole RSS in its phase. Every run's table is
read back by its own reader (pyiceberg, delta-rs, pyarrow) as the run ends, and each round's two
Iceberg tables compared: one run whose table does not hold every id exactly once, or a round
whose Iceberg tables' ids differ, and the bench prints no figure and exits non-zero
(`measure.RunFailed`).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

import pyarrow.compute as pc

from jdbc_sink_sides import Rows, kcat_read  # bench/jdbc_sink_sides.py
from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from lake_sides import (  # bench/lake_sides.py
    NAMESPACE,
    DeltaTarget,
    ExistingWorker,
    IcebergTarget,
    JavaIceberg,
    Ours,
    ParquetTarget,
    Result,
    Target,
    Worker,
    write_records,
)
from measure import (  # bench/measure.py
    FAILED,
    RunFailed,
    Spread,
    Usage,
    alternating,
    become_subreaper,
    load_average,
    megabytes,
    ratios,
    require,
    run_measured,
    run_notes,
)

from reconciler.devtools.broker import start_broker
from reconciler.devtools.connect import start_connect
from reconciler.devtools.connect_plugins import ICEBERG_SINK, iceberg_plugin, iceberg_version
from reconciler.devtools.s3 import BUCKET, REGION, start_s3
from reconciler.kafka.io.admin import create_topic
from reconciler.kafka.settings import KafkaSettings

JAVA_LABEL = "Apache Iceberg's sink (Java worker)"
OURS_ICEBERG = "ours: iceberg-sink"
SIDES = ("kcat", "java-iceberg", "iceberg", "delta-local", "delta-s3", "parquet-local", "parquet-s3")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--row-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--commit-interval-ms", type=int, default=1000,
                        help="iceberg.control.commit.interval-ms of Java's sink (default 1000)")
    parser.add_argument("--bootstrap", help="an Apache Kafka to use (default: one started for the bench)")
    parser.add_argument("--s3-endpoint", help="an S3-compatible server to use, its credentials from AWS_* "
                        "(default: moto started for the bench)")
    parser.add_argument("--s3-bucket", default=BUCKET)
    parser.add_argument("--connect-url", help="a running Java Connect worker with Apache Iceberg's sink on its "
                        "plugin.path (default: one started for the bench); with --connect-pid, --connect-log")
    parser.add_argument("--connect-pid", type=int, help="that worker's PID (its CPU and memory are measured)")
    parser.add_argument("--connect-log", type=Path, help="that worker's log (its ERROR lines are reported)")
    parser.add_argument("--sides", default=",".join(SIDES), help=f"the sides to run, of {','.join(SIDES)} (default: all)")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, alternating; figures are their "
                        "medians (default 3)")
    args = parser.parse_args(argv)
    args.sides = [side.strip() for side in args.sides.split(",") if side.strip()]
    unknown = sorted(set(args.sides) - set(SIDES))
    if unknown or (args.connect_url is None) != (args.connect_pid is None) or args.rounds < 1:
        parser.error(f"unknown sides {unknown}" if unknown else "--rounds is at least 1" if args.rounds < 1
                     else "--connect-url and --connect-pid go together")
    kcat = kcat_binary()
    become_subreaper()  # orphans of `reconciler run` come to us: their CPU is counted
    workdir = Path(tempfile.mkdtemp(prefix="bench-lake-"))
    started_load = load_average()
    try:
        results = run_all(args, kcat, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, started_load, results)
    return 0


def run_all(args: argparse.Namespace, kcat: str, workdir: Path) -> dict[str, list[Result]]:
    rows, run_id = Rows(args.records, args.row_bytes), uuid.uuid4().hex[:8]
    records = workdir / "records.jsonl"
    write_records(records, rows)
    args.record_bytes = records.stat().st_size / args.records - 1
    with ExitStack() as stack:
        bootstrap = args.bootstrap or stack.enter_context(start_broker(workdir / "broker-log")).bootstrap
        s3 = s3_keys(args, stack, workdir) if {"delta-s3", "parquet-s3"} & set(args.sides) else {}
        worker = java_worker(args, stack, bootstrap, workdir, run_id) if "java-iceberg" in args.sides else None
        topic = f"bench-lake-{run_id}"
        settings = KafkaSettings(bootstrap_servers=bootstrap)
        create_topic(settings, topic, args.partitions)
        produce(kcat, bootstrap, topic, records)
        return run_sides(args, kcat, bootstrap, topic, s3, workdir, worker)


def java_worker(args: argparse.Namespace, stack: ExitStack, bootstrap: str, workdir: Path, run_id: str) -> Worker:
    """The worker of `--connect-url`, else one started with Apache Iceberg's sink as its plugin."""
    if args.connect_url:
        return ExistingWorker(args.connect_url, args.connect_pid, args.connect_log)
    return stack.enter_context(start_connect(bootstrap, f"bench-lake-java-{run_id}", workdir / "connect-log",
                                             plugin_path=[iceberg_plugin()]))


def s3_keys(args: argparse.Namespace, stack: ExitStack, workdir: Path) -> dict[str, str]:
    """The sinks' `s3.*` keys for the bench's S3 server (started here unless `--s3-endpoint`)."""
    if args.s3_endpoint:
        endpoint, key, secret = args.s3_endpoint, os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]
        region = os.environ.get("AWS_REGION", REGION)
    else:
        server = stack.enter_context(start_s3(workdir / "s3-log"))
        endpoint, key, secret, region = server.endpoint, server.access_key_id, server.secret_access_key, server.region
        args.s3_bucket = server.bucket
    return {"s3.endpoint": endpoint, "s3.region": region, "s3.path.style.access": "true",
            "s3.access.key.id": key, "s3.secret.access.key": secret}


def produce(kcat: str, bootstrap: str, topic: str, records: Path) -> None:
    command = [kcat, "-P", "-b", bootstrap, "-t", topic, "-l", str(records), *producer_flags()]
    code, _ = run_measured(command)
    require(code == 0, f"kcat -P exited {code}")


Sides = dict[str, Callable[[int], Result]]  # a side's run number (1, 2…) names its fresh table


def run_sides(args: argparse.Namespace, kcat: str, bootstrap: str, topic: str, s3: dict[str, str], workdir: Path,
              worker: Worker | None) -> dict[str, list[Result]]:
    """Every chosen side `--rounds` times, alternating (`measure.alternating`), each run into
    tables, files and a connector of its own and checked as it ends; then every round's
    Iceberg tables compared, while they are still there."""
    sides = all_sides(args, kcat, bootstrap, topic, s3, workdir, worker)
    chosen = [side for side in SIDES if side in args.sides]
    runs = alternating(args.rounds, {side: numbered(side, sides[side], args.records) for side in chosen})
    check_rounds([runs[side] for side in chosen], args.records)
    return {side: runs[side] for side in chosen}


def numbered(side: str, run: Callable[[int], Result], count: int) -> Callable[[], Result]:
    """`run` with its run number, announced, and its table checked before it counts."""
    number = 0

    def once() -> Result:
        nonlocal number
        number += 1
        print(f"  {side}, run {number}… (load average {load_average()})", file=sys.stderr, flush=True)
        result = run(number)
        check([result], count)
        return result

    return once


def all_sides(args: argparse.Namespace, kcat: str, bootstrap: str, topic: str, s3: dict[str, str], workdir: Path,
              worker: Worker | None) -> Sides:
    n, tag = args.records, topic.removeprefix("bench-lake-")
    catalog = {"type": "jdbc", "uri": f"jdbc:sqlite:{workdir / 'catalog.db'}", "warehouse": str(workdir / "warehouse"),
               "jdbc.schema-version": "V1"}
    converters = {"topics": topic, "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                  "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                  "value.converter.schemas.enable": "true"}
    s3_root = f"s3://{args.s3_bucket}/bench-lake-{tag}"
    ours = Ours(bootstrap, workdir / "ours", args.partitions)

    def java(r: int) -> Result:
        assert worker is not None
        control = f"{topic}-control-{r}"  # a control topic per run: no coordinator reads another run's events
        create_topic(KafkaSettings(bootstrap_servers=bootstrap), control, 1)
        side = JavaIceberg(worker, args.partitions, control, args.commit_interval_ms)
        return side.run(JAVA_LABEL, f"java-iceberg-{tag}-{r}", topic, catalog,
                        IcebergTarget(catalog, f"{NAMESPACE}.java_{tag}_{r}"), n)

    def iceberg(r: int) -> Result:
        target = IcebergTarget(catalog, f"{NAMESPACE}.ours_{tag}_{r}")
        config = {**converters, "iceberg.tables": target.table, "iceberg.tables.auto-create-enabled": "true",
                  **{f"iceberg.catalog.{key}": value for key, value in catalog.items()}}
        return ours.run(OURS_ICEBERG, f"iceberg-{tag}-{r}", "iceberg-sink", config, target, n)

    def files(sink: str, key: str, target: Callable[[dict[str, str]], Target], side: str, where: str, root: str,
              keys: dict[str, str]) -> Callable[[int], Result]:
        """delta-sink or parquet-sink, each run into `root`/<delta|parquet>-<round>."""
        def run(r: int) -> Result:
            config = {**converters, key: f"{root}/{sink.removesuffix('-sink')}-{r}", **keys}
            return ours.run(f"ours: {sink}, {where}", f"{side}-{tag}-{r}", sink, config, target(config), n)
        return run

    def delta(side: str, where: str, root: str, keys: dict[str, str]) -> Callable[[int], Result]:
        return files("delta-sink", "delta.table.uri", DeltaTarget, side, where, root, keys)

    def parquet(side: str, where: str, root: str, keys: dict[str, str]) -> Callable[[int], Result]:
        return files("parquet-sink", "path", ParquetTarget, side, where, root, keys)

    return {"kcat": lambda r: reference(kcat, bootstrap, topic, n, workdir), "java-iceberg": java, "iceberg": iceberg,
            "delta-local": delta("delta-local", "local disk", str(workdir), {}),
            "delta-s3": delta("delta-s3", "S3", s3_root, s3),
            "parquet-local": parquet("parquet-local", "local disk", str(workdir), {}),
            "parquet-s3": parquet("parquet-s3", "S3", s3_root, s3)}


def reference(kcat: str, bootstrap: str, topic: str, count: int, workdir: Path) -> Result:
    usage: Usage = kcat_read(kcat, consumer_flags(), bootstrap, topic, count, workdir / "kcat.out")
    return Result("kcat -C (the reference)", usage, count, count, ["records read to the end, lines counted"])


def check(results: list[Result], count: int) -> None:
    """Every side's table holds each id once, and the two Iceberg tables the same ids; else no figure."""
    for result in results:
        require(result.rows == count and result.distinct == count,
                f"{result.label}: {result.rows:,} rows, {result.distinct:,} distinct ids, expected {count:,} "
                f"({result.rows - result.distinct:,} duplicated, {count - result.distinct:,} missing)")
    tables = {result.label: result.iceberg for result in results if result.iceberg}
    if {JAVA_LABEL, OURS_ICEBERG} <= tables.keys():
        java, ours = tables[JAVA_LABEL], tables[OURS_ICEBERG]
        # Each holds `count` distinct ids (checked above): the same set iff each of Java's is in ours.
        java_ids, ours_ids = java.ids(), ours.ids()
        require(len(java_ids) == len(ours_ids) == count
                and pc.all(pc.is_in(java_ids, value_set=ours_ids.combine_chunks())).as_py() is True,
                f"the Iceberg tables {java.table} and {ours.table} do not hold the same ids")


def check_rounds(sides: list[list[Result]], count: int) -> None:
    """`check` of every round (the sides' i-th runs together): one wrong run, no figure at all."""
    require(len({len(runs) for runs in sides}) <= 1, "the sides ran a different number of times")
    for number, round_ in enumerate(zip(*sides, strict=True), 1):
        try:
            check(list(round_), count)
        except RunFailed as failed:
            raise RunFailed(f"round {number}: {str(failed.code).removeprefix(FAILED)}") from failed


def report(args: argparse.Namespace, started_load: str, runs: dict[str, list[Result]]) -> None:
    n = args.records
    print(f"\nLakehouse sinks: {n:,} rows of ~{args.row_bytes} B ({args.record_bytes:.0f} B as JsonConverter "
          f"records with schemas) in {args.partitions} partitions; median of {args.rounds} runs a side, the sides "
          f"alternating, every run's table checked (min–max beside it); Apache Iceberg's sink "
          f"org.apache.iceberg:{ICEBERG_SINK}:{iceberg_version()}; load average at start {started_load}, "
          f"at end {load_average()}")
    print(f"{'side':<36} {'seconds (min–max)':>28} {'records/s':>11} {'CPU s':>8} {'peak memory':>12} {'rows':>11} "
          f"{'duplicates':>10}")
    found: dict[str, list[Result]] = {}
    for results in runs.values():
        first, seconds = results[0], Spread.of([r.usage.seconds for r in results])
        found[first.label] = results
        cpu, peak = Spread.of([r.usage.cpu_s for r in results]), max(r.usage.peak_rss for r in results)
        duplicates = max(r.rows - r.distinct for r in results)
        notes = run_notes([r.notes for r in results])
        print(f"{first.label:<36} {seconds.show():>28} {n / seconds.median:11,.0f} {cpu.median:8.2f} "
              f"{megabytes(peak):>12} {first.rows:11,} {duplicates:10,}" + (f"  ({'; '.join(notes)})" if notes else ""))
    if JAVA_LABEL not in found or OURS_ICEBERG not in found:
        return
    # Rates: Java's time over ours, run by run (the same round's runs).
    ratio = ratios([r.usage.seconds for r in found[JAVA_LABEL]], [r.usage.seconds for r in found[OURS_ICEBERG]])
    print(f"Both Iceberg tables hold the same {n:,} ids in every round. ours (iceberg-sink) at {ratio.show('×')} "
          f"the rate of Apache Iceberg's sink (goal > 1×: {'met' if ratio.median > 1 else 'not met'}), 0 duplicates")


if __name__ == "__main__":
    sys.exit(main())
