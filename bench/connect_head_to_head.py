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
  our `file-sink` (one task per partition, a file per partition) through `reconciler run --once`.

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
Each side's output is checked afterwards: every record exactly once (ids compared).

Other work on the machine slows every side: the load average is printed, and the CPU seconds
say what each side costs whatever the load. Use `--records 200000` for a quick run.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from h2h_sides import ID_BASE, JavaSide, OursSide, Result, Topics, count_topic_lines, verify_lines  # bench/h2h_sides.py
from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import become_subreaper, cpu_of, load_average, run_measured  # bench/measure.py

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
    n, partitions = args.records, args.partitions
    source_file = workdir / "in" / "records.jsonl"
    write_input(source_file, n, args.record_bytes)
    topics = Topics(bootstrap, partitions)
    java, ours = JavaSide(worker, bootstrap, broker_pid), OursSide(bootstrap, broker_pid, workdir / "ours")
    results: dict[str, list[Result]] = {"source": [], "sink": []}

    phase("source: kcat -P")
    topics.create("src-kcat")
    kcat_p = [kcat, "-P", "-b", bootstrap, "-t", "src-kcat", "-l", str(source_file), *producer_flags()]
    results["source"].append(kcat_measured("kcat -P", kcat_p, broker_pid, n))
    phase("source: Java FileStreamSourceConnector")
    topics.create("src-java")
    results["source"].append(java.source(source_file, "src-java", n, topics))
    phase("source: our file-source, reconciler run --once")
    topics.create("src-ours")
    results["source"].append(ours.source(source_file.parent, "src-ours", n))
    phase("source: our fixed cost (one record)")
    topics.create("src-fixed")
    one = workdir / "in-one" / "one.jsonl"
    write_input(one, 1, args.record_bytes)
    with_fixed(results["source"][-1], ours.source(one.parent, "src-fixed", 1, name="fixed"))

    phase("checking the three topics")
    for topic in ("src-kcat", "src-java", "src-ours"):
        dump = workdir / f"{topic}.lines"
        count_topic_lines(kcat, bootstrap, topic, dump)
        verify_lines([dump], n, f"topic {topic}")
        dump.unlink()

    out = workdir / "out"
    out.mkdir()
    phase("sink: kcat -C")
    kcat_c = [kcat, "-C", "-b", bootstrap, "-t", "src-kcat", "-o", "beginning", "-e", "-q", "-f", "%s\n", *consumer_flags()]
    results["sink"].append(kcat_measured("kcat -C", kcat_c, broker_pid, n, stdout=out / "kcat.txt"))
    phase("sink: Java FileStreamSinkConnector")
    expected_bytes = n * (args.record_bytes + 1)
    results["sink"].append(java.sink("src-kcat", out / "java.txt", n, expected_bytes, partitions))
    phase("sink: our file-sink, reconciler run --once")
    results["sink"].append(ours.sink("src-kcat", out / "ours", n, partitions))
    phase("sink: our fixed cost (one record)")
    topics.create("sink-fixed")
    topics.produce_one("sink-fixed")
    with_fixed(results["sink"][-1], ours.sink("sink-fixed", out / "fixed", 1, partitions, name="fixed"))

    topics.close()
    phase("checking the three outputs")
    verify_lines([out / "kcat.txt"], n, "kcat -C output")
    verify_lines([out / "java.txt"], n, "FileStreamSink output")
    verify_lines(sorted(p for p in (out / "ours").rglob("*.txt") if not p.name.startswith(".")), n, "file-sink output")
    return results


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
        f"partitions, Apache Kafka (one KRaft node) on loopback, Spark local[*], 2 cores"
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

