"""One `jdbc-source` task in this process, without Spark: how long its polls take, phase by phase.

    .venv/bin/python bench/jdbc_source_task.py [--records 200000] [--rounds 3] [--profile]
        [--postgres postgresql://…] [--bootstrap-servers host:port]

The table is bench/jdbc.py source's (id, customer, quantity, pad; ~100 B rows). Each round
builds a fresh task (`mode=incrementing` on `id`, `batch.max.rows=10000`, JsonConverter with
schemas) and polls it until the table is read, the offsets of a poll feeding the next; with
`--bootstrap-servers`, through the runtime's own partition function (`source_partition`, what a
Spark partition runs: polls, produce, the offsets, one Kafka transaction, waiting until it is
readable), on a fresh group and topic per round. Prints each round's wall and CPU seconds (this process), and with `--profile`
cProfile's top functions of the last round. Starts its own PostgreSQL unless `--postgres`.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from jdbc_sink_sides import ExternalPostgres, Rows, Target  # bench/
from jdbc_source_sides import BATCH_MAX_ROWS, TABLE, fill_table  # bench/
from measure import load_average  # bench/measure.py

from reconciler.connectors.api import PartitionKey, SourceOffset
from reconciler.connectors.jdbc.source_task import JdbcSourceTask
from reconciler.devtools.postgres import RunningPostgres, start_postgres
from reconciler.kafka.io.admin import create_topic
from reconciler.kafka.settings import KafkaSettings, Topics
from reconciler.runtime.source.committed import CommittedOffsets
from reconciler.runtime.source.task import SourceTaskWork, source_partition


@contextmanager
def database(url: str | None, workdir: Path) -> Iterator[RunningPostgres | ExternalPostgres]:
    if url:
        yield ExternalPostgres.of(url)
        return
    server = start_postgres(workdir)
    try:
        yield server
    finally:
        server.stop()


def task_config(target: Target) -> dict[str, str]:
    postgres = target.postgres
    return {"connection.url": postgres.jdbc_url(target.database), "connection.user": postgres.user,
            "connection.password": postgres.password, "mode": "incrementing", "incrementing.column.name": "id",
            "topic.prefix": "bench-", "batch.max.rows": str(BATCH_MAX_ROWS), "tables": f'"public"."{TABLE}"',
            "tables.fetched": "true", "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": "true"}


def one_round(config: dict[str, str], count: int, bootstrap: str | None, name: str) -> tuple[float, float, int]:
    """(wall s, CPU s, bytes) of reading the whole table: with a broker, the runtime's own
    partition function (`source_partition`: polls, produce, offsets, one transaction); without,
    the task's polls alone, offsets fed from one to the next as the runtime does."""
    wall, cpu = time.perf_counter(), time.process_time()
    if bootstrap:
        settings = KafkaSettings(bootstrap_servers=bootstrap, group_id=name, topics=Topics.for_group(name))
        create_topic(settings, f"bench-{TABLE}", 1)
        create_topic(settings, settings.topics.offsets, 1, {"cleanup.policy": "compact"})
        work = SourceTaskWork(settings=settings, connector=name, connector_class="jdbc-source", task_id=0,
                              task_config=config, committed=CommittedOffsets({}, {}))
        result = source_partition(work)
        if result.error:
            sys.exit(result.error)
        records, size = result.records, result.bytes
    else:
        task = JdbcSourceTask(config)
        position: dict[PartitionKey, SourceOffset] = {}
        records = size = 0
        while records < count:
            batch = task.poll_batch(position, 1_000_000 - records)
            if not len(batch):
                break
            records += len(batch)
            size += sum(map(len, filter(None, batch.values)))
            position.update(batch.offsets)
        task.stop()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if records != count:
        sys.exit(f"read {records:,} rows of {count:,}")
    return wall, cpu, size


def profiled(run: Callable[[], tuple[float, float, int]]) -> str:
    profile = cProfile.Profile()
    profile.runcall(run)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(25)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--row-bytes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile one more round and print its top")
    parser.add_argument("--postgres", help="a running server's URL (superuser); default: start one")
    parser.add_argument("--bootstrap-servers", help="produce each poll's records to this broker too")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-jdbc-task-") as tmp, database(args.postgres, Path(tmp)) as server:
        target = Target(server, f"bench_task_{int(time.time())}")
        server.create_database(target.database)
        table_bytes = fill_table(target, Rows(args.records, args.row_bytes))
        config = task_config(target)
        run = f"bench-jdbc-task-{uuid.uuid4().hex[:6]}"
        print(f"{args.records:,} rows, table {table_bytes / 2**20:.1f} MiB, load average {load_average()}")
        for index in range(args.rounds):
            wall, cpu, size = one_round(config, args.records, args.bootstrap_servers, f"{run}-{index}")
            print(f"round {index + 1}: {wall:.2f} s, {cpu:.2f} CPU s, {args.records / wall:,.0f} rows/s, "
                  f"{size / args.records:.0f} B/record")
        if args.profile:
            print(profiled(lambda: one_round(config, args.records, args.bootstrap_servers, f"{run}-profiled")))
        print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
