"""Head-to-head: Java Kafka Connect's FileStream connectors vs our file-source and file-sink.

    .venv/bin/python bench/connect_head_to_head.py [--records 1000000] [--rounds 3] [--no-cluster] [--spark-connect]

The same records, on the same machine, in the same run, on Apache Kafka (one KRaft node,
`reconciler.devtools.broker`), with Debian's `kcat` as the reference client (`apt-get install
-y kcat`; it gets our clients' librdkafka settings, bench/kcat.py):

- source, a file of N JSON lines of ~`--record-bytes` bytes → a topic of `--partitions`:
  `kcat -P -l FILE`; Java's `FileStreamSourceConnector` run by a real Java Connect worker
  (`reconciler.devtools.connect.start_connect`, created through its REST API, one task);
  our `file-source` (`format: jsonl`, `key: none`, one task) through `reconciler run M --once`;
- sink, the topic of kcat's first source run (the same records for every sink run) → lines in files:
  `kcat -C -e -f '%s\\n'` into a file; Java's `FileStreamSinkConnector` (one file, one task per
  partition: each record is one `write` to a file opened for appending, so lines never mix);
  our `file-sink` (one task per partition, a file per partition) and `parquet-sink` through
  `reconciler run --once`;
- our three again on a standalone Spark cluster started from the installed PySpark (a master and
  two 1-core workers on this machine, `reconciler.devtools.spark_cluster`), the executors on the
  packed environment through `spark.archives`, as docs/clusters.md's recipe (`--no-cluster` skips them).
  The cluster is started once, before the first round; its rows run in every round, alternating
  with the others like any side. `--spark-connect`: our `file-source` and its fixed cost on a Spark
  Connect server too, its server session set up by one untimed run first (kept, as on a server in use).

`--rounds` rounds (3 by default): the sources' rounds, then the sinks'. In each, every side runs
once, in turn (kcat, Java, ours…, the order reversed every other round: `measure.alternating`, so
a machine getting busier or quieter weighs on all alike), each run into a topic, files and a
connector (a Connect group) of its own, and each run's output is read back before it counts:
every id exactly once, else the bench prints no figure and exits non-zero (`measure.RunFailed`).
Each time is the median of the side's runs with the fastest and slowest beside it (`Spread`);
"vs kcat" is the median of the rounds' own ratios of rates (`measure.ratios`: kcat's time over
the side's, round by round); the fixed costs, CPU seconds and broker CPU seconds are medians,
peak memory the largest of the runs.

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
  runtime's debug log, which gives the batch's Spark job time (less the Spark session's start,
  which the runtime does inside its first job: h2h_sides.job_times): the data's part of a batch, which
  a `reconciler run` loop (its Spark session kept) pays per batch besides the tick's control
  plane work. "Fixed cost" is the same
  command moving one record (with its own connector, group and topic, a side of its own in each
  round, paired with the round's full run), and that batch's job time: what every command, and
  every batch job, pays before its first record.

CPU seconds: kcat's and ours by `wait4`, with every descendant (PySpark's Python workers are
sampled: bench/measure.py); the
Java worker's JVM over its phase; and, for every phase, the broker's JVM ("broker CPU s").
Peak memory: kcat's own peak; ours summed over the process tree (driver, Spark's JVM, Python
workers), sampled every 100 ms; the Java worker's whole RSS in its phase (sampled likewise).
On the cluster, ours adds the processes under the two worker JVMs (executors, their Python
workers, and the workers themselves), sampled every 100 ms (bench/measure.py `ClusterMeter`).

Other work on the machine slows every side: the load average is printed, and the CPU seconds
say what each side costs whatever the load. Use `--records 200000` for a quick run.
"""

from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from h2h_sides import (  # bench/h2h_sides.py
    ID_BASE,
    JavaSide,
    OursSide,
    Result,
    Topics,
    check_topic,
    on_spark_connect,
    one_file,
    txt_files,
    verify_parquet,
)
from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import (  # bench/measure.py
    ClusterMeter,
    Spread,
    alternating,
    become_subreaper,
    cpu_of,
    load_average,
    ratios,
    require,
    run_measured,
    run_notes,
)

from reconciler.devtools.broker import start_broker
from reconciler.devtools.connect import start_connect

JAVA_GROUP = "h2h-java"
SINK_INPUT = "src-kcat-1"  # every sink run reads the topic of kcat's first source run
FIXED = " (fixed cost)"  # a side named like one of ours with this after: its one-record run in the round


def write_input(path: Path, records: int, record_bytes: int) -> None:
    """N distinct JSON lines of `record_bytes` bytes each (newline excluded), ids ID_BASE + 0…N-1
    (ten digits, so every line has the same length)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pad = "x" * max(0, record_bytes - len(f'{{"id":{ID_BASE},"pad":""}}'))
    with path.open("w") as out:
        out.writelines(f'{{"id":{ID_BASE + i},"pad":"{pad}"}}\n' for i in range(records))


def phase(title: str) -> None:
    print(f"  {title}… (load average {load_average()})", file=sys.stderr, flush=True)


def kcat_measured(label: str, command: list[str], broker_pid: int, records: int, stdout: Path | None = None) -> Result:
    broker = cpu_of(broker_pid)
    with open(stdout or "/dev/null", "wb") as sink:
        code, usage = run_measured(command, stdout=sink)
    require(code == 0, f"{label}: kcat exited with {code}")
    return Result(label, usage, records, cpu_of(broker_pid) - broker)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--record-bytes", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=2, help="partitions of the topics (default 2)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="runs of each side, alternating; figures are their medians (default 3)")
    parser.add_argument("--no-cluster", dest="cluster", action="store_false",
                        help="skip our rows on a standalone cluster (local[*] only)")
    parser.add_argument("--spark-connect", action="store_true",
                        help="also our file-source on a Spark Connect server (its fixed cost: issue 30's figure)")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error("--rounds is at least 1")
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


Side = Callable[[int], Result]  # one run of a side; its number (1, 2…) names its fresh topic, files, connector


@dataclass(frozen=True)
class Bench:
    """What every side of a run needs: the input files, the broker, kcat, the Java and our sides."""

    args: argparse.Namespace
    kcat: str
    workdir: Path
    topics: Topics
    java: JavaSide
    ours: OursSide

    @property
    def records(self) -> int:
        return int(self.args.records)

    def checked_topic(self, prefix: str, records: int, run: Callable[[str], Result]) -> Side:
        """`run` into a new topic `prefix-N`, read back (every id once) before it counts."""
        def side(number: int) -> Result:
            topic = f"{prefix}-{number}"
            self.topics.create(topic)
            result = run(topic)
            check_topic(self.kcat, self.topics.bootstrap, topic, self.workdir, records)
            return result
        return side

    def checked_output(self, prefix: str, records: int, run: Callable[[Path, str], Result],
                       check: Callable[[Path, int, str], None]) -> Side:
        """`run` into a new path `out/prefix-N` as connector `prefix-N`, checked, then removed."""
        def side(number: int) -> Result:
            path, name = self.workdir / "out" / f"{prefix}-{number}", f"{prefix}-{number}"
            path.parent.mkdir(parents=True, exist_ok=True)
            result = run(path, name)
            check(path, records, f"{result.label}, run {number}")
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
            return result
        return side


def run_all(args: argparse.Namespace, kcat: str, workdir: Path, bootstrap: str, broker_pid: int,
            worker: Any) -> dict[str, list[list[Result]]]:
    """The sources' rounds, then the sinks' (which read the topic of kcat's first source run)."""
    write_input(workdir / "in" / "records.jsonl", args.records, args.record_bytes)
    write_input(workdir / "in-one" / "one.jsonl", 1, args.record_bytes)
    bench = Bench(args, kcat, workdir, Topics(bootstrap, args.partitions), JavaSide(worker, bootstrap, broker_pid),
                  OursSide(bootstrap, broker_pid, workdir / "ours"))
    with ExitStack() as stack:
        cluster = stack.enter_context(on_cluster(bench)) if args.cluster else None
        connect = stack.enter_context(on_spark_connect(bench.ours)) if args.spark_connect else None
        sources = alternating(args.rounds, numbered("source", source_sides(bench, cluster, connect)))
        sinks = alternating(args.rounds, numbered("sink", sink_sides(bench, cluster)))
    return {"source": with_fixed_runs(sources), "sink": with_fixed_runs(sinks)}


def numbered(direction: str, sides: dict[str, Side]) -> dict[str, Callable[[], Result]]:
    """Each side called with its run number, announced on stderr."""
    def counted(name: str, run: Side) -> Callable[[], Result]:
        numbers = itertools.count(1)

        def once() -> Result:
            number = next(numbers)
            phase(f"{direction}: {name}, run {number}")
            return run(number)
        return once
    return {name: counted(name, run) for name, run in sides.items()}


def source_sides(bench: Bench, cluster: OursSide | None, connect: OursSide | None) -> dict[str, Side]:
    n, source_file, one = bench.records, bench.workdir / "in" / "records.jsonl", bench.workdir / "in-one"
    kcat_p = [bench.kcat, "-P", "-b", bench.topics.bootstrap, "-l", str(source_file), *producer_flags()]
    sides = {
        "kcat -P": bench.checked_topic("src-kcat", n, lambda topic: kcat_measured(
            "kcat -P", [*kcat_p, "-t", topic], bench.ours.broker_pid, n)),
        "Java FileStreamSource": bench.checked_topic("src-java", n, lambda topic: bench.java.source(
            source_file, topic, n, bench.topics, name=topic)),
        "ours: file-source": bench.checked_topic("src-ours", n, lambda topic: bench.ours.source(
            source_file.parent, topic, n, name=topic)),
        "ours: file-source" + FIXED: bench.checked_topic("src-fixed", 1, lambda topic: bench.ours.source(
            one, topic, 1, name=topic)),
    }
    if cluster is not None:
        sides["ours: file-source, cluster"] = bench.checked_topic("src-cluster", n, lambda topic: cluster.source(
            source_file.parent, topic, n, name=topic))
    if connect is not None:
        sides |= connect_sides(bench, connect, source_file.parent, one)
    return sides


def connect_sides(bench: Bench, connect: OursSide, records: Path, one: Path) -> dict[str, Side]:
    """Our file-source on Spark Connect and its fixed cost, once an untimed run set the session up."""
    phase("source: ours on spark connect, setting its server session up (not timed)")
    bench.checked_topic("src-connect-setup", 1, lambda topic: connect.source(one, topic, 1, name=topic))(0)
    n = bench.records
    return {
        "ours: file-source, spark connect": bench.checked_topic("src-connect", n, lambda topic: connect.source(
            records, topic, n, name=topic)),
        "ours: file-source, spark connect" + FIXED: bench.checked_topic("src-connect-fixed", 1, lambda topic: (
            connect.source(one, topic, 1, name=topic))),
    }


def sink_sides(bench: Bench, cluster: OursSide | None) -> dict[str, Side]:
    n, bootstrap, partitions = bench.records, bench.topics.bootstrap, bench.args.partitions
    kcat_c = [bench.kcat, "-C", "-b", bootstrap, "-t", SINK_INPUT, "-o", "beginning", "-e", "-q", "-f", "%s\n",
              *consumer_flags()]
    size = n * (bench.args.record_bytes + 1)
    sides = {
        "kcat -C": bench.checked_output("kcat", n, lambda path, _: kcat_measured(
            "kcat -C", kcat_c, bench.ours.broker_pid, n, stdout=path), one_file),
        "Java FileStreamSink": bench.checked_output("java-file-sink", n, lambda path, name: bench.java.sink(
            SINK_INPUT, path, n, size, partitions, name=name), one_file),
    }
    for where, side in (("local", bench.ours), ("cluster", cluster)):
        if side is not None:
            sides.update(ours_sinks(bench, side, where))
    return sides


def ours_sinks(bench: Bench, ours: OursSide, where: str) -> dict[str, Side]:
    """Our file-sink (with its fixed cost: one record from a topic of its own) and parquet-sink."""
    n, partitions = bench.records, bench.args.partitions

    def one_record(path: Path, name: str) -> Result:
        bench.topics.create(f"sink-{name}")
        bench.topics.produce_one(f"sink-{name}")
        return ours.sink(f"sink-{name}", path, 1, partitions, name=name)

    return {
        f"ours: file-sink, {where}": bench.checked_output(f"{where}-file-sink", n, lambda path, name: ours.sink(
            SINK_INPUT, path, n, partitions, name=name), txt_files),
        f"ours: file-sink, {where}{FIXED}": bench.checked_output(f"{where}-fixed-sink", 1, one_record, txt_files),
        f"ours: parquet-sink, {where}": bench.checked_output(f"{where}-parquet", n, lambda path, name: ours.sink(
            SINK_INPUT, path, n, partitions, name=name, sink="parquet-sink"), verify_parquet),
    }


@contextmanager
def on_cluster(bench: Bench) -> Iterator[OursSide]:
    """Our side on a standalone cluster (a master and two 1-core workers on this machine,
    `reconciler.devtools.spark_cluster`) started once for every round, the executors on the packed
    environment, as docs/clusters.md says; their CPU and memory are metered through the workers."""
    from reconciler.devtools.pack_env import cached_pack
    from reconciler.devtools.spark_cluster import start_cluster

    phase("starting a standalone cluster (master + 2 workers) and packing the executors' environment")
    env = cached_pack()
    with start_cluster(bench.workdir / "spark", workers=2) as cluster:
        spark = ("--spark-master", cluster.master_url, "--spark-conf", f"spark.archives={env}#environment",
                 "--spark-conf", "spark.pyspark.python=./environment/bin/python",
                 "--spark-conf", "spark.executor.memory=512m")
        meter = ClusterMeter([w.pid for w in cluster.workers])
        yield OursSide(bench.ours.bootstrap, bench.ours.broker_pid, bench.workdir / "ours-cluster", spark, meter,
                       "standalone cluster")


def with_fixed_runs(runs: dict[str, list[Result]]) -> list[list[Result]]:
    """The sides' runs, each of ours given the fixed cost measured in the same round (the side
    named like it with FIXED after)."""
    for name, fixed in runs.items():
        if name.endswith(FIXED):
            for result, one in zip(runs[name.removesuffix(FIXED)], fixed, strict=True):
                result.fixed_s, result.fixed_job_s, result.fixed_run = one.usage.seconds, one.job_s, one
    return [results for name, results in runs.items() if not name.endswith(FIXED)]


HEADER = (f"{'side':<34} {'time (min–max)':>30} {'records/s':>10} {'vs kcat (min–max)':>27} {'fixed s':>8} "
          f"{'CPU s':>6} {'peak MB':>8} {'broker CPU s':>12}")


def line(label: str, seconds: list[float], records: int, kcat: list[float], fixed: list[float], usage: str) -> str:
    """A side's median time with its spread, its rate, and the median of the rounds' own ratios
    to kcat's rate (kcat's time over the side's, round by round)."""
    spread, versus = Spread.of(seconds), ratios(kcat, seconds)
    fixed_text = f"{Spread.of(fixed).median:.2f}" if fixed else "-"
    return (f"{label:<34} {spread.show():>30} {records / spread.median:>10,.0f} {versus.show('x'):>27} "
            f"{fixed_text:>8} {usage}")


def side_lines(runs: list[Result], kcat: list[float]) -> list[str]:
    first, seconds = runs[0], [r.usage.seconds for r in runs]
    fixed = [r.fixed_s for r in runs if r.fixed_s is not None]
    usage = (f"{Spread.of([r.usage.cpu_s for r in runs]).median:>6.2f} "
             f"{max(r.usage.peak_rss for r in runs) / 2**20:>8,.0f} {Spread.of([r.broker_cpu_s for r in runs]).median:>12.2f}")
    lines = [line(first.label, seconds, first.records, kcat, fixed, usage)]
    jobs = [r.job_s or 0.0 for r in runs]
    if first.job_s is not None and all(jobs):  # ours: every run's job time (h2h_sides requires one)
        fixed_jobs = [r.fixed_job_s for r in runs if r.fixed_job_s is not None]
        lines.append(line("    its batch's Spark job", jobs, first.records, kcat, fixed_jobs, ""))
        lines.append(f"    Spark session start: {Spread.of([r.session_s or 0.0 for r in runs]).show()}")
    elif len(fixed) == len(runs) and all(s > f for s, f in zip(seconds, fixed, strict=True)):
        lines.append(line("    from its first record", [s - f for s, f in zip(seconds, fixed, strict=True)],
                          first.records, kcat, [], ""))
    ones = [r.fixed_run for r in runs if r.fixed_run is not None]
    if ones:
        lines.append(
            f"    one record: {Spread.of([o.usage.seconds for o in ones]).show()}, "
            f"{Spread.of([o.usage.cpu_s for o in ones]).median:.2f} CPU s, "
            f"{max(o.usage.peak_rss for o in ones) / 2**20:,.0f} MB; of which the Spark session start "
            f"{Spread.of([o.session_s or 0.0 for o in ones]).median:.2f} s and the batch job "
            f"{Spread.of([o.job_s or 0.0 for o in ones]).median:.2f} s (medians)")
    lines.extend(f"    {note}" for note in run_notes([r.notes for r in runs]))
    return lines


def report(args: argparse.Namespace, started_load: str, results: dict[str, list[list[Result]]]) -> None:
    where = ("Spark local[*] and a standalone cluster (master + two 1-core workers on the same machine)"
             if args.cluster else "Spark local[*]")
    print(
        f"\nhead-to-head: {args.records:,} records of {args.record_bytes} B (+ newline), topics of {args.partitions} "
        f"partitions, Apache Kafka (one KRaft node) on loopback, {where}, {os.cpu_count()} cores; median of "
        f"{args.rounds} runs a side, the sides alternating, every run's output checked (each id exactly once)"
    )
    print(f"load average: {started_load} at the start, {load_average()} at the end (other work slows every side)")
    for direction, rows in results.items():
        print(f"\n{direction}\n{HEADER}")
        kcat = [r.usage.seconds for r in rows[0]]
        for runs in rows:
            print("\n".join(side_lines(runs, kcat)))
    print("\nvs kcat: the median of the rounds' own ratios of rates. fixed s: Java, from creating the connector to "
          "its first record/line; ours, the same command moving one record, and the Spark job of that batch.\n"
          "CPU s: kcat's and our process tree's (wait4; PySpark's workers sampled); the Java worker JVM's in its "
          "phase (medians). peak MB: the largest of the runs. broker CPU s: the Kafka JVM's in the same phase.")


if __name__ == "__main__":
    sys.exit(main())

