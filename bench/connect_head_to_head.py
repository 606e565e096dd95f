"""Head-to-head: Java Kafka Connect's FileStream connectors vs our file-source and file-sink.

    .venv/bin/python bench/connect_head_to_head.py [--records 1000000] [--record-bytes 100] [--partitions 2]

The same records, on the same machine, in the same run, on Apache Kafka (one KRaft node,
`reconciler.devtools.broker`), with Debian's `kcat` as the reference client (`apt-get install
-y kcat`; it gets our clients' librdkafka settings, bench/kcat.py):

- source, a file of N JSON lines of ~`--record-bytes` bytes → a topic of `--partitions`:
  `kcat -P -l FILE`; Java's `FileStreamSourceConnector` run by a real Java Connect worker
  (`reconciler.devtools.connect.start_connect`, created through its REST API, one task);
  our `file-source` (`format: jsonl`, `key: none`, one task) through `reconciler run M --once`;
- sink, that topic (the records kcat produced, the same for all three) → lines in files:
  `kcat -C -e -f '%s\\n'` into a file; Java's `FileStreamSinkConnector` (one file, one task per
  partition: each record is one `write` to a file opened for appending, so lines never mix);
  our `file-sink` (one task per partition, a file per partition) and `parquet-sink` through
  `reconciler run --once`;
- our three again on a standalone Spark cluster started from the installed PySpark (a master and
  two 1-core workers on this machine, `reconciler.devtools.spark_cluster`), the executors on the
  packed environment through `spark.archives`, as docs/clusters.md's recipe (`--no-cluster` skips them).

How each side is timed, so that each pays for everything it needs to move the records:

- kcat: the process from start to exit (it exits once everything is delivered / read to the end).
- Java: from the REST call that creates the connector until the last record is in the topic
  (the topic's end offsets, polled every 20 ms) / the last line is in the file (its size,
  polled every 20 ms). The worker is already running, as a Connect cluster would be; the
  connector's start (rebalance, task start) is counted. "Fixed cost" is the time to the first
  record / line. It runs with Connect's defaults, as deployed: at-least-once sources (no
  `exactly.once.source.support`), the worker's producer and consumer settings,
  FileStreamSource's `batch.size` of 2,000 lines.
- Ours: `reconciler run M --once` as a process from start to exit, as CI or a cron job runs it
  (interpreter, imports, apply, Spark session start, the batch, commits, Spark stop), exactly
  once (the source writes records and offsets in Kafka transactions), each connector on a Connect
  group of its own. It runs through bench/reconciler_timed.py, the same command with the
  runtime's debug log, which gives the batch's Spark job time: the data's part of a batch, which
  a `reconciler run` loop (its Spark session kept) pays per batch besides the tick's control
  plane work. "Fixed cost" is the same
  command moving one record (with its own connector and group), and that batch's job time:
  what every command, and every batch job, pays before its first record.

CPU seconds: kcat's and ours by `wait4`, with every descendant (PySpark's Python workers are
sampled: bench/measure.py); the
Java worker's JVM over its phase; and, for every phase, the broker's JVM ("broker CPU s").
Peak memory: kcat's own peak; ours summed over the process tree (driver, Spark's JVM, Python
workers), sampled every 100 ms; the Java worker's whole RSS in its phase (sampled likewise).
On the cluster, ours adds the processes under the two worker JVMs (executors, their Python
workers, and the workers themselves), sampled every 100 ms (bench/measure.py `ClusterMeter`).
Each side's output is checked afterwards: every record exactly once (ids compared).

Other work on the machine slows every side: the load average is printed, and the CPU seconds
say what each side costs whatever the load. Use `--records 200000` for a quick run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from h2h_sides import (  # bench/h2h_sides.py
    ID_BASE,
    JavaSide,
    OursSide,
    Result,
    Topics,
    count_topic_lines,
    verify_lines,
)
from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import ClusterMeter, become_subreaper, cpu_of, load_average, run_measured  # bench/measure.py

from reconciler.devtools.broker import start_broker
from reconciler.devtools.connect import start_connect

JAVA_GROUP = "h2h-java"


def write_input(path: Path, records: int, record_bytes: int) -> None:
    """N distinct JSON lines of `record_bytes` bytes each (newline excluded), ids ID_BASE + 0…N-1
    (ten digits, so every line has the same length)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pad = "x" * max(0, record_bytes - len(f'{{"id":{ID_BASE},"pad":""}}'))
    with path.open("w") as out:
        out.writelines(f'{{"id":{ID_BASE + i},"pad":"{pad}"}}\n' for i in range(records))


def phase(title: str) -> None:
    print(f"  {title}… (load average {load_average()})", file=sys.stderr, flush=True)


def kcat_measured(label: str, command: list[str], broker_pid: int, records: int, stdout: Any = None) -> Result:
    broker = cpu_of(broker_pid)
    with open(stdout or "/dev/null", "wb") as sink:
        code, usage = run_measured(command, stdout=sink)
    if code != 0:
        raise SystemExit(f"{label}: kcat exited with {code}")
    return Result(label, usage, records, cpu_of(broker_pid) - broker)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2, help="partitions of the topics (default 2)")
    parser.add_argument("--no-cluster", dest="cluster", action="store_false",
                        help="skip our rows on a standalone cluster (local[*] only)")
    args = parser.parse_args(argv)
    kcat = kcat_binary()
    become_subreaper()  # before anything starts: orphans of `reconciler run` come to us (CPU counted)
    workdir = Path(tempfile.mkdtemp(prefix="bench-h2h-"))
    started_load = load_average()
    try:
        with start_broker(workdir / "broker-log") as broker, \
                start_connect(broker.bootstrap, JAVA_GROUP, workdir / "connect-log") as worker:
            results = run_all(args, kcat, workdir, broker.bootstrap, broker.pid, worker)
            errors = worker.log_errors()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, started_load, results)
    if errors:
        print(f"\nthe Java worker logged {len(errors)} ERROR line(s); the first: {errors[0]}")
    return 0


def run_all(args: argparse.Namespace, kcat: str, workdir: Path, bootstrap: str, broker_pid: int,
            worker: Any) -> dict[str, list[Result]]:
    n = args.records
    source_file = workdir / "in" / "records.jsonl"
    write_input(source_file, n, args.record_bytes)
    topics = Topics(bootstrap, args.partitions)
    java, ours = JavaSide(worker, bootstrap, broker_pid), OursSide(bootstrap, broker_pid, workdir / "ours")
    results: dict[str, list[Result]] = {"source": [], "sink": []}
    run_sources(args, kcat, workdir, source_file, topics, java, ours, results["source"])
    out = workdir / "out"
    out.mkdir()
    run_sinks(args, kcat, out, topics, java, ours, results["sink"])
    if args.cluster:
        run_on_cluster(args, workdir, source_file, topics, ours, results)
    return results


def run_sources(args: argparse.Namespace, kcat: str, workdir: Path, source_file: Path, topics: Topics,
                java: JavaSide, ours: OursSide, rows: list[Result]) -> None:
    n, bootstrap, broker_pid = args.records, topics.bootstrap, ours.broker_pid
    phase("source: kcat -P")
    topics.create("src-kcat")
    kcat_p = [kcat, "-P", "-b", bootstrap, "-t", "src-kcat", "-l", str(source_file), *producer_flags()]
    rows.append(kcat_measured("kcat -P", kcat_p, broker_pid, n))
    phase("source: Java FileStreamSourceConnector")
    topics.create("src-java")
    rows.append(java.source(source_file, "src-java", n, topics))
    phase("source: our file-source, reconciler run --once")
    topics.create("src-ours")
    rows.append(ours.source(source_file.parent, "src-ours", n))
    phase("source: our fixed cost (one record)")
    topics.create("src-fixed")
    one = workdir / "in-one" / "one.jsonl"
    write_input(one, 1, args.record_bytes)
    with_fixed(rows[-1], ours.source(one.parent, "src-fixed", 1, name="fixed"))
    phase("checking the three topics")
    check_topics(kcat, bootstrap, ("src-kcat", "src-java", "src-ours"), workdir, n)


def check_topics(kcat: str, bootstrap: str, names: tuple[str, ...], workdir: Path, n: int) -> None:
    for topic in names:
        dump = workdir / f"{topic}.lines"
        count_topic_lines(kcat, bootstrap, topic, dump)
        verify_lines([dump], n, f"topic {topic}")
        dump.unlink()


def run_sinks(args: argparse.Namespace, kcat: str, out: Path, topics: Topics, java: JavaSide, ours: OursSide,
              rows: list[Result]) -> None:
    n, bootstrap, partitions = args.records, topics.bootstrap, args.partitions
    phase("sink: kcat -C")
    kcat_c = [kcat, "-C", "-b", bootstrap, "-t", "src-kcat", "-o", "beginning", "-e", "-q", "-f", "%s\n", *consumer_flags()]
    rows.append(kcat_measured("kcat -C", kcat_c, ours.broker_pid, n, stdout=out / "kcat.txt"))
    phase("sink: Java FileStreamSinkConnector")
    rows.append(java.sink("src-kcat", out / "java.txt", n, n * (args.record_bytes + 1), partitions))
    ours_sinks(ours, topics, out, n, partitions, rows, "")
    phase("checking the outputs")
    verify_lines([out / "kcat.txt"], n, "kcat -C output")
    verify_lines([out / "java.txt"], n, "FileStreamSink output")


def ours_sinks(ours: OursSide, topics: Topics, out: Path, n: int, partitions: int, rows: list[Result],
               tag: str) -> None:
    """Our file-sink (with its fixed cost) and parquet-sink over `src-kcat`, each output checked."""
    phase(f"sink: our file-sink on {ours.where}, reconciler run --once")
    rows.append(ours.sink("src-kcat", out / f"ours{tag}", n, partitions, name=f"bench{tag}"))
    phase(f"sink: our fixed cost on {ours.where} (one record)")
    topics.create(f"sink-fixed{tag}")
    topics.produce_one(f"sink-fixed{tag}")
    with_fixed(rows[-1], ours.sink(f"sink-fixed{tag}", out / f"fixed{tag}", 1, partitions, name=f"fixed{tag}"))
    verify_lines(sorted(p for p in (out / f"ours{tag}").rglob("*.txt") if not p.name.startswith(".")), n,
                 f"file-sink output ({ours.where})")
    phase(f"sink: our parquet-sink on {ours.where}, reconciler run --once")
    rows.append(ours.sink("src-kcat", out / f"parquet{tag}", n, partitions, name=f"bench{tag}", sink="parquet-sink"))
    verify_parquet(out / f"parquet{tag}", n, f"parquet-sink output ({ours.where})")


def verify_parquet(path: Path, records: int, what: str) -> None:
    """Every id exactly once in the Parquet files' values (the same check as `verify_lines`)."""
    import pyarrow.parquet as pq

    lines = path / "lines.txt"
    with lines.open("wb") as out:
        for file in sorted(p for p in path.rglob("*.parquet") if not p.name.startswith(".")):
            out.writelines(v + b"\n" for v in pq.read_table(file, columns=["value"]).column("value").to_pylist())
    verify_lines([lines], records, what)


def run_on_cluster(args: argparse.Namespace, workdir: Path, source_file: Path, topics: Topics, ours: OursSide,
                   results: dict[str, list[Result]]) -> None:
    """Our rows again on a standalone cluster (a master and two 1-core workers on this machine,
    `reconciler.devtools.spark_cluster`), the executors on the packed environment, as docs/clusters.md
    says; their CPU and memory are metered through the workers."""
    from reconciler.devtools.pack_env import cached_pack
    from reconciler.devtools.spark_cluster import start_cluster

    phase("starting a standalone cluster (master + 2 workers) and packing the executors' environment")
    env = cached_pack()
    with start_cluster(workdir / "spark", workers=2) as cluster:
        spark = ("--spark-master", cluster.master_url, "--spark-conf", f"spark.archives={env}#environment",
                 "--spark-conf", "spark.pyspark.python=./environment/bin/python",
                 "--spark-conf", "spark.executor.memory=512m")
        meter = ClusterMeter([w.pid for w in cluster.workers])
        on_cluster = OursSide(ours.bootstrap, ours.broker_pid, workdir / "ours-cluster", spark, meter,
                              "standalone cluster")
        phase("source: our file-source on the cluster")
        topics.create("src-cluster")
        results["source"].append(on_cluster.source(source_file.parent, "src-cluster", args.records, name="cluster"))
        ours_sinks(on_cluster, topics, workdir / "out", args.records, args.partitions, results["sink"], "-cluster")
    check_topics(kcat_binary(), topics.bootstrap, ("src-cluster",), workdir, args.records)


def with_fixed(result: Result, fixed: Result) -> None:
    """Our side's fixed costs: of the command and of its batch job, from a run moving one record."""
    result.fixed_s, result.fixed_job_s = fixed.usage.seconds, fixed.job_s
    result.notes.append(
        f"one record: {fixed.usage.seconds:.2f} s ({fixed.usage.cpu_s:.2f} CPU s, {fixed.usage.peak_rss / 2**20:,.0f} MB), "
        f"of which the Spark session start {fixed.session_s or 0:.2f} s and the batch job {fixed.job_s or 0:.2f} s"
    )


HEADER = f"{'side':<34} {'time':>8} {'records/s':>10} {'vs kcat':>8} {'fixed s':>8} {'CPU s':>6} {'peak MB':>8} {'broker CPU s':>12}"


def line(label: str, seconds: float, records: int, reference: float, fixed: float | None, usage: str) -> str:
    rate = records / seconds if seconds > 0 else float("nan")
    fixed_text = f"{fixed:.2f}" if fixed is not None else "-"
    return f"{label:<34} {seconds:>6.2f} s {rate:>10,.0f} {rate / reference:>7.2f}x {fixed_text:>8} {usage}"


def report(args: argparse.Namespace, started_load: str, results: dict[str, list[Result]]) -> None:
    print(
        f"\nhead-to-head: {args.records:,} records of {args.record_bytes} B (+ newline), topics of {args.partitions} "
        f"partitions, Apache Kafka (one KRaft node) on loopback, Spark local[*] and a standalone cluster "
        f"(master + two 1-core workers on the same machine), {os.cpu_count()} cores"
    )
    print(f"load average: {started_load} at the start, {load_average()} at the end (other work slows every side)")
    for direction, rows in results.items():
        print(f"\n{direction}\n{HEADER}")
        reference = rows[0].records / rows[0].usage.seconds
        for row in rows:
            usage = f"{row.usage.cpu_s:>6.2f} {row.usage.peak_rss / 2**20:>8,.0f} {row.broker_cpu_s:>12.2f}"
            print(line(row.label, row.usage.seconds, row.records, reference, row.fixed_s, usage))
            if row.job_s is not None:
                print(line("    its batch's Spark job", row.job_s, row.records, reference, row.fixed_job_s, ""))
                print(f"    Spark session start: {row.session_s or 0:.2f} s of the {row.usage.seconds:.2f} s")
            elif row.fixed_s is not None:
                print(line("    from its first record", row.usage.seconds - row.fixed_s, row.records, reference, None, ""))
            for note in row.notes:
                print(f"    {note}")
    print("\nfixed s: Java, from creating the connector to its first record/line; ours, the same command moving one "
          "record, and the Spark job of that batch.\nCPU s: kcat's and our process tree's (wait4; PySpark's workers sampled); the Java worker JVM's "
          "in its phase. broker CPU s: the Kafka JVM's in the same phase.")


if __name__ == "__main__":
    sys.exit(main())

