"""Head-to-head for PostgreSQL (issue 29): topic → table and table → topic, ours against the limits.

    .venv/bin/python bench/jdbc.py sink [--records 1000000] [--row-bytes 100] [--partitions 2] [--rounds 3]
    .venv/bin/python bench/jdbc.py source [--records 1000000] [--row-bytes 100] [--partitions 2] [--rounds 3]

Both start their own Apache Kafka (`reconciler.devtools.broker`) and PostgreSQL
(`reconciler.devtools.postgres`, the tests' server: fsync off, on loopback), or use running ones
(`--bootstrap-servers`, `--postgres postgresql://superuser:password@host:port/db`; the sink's Java
side also `--connect-url` of a worker whose plugin path has Debezium's JDBC sink): the tests
pass their session's. N rows of about `--row-bytes` bytes (id, customer, quantity, pad).

The sink side (`sink_*`): the rows as JsonConverter records with schemas (the schema rides in
every record, as Connect writes them) produced by `kcat -P` into a topic of `--partitions`, and
as a CSV file. Each side writes into a fresh table of the same shape (no key for insert,
`PRIMARY KEY (id)` for upsert):

- `psql \\copy` of the CSV file: the limit, one COPY from a client;
- `kcat -C -e` of the topic: the reference, the least work a Kafka client does to read it;
- ours, `reconciler run --once` with jdbc-sink (one task per partition) in insert and upsert
  (`pk.mode=record_value`) modes: the whole command, Spark's start included, exactly once;
  beside it, from the runtime's debug log, the Spark session's start and the batch's job
  without it (the job's rate against `\\copy`'s);
- Debezium's JDBC sink (`io.debezium:debezium-connector-jdbc`, at
  `connect_plugins.JDBC_SINK_RESOLVES`, the newest Maven Central resolves) in a running Java Connect worker,
  same records, same tables, timed from its REST creation to the last row in the table;
- once, ours in insert mode SIGKILLed mid-batch (the table holding a third of the rows), then
  run again: the table must hold every row once.

The source side (`source_*`, bench/jdbc_source_sides.py): the rows in one table (`id` its
primary key), moved into a fresh topic of `--partitions` per run by
- `psql -c "COPY (SELECT …) TO STDOUT" | kcat -P`: the limit, the server's text rows (a
  record a line, ~100 B) straight into a producer;
- ours, `reconciler run --once` with jdbc-source (`mode=incrementing` on `id`,
  `batch.max.rows=10000`, JsonConverter with schemas: ~4× the bytes per record), exactly once:
  the whole command, Spark's start included.
Each run's topic is read back (read_committed) before its figure counts: as many records as
rows, every id once.

Median of `--rounds` runs, the sides' order rotating each round; the spread (fastest–slowest)
and the median CPU seconds (the Java worker's JVM over its phase) are printed. Every run is
checked before any figure is printed; a wrong count exits non-zero.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from jdbc_sink_sides import (  # bench/
    RUN,
    Debezium,
    ExternalConnect,
    ExternalPostgres,
    Ours,
    Result,
    Rows,
    Target,
    kcat_read,
    psql_copy,
    summary,
)
from jdbc_source_sides import (  # bench/
    BATCH_MAX_ROWS,
    TABLE,
    OursRun,
    OursSource,
    Topics,
    copy_to_kcat,
    fill_table,
)
from kcat import consumer_flags, kcat_binary, producer_flags  # bench/kcat.py
from measure import Spread, Usage, alternating, become_subreaper, load_average, ratios  # bench/measure.py

from reconciler.devtools.broker import start_broker
from reconciler.devtools.connect import RunningConnect, start_connect
from reconciler.devtools.connect_plugins import JDBC_SINK, JDBC_SINK_RESOLVES, debezium_plugin
from reconciler.devtools.postgres import RunningPostgres, start_postgres
from reconciler.kafka.io.admin import create_topic
from reconciler.kafka.settings import KafkaSettings
from reconciler.toolchain.maven import JvmError

TOPIC = f"bench-jdbc-rows-{RUN}"  # a broker the tests share: names of this run only


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="side", required=True)
    sink = commands.add_parser("sink", help="topic → table: jdbc-sink vs psql \\copy, kcat -C, Debezium's JDBC sink")
    source = commands.add_parser("source", help="table → topic: jdbc-source vs psql COPY TO STDOUT | kcat -P")
    for command in (sink, source):
        command.add_argument("--records", type=int, default=1_000_000)
        command.add_argument("--row-bytes", type=int, default=100)
        command.add_argument("--partitions", type=int, default=2)
        command.add_argument("--rounds", type=int, default=3)
        command.add_argument("--bootstrap-servers", help="a running broker (default: one started for the run)")
        command.add_argument("--postgres", metavar="URL", help="a running server, a superuser's postgresql:// URL")
    sink.add_argument("--kill-batch-size", type=int, default=3000, help="batch.size of the run SIGKILLed mid-batch")
    sink.add_argument("--no-java", dest="java", action="store_false", help="skip Debezium's JDBC sink")
    sink.add_argument("--no-upsert", dest="upsert", action="store_false", help="insert mode only (the tests)")
    sink.add_argument("--connect-url", help="a running Java worker with Debezium's JDBC sink (default: one started)")
    args = parser.parse_args(argv)
    return sink_main(args) if args.side == "sink" else source_main(args)


@contextmanager
def servers(args: argparse.Namespace, workdir: Path) -> Iterator[tuple[str, RunningPostgres | ExternalPostgres]]:
    """(bootstrap, PostgreSQL): the ones given, else started for the run and stopped after it."""
    with ExitStack() as stack:
        bootstrap = args.bootstrap_servers or stack.enter_context(start_broker(workdir / "broker-log")).bootstrap
        postgres = (ExternalPostgres.of(args.postgres) if args.postgres
                    else stack.enter_context(start_postgres(workdir / "postgres-log")))
        yield bootstrap, postgres


def new_target(postgres: RunningPostgres | ExternalPostgres) -> Target:
    database = f"bench_{uuid.uuid4().hex[:8]}"
    postgres.create_database(database)
    return Target(postgres, database)


def sink_main(args: argparse.Namespace) -> int:
    kcat = kcat_binary()
    become_subreaper()  # orphans of `reconciler run` come to us: their CPU is counted
    workdir = Path(tempfile.mkdtemp(prefix="bench-jdbc-"))
    rows, started_load = Rows(args.records, args.row_bytes), load_average()
    try:
        records_file, csv = workdir / "records.jsonl", workdir / "rows.csv"
        rows.write(records_file, csv)
        with servers(args, workdir) as (bootstrap, postgres), ExitStack() as java:
            sink_produce(kcat, bootstrap, records_file, args.partitions)
            target = new_target(postgres)
            ours = Ours(bootstrap, target, workdir / "ours", args.partitions)
            sides = sink_sides(kcat, bootstrap, target, ours, csv, workdir, args.records)
            plugin_note = "skipped (--no-java)"
            if args.java:
                worker, plugin_note = sink_worker(args, bootstrap, workdir, java)
                if worker is not None:
                    sides += sink_java_sides(worker, target, args)
            if not args.upsert:
                sides = [side for side in sides if not side[0].endswith(", upsert")]
            results, killed = sink_rounds(sides, args.rounds), sink_kill(ours, args)
        sink_print(args, rows, records_file, results, killed, plugin_note, started_load, ours.jobs)
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def sink_worker(args: argparse.Namespace, bootstrap: str, workdir: Path,
                stack: ExitStack) -> tuple[RunningConnect | ExternalConnect | None, str]:
    """The Java worker running Debezium's JDBC sink (the one given, or one started with the
    plugin), and which plugin it is; no worker when no version of the plugin resolves."""
    if args.connect_url:
        worker = ExternalConnect(args.connect_url)
        return worker, worker.plugin_note()
    plugin, note = sink_debezium_plugin()
    if plugin is None:
        return None, note
    return stack.enter_context(start_connect(bootstrap, "bench-jdbc-java", workdir / "connect-log",
                                             plugin_path=[plugin])), note


def sink_debezium_plugin() -> tuple[Path | None, str]:
    """Debezium's JDBC sink at the newest version Maven Central resolved (newer ones did not)."""
    try:
        return debezium_plugin(JDBC_SINK, JDBC_SINK_RESOLVES), f"io.debezium:{JDBC_SINK}:{JDBC_SINK_RESOLVES}"
    except JvmError as exc:
        return None, f"{JDBC_SINK} {JDBC_SINK_RESOLVES} did not resolve from Maven Central: {exc}"


def sink_produce(kcat: str, bootstrap: str, records: Path, partitions: int) -> None:
    create_topic(KafkaSettings(bootstrap_servers=bootstrap), TOPIC, partitions)
    command = [kcat, "-P", "-b", bootstrap, "-t", TOPIC, "-l", str(records), *producer_flags()]
    subprocess.run(command, check=True)


Side = tuple[str, Callable[[str], Usage]]  # (label, run into a table named after the round)


def sink_sides(kcat: str, bootstrap: str, target: Target, ours: Ours, csv: Path, workdir: Path, count: int) -> list[Side]:
    flags = consumer_flags()
    return [
        ("psql \\copy (the limit)", lambda r: psql_copy(target, csv, f"copy_{r}", count)),
        ("kcat -C (the reference)", lambda r: kcat_read(kcat, flags, bootstrap, TOPIC, count, workdir / "kcat.out")),
        ("ours: jdbc-sink, insert", lambda r: ours.run(f"insert-{r}", TOPIC, f"ours_insert_{r}", "insert", count)),
        ("ours: jdbc-sink, upsert", lambda r: ours.run(f"upsert-{r}", TOPIC, f"ours_upsert_{r}", "upsert", count)),
    ]


def sink_java_sides(worker: RunningConnect | ExternalConnect, target: Target, args: argparse.Namespace) -> list[Side]:
    java = Debezium(worker, target, args.partitions)
    count = args.records
    return [
        ("Debezium JDBC sink, insert", lambda r: java.run(f"dbz-insert-{r}", TOPIC, f"dbz_insert_{r}", "insert", count)),
        ("Debezium JDBC sink, upsert", lambda r: java.run(f"dbz-upsert-{r}", TOPIC, f"dbz_upsert_{r}", "upsert", count)),
    ]


def sink_rounds(sides: list[Side], rounds: int) -> list[Result]:
    """Every side once per round, the order rotated each round (no side always first or last)."""
    results = {label: Result(label) for label, _ in sides}
    for number in range(rounds):
        shift = number % len(sides)
        for label, run in sides[shift:] + sides[:shift]:
            print(f"  round {number + 1}: {label}… (load average {load_average()})", file=sys.stderr, flush=True)
            usage = run(str(number))
            results[label].seconds.append(usage.seconds)
            results[label].cpu_s.append(usage.cpu_s)
    return list(results.values())


def sink_kill(ours: Ours, args: argparse.Namespace) -> tuple[int, int]:
    print("  ours, insert: SIGKILL mid-batch, then a run to the end…", file=sys.stderr, flush=True)
    return ours.killed_then_converged(TOPIC, "ours_killed", args.records, args.kill_batch_size)


def sink_print(args: argparse.Namespace, rows: Rows, records: Path, results: list[Result], killed: tuple[int, int],
               plugin_note: str, started_load: str, jobs: dict[str, list[tuple[float, float]]]) -> None:
    record_bytes = records.stat().st_size / args.records - 1
    print(f"\nSink: {args.records:,} rows of ~{args.row_bytes} B ({record_bytes:.0f} B as JsonConverter records "
          f"with schemas) in {args.partitions} partitions; median of {args.rounds}, sides alternating; "
          f"load average at start {started_load}, at end {load_average()}")
    limit = sorted(results[0].seconds)[len(results[0].seconds) // 2]
    for result in results:
        print(summary(result, args.records, limit if result is not results[0] else None))
    for mode, runs in jobs.items():  # beside the whole command, as the source's figures
        session, job = Spread.of([s for s, _ in runs]), Spread.of([j for _, j in runs])
        print(f"  within ours ({mode}): Spark session start {session.show()}; the batch's Spark job without it "
              f"{job.show()} ({args.records / job.median:,.0f} rows/s, {limit / job.median:.2f}× the \\copy rate)")
    print(f"Debezium's JDBC sink: {plugin_note}")
    insert = next(r for r in results if r.label.startswith("ours: jdbc-sink, insert"))
    ratio = limit / sorted(insert.seconds)[len(insert.seconds) // 2]
    print(f"ours (insert) at {ratio:.2f}× the \\copy rate (goal ≥ 0.50×: {'met' if ratio >= 0.5 else 'not met'})")
    print(f"SIGKILL mid-batch (insert, batch.size={args.kill_batch_size}): killed with {killed[0]:,} rows in the "
          f"table; the next run left {killed[1]:,} rows, 0 duplicated, 0 missing")


def source_main(args: argparse.Namespace) -> int:
    kcat = kcat_binary()
    become_subreaper()
    workdir = Path(tempfile.mkdtemp(prefix="bench-jdbc-source-"))
    rows, started_load = Rows(args.records, args.row_bytes), load_average()
    try:
        with servers(args, workdir) as (bootstrap, postgres):
            target = new_target(postgres)
            table_bytes = fill_table(target, rows)
            topics = Topics(kcat, bootstrap, args.partitions, workdir)
            ours = OursSource(target, topics, workdir / "ours")
            sizes: dict[str, int] = {}
            parts: list[OursRun] = []

            def limit() -> Usage:
                return copy_to_kcat(target, topics, f"bench-copy-{RUN}-{uuid.uuid4().hex[:6]}", args.records)

            def ours_run() -> Usage:
                run = ours.run(f"source-{RUN}-{uuid.uuid4().hex[:6]}", args.records)
                sizes["ours"] = run.size
                parts.append(run)
                return run.usage

            runs = alternating(args.rounds, {"limit": limit, "ours": ours_run})
        source_print(args, runs, table_bytes, (sizes["ours"], parts), started_load)
        return 0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def source_print(args: argparse.Namespace, runs: dict[str, list[Usage]], table_bytes: int,
                 ours: tuple[int, list[OursRun]], started_load: str) -> None:
    """Printed only once every run was checked (as many records as rows, every id once)."""
    ours_bytes, parts = ours
    share = ratios(*([u.seconds for u in runs[side]] for side in ("limit", "ours")))
    print(f"\nSource: {args.records:,} rows of ~{args.row_bytes} B (table {table_bytes / 2**20:,.0f} MB) into a "
          f"topic of {args.partitions} partitions; median of {args.rounds}, sides alternating; every run's topic "
          f"checked: {args.records:,} records, every id once; load average at start {started_load}, "
          f"at end {load_average()}")
    for label, side in (("psql COPY TO STDOUT | kcat -P (the limit)", "limit"),
                        (f"ours: jdbc-source, batch.max.rows={BATCH_MAX_ROWS}", "ours")):
        spread = Spread.of([u.seconds for u in runs[side]])
        cpu = Spread.of([u.cpu_s for u in runs[side]])
        print(f"{label:<44} {spread.show()} {args.records / spread.median:>12,.0f} rows/s  CPU {cpu.median:.2f} s")
    session, jobs, tasks = (Spread.of([getattr(p, f) for p in parts]) for f in ("session_s", "job_s", "task_s"))
    limit = Spread.of([u.seconds for u in runs["limit"]]).median
    print(f"  within ours: Spark session start {session.show()}; the batches' Spark jobs without it {jobs.show()} "
          f"({args.records / jobs.median if jobs.median else 0:,.0f} rows/s, {limit / jobs.median if jobs.median else 0:.2f}× "
          f"the limit's rate), of which the tasks themselves {tasks.show()}")
    print(f"ours: {ours_bytes / args.records:.0f} B a record (JsonConverter with schemas) against the limit's "
          f"~{args.row_bytes} B lines; table {TABLE}")
    print(f"ours at {share.median:.2f}× the limit's rate ({share.low:.2f}–{share.high:.2f}; goal ≥ 0.50×: "
          f"{'met' if share.median >= 0.5 else 'not met'})")


if __name__ == "__main__":
    sys.exit(main())
