"""The sides of bench/jdbc.py's source head-to-head, each checked before it counts: the table,
`psql -c "COPY … TO STDOUT" | kcat -P` (the limit: the server's own text rows piped into a
producer), and our jdbc-source through `reconciler run --once`. A side's topic is read back with
`kcat -C` (read_committed) after its run: as many records as rows, every id once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql

from h2h_sides import MAX_RUNS, TIMED, job_times  # bench/h2h_sides.py
from jdbc_sink_sides import JSON, MANIFEST, Rows, Target  # bench/jdbc_sink_sides.py
from kcat import producer_flags  # bench/kcat.py
from measure import RunFailed, Usage, require, run_measured  # bench/measure.py

from reconciler.kafka.io.admin import create_topic
from reconciler.kafka.settings import KafkaSettings

TABLE = "bench_source_rows"
_MOVED = re.compile(r"(\d+) record\(s\) moved")
# The tasks' own seconds in the runtime's job line (`source NAME: job of 2 task(s) 1.234s (tasks
# 0.987, 0.876 s)`): their polls, produce and commit, without Spark's job around them.
_TASKS = re.compile(
    r"^DEBUG reconciler\.runtime\.source\.job: source \S+: job of \d+ task\(s\) [\d.]+s \(tasks ([\d., ]*) s\)",
    re.MULTILINE,
)
_PAYLOAD_ID = re.compile(rb'"payload":\{"id":(\d+),')
# Confluent's default is 100 rows per poll; a user moving a big table raises it (each poll is a
# few round trips to the server).
BATCH_MAX_ROWS = 10_000


def fill_table(target: Target, rows: Rows) -> int:
    """The table `Rows` describes (its rows made by the server), and its size in bytes on disk."""
    _, customer, _, pad = rows.row(0)
    with psycopg.connect(target.dsn, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE TABLE {} (id BIGINT PRIMARY KEY, customer TEXT, quantity INT, pad TEXT)")
                           .format(sql.Identifier(TABLE)))
        connection.execute(
            sql.SQL("INSERT INTO {} SELECT i, 'customer ' || lpad((i %% 10000)::text, 5, '0'), i %% 100, "
                    "repeat('x', %s) FROM generate_series(0, %s - 1) AS i").format(sql.Identifier(TABLE)),
            [len(pad), rows.count])
        connection.execute(sql.SQL("VACUUM ANALYZE {}").format(sql.Identifier(TABLE)))
        found = connection.execute(sql.SQL("SELECT count(*), pg_table_size({}) FROM {}").format(
            sql.Literal(TABLE), sql.Identifier(TABLE))).fetchone()
    assert found is not None
    require(found[0] == rows.count, f"the table holds {found[0]:,} rows, expected {rows.count:,}")
    return int(found[1])


@dataclass
class Topics:
    """A fresh topic per run, read back with kcat to check it."""

    kcat: str
    bootstrap: str
    partitions: int
    workdir: Path

    def create(self, topic: str) -> None:
        create_topic(KafkaSettings(bootstrap_servers=self.bootstrap), topic, self.partitions)

    def check(self, topic: str, count: int, side: str, ids: re.Pattern[bytes] | None) -> int:
        """Every row once in `topic` (ids by `ids` in each value, or its first tab-separated
        field); returns the topic's bytes. RunFailed says what is off."""
        out = self.workdir / f"{topic}.out"
        command = [self.kcat, "-C", "-b", self.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                   "-X", "isolation.level=read_committed", "-f", "%s\n"]
        with out.open("wb") as sink:
            code = subprocess.run(command, stdout=sink, check=False).returncode
        require(code == 0, f"{side}: kcat -C of {topic} exited with {code}")
        data = out.read_bytes()
        out.unlink()
        lines = data.splitlines()
        found = [m.group(1) for m in map(ids.search, lines) if m] if ids else [line.split(b"\t", 1)[0] for line in lines]
        require(len(lines) == count, f"{side}: {len(lines):,} records in {topic}, expected {count:,}")
        require(len(found) == count and len(set(found)) == count,
                f"{side}: {len(set(found)):,} distinct ids among {len(lines):,} records of {topic}, expected {count:,}")
        return len(data) - len(lines)


def copy_to_kcat(target: Target, topics: Topics, topic: str, count: int) -> Usage:
    """`psql -c "COPY (SELECT …) TO STDOUT" | kcat -P`: the server's text rows, a record a line."""
    topics.create(topic)
    psql = [str(target.postgres.bindir / "psql"), target.dsn, "-v", "ON_ERROR_STOP=1", "-c",
            f'COPY (SELECT * FROM "{TABLE}" ORDER BY id) TO STDOUT']
    kcat = [topics.kcat, "-P", "-b", topics.bootstrap, "-t", topic, *producer_flags()]
    pipeline = f"set -o pipefail; {shlex.join(psql)} | {shlex.join(kcat)}"
    code, usage = run_measured(["bash", "-c", pipeline])
    require(code == 0, f"psql COPY | kcat -P exited with {code}")
    topics.check(topic, count, "psql COPY | kcat -P", None)
    return usage


@dataclass(frozen=True)
class OursRun:
    usage: Usage  # the whole commands
    size: int  # the topic's bytes
    session_s: float  # Spark session starts
    job_s: float  # the batches' Spark jobs, less the session start they overlap (h2h_sides.job_times)
    task_s: float  # the tasks' own time within the jobs (polls, produce, commit)


@dataclass
class OursSource:
    """jdbc-source through `reconciler run --once` (bench/reconciler_timed.py), a group per run:
    runs again (at most MAX_RUNS) until the batches moved every row, timed together."""

    target: Target
    topics: Topics
    workdir: Path
    batch_max_rows: int = BATCH_MAX_ROWS

    def manifest(self, name: str, prefix: str) -> Path:
        postgres = self.target.postgres
        config = {"connection.url": postgres.jdbc_url(self.target.database), "connection.user": postgres.user,
                  "connection.password": postgres.password, "table.whitelist": TABLE, "mode": "incrementing",
                  "incrementing.column.name": "id", "topic.prefix": prefix, "value.converter": JSON,
                  "batch.max.rows": str(self.batch_max_rows)}
        path = self.workdir / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**MANIFEST, "metadata": {"name": name},
                                    "spec": {"class": "jdbc-source", "tasksMax": 1, "config": config}}))
        return path

    def run(self, name: str, count: int) -> OursRun:
        """Moving the table into a fresh topic; the times within the usage from the runtime's log."""
        prefix = f"bench-{name}-"
        self.topics.create(prefix + TABLE)
        command = [sys.executable, str(TIMED), "run", str(self.manifest(name, prefix)), "--once",
                   "--bootstrap-servers", self.topics.bootstrap, "--group-id", f"bench-jdbc-{name}"]
        total, moved, session_s, job_s, task_s = Usage(), 0, 0.0, 0.0, 0.0
        for attempt in range(1, MAX_RUNS + 1):
            log = self.workdir / f"{name}-{attempt}.out"
            with log.open("wb") as out:
                code, usage = run_measured(command, stdout=out, stderr=subprocess.STDOUT)
            total = Usage(total.seconds + usage.seconds, total.cpu_s + usage.cpu_s, max(total.peak_rss, usage.peak_rss))
            text = log.read_bytes().decode(errors="replace")
            if code != 0 or "FAILED" in text:
                raise RunFailed(f"ours (jdbc-source): exit {code}:\n{text[-3000:]}")
            moved += sum(int(m) for m in _MOVED.findall(text))
            # The runtime starts its Spark session inside its first job: that part is the session's.
            session, jobs = job_times(text)
            require(jobs is not None, f"ours (jdbc-source): run {attempt}: no batch job time in its debug log "
                    "(h2h_sides._JOB no longer matches the runtime's line?)")
            session_s, job_s = session_s + session, job_s + (jobs or 0.0)
            task_lines = _TASKS.findall(text)
            require(bool(task_lines), f"ours (jdbc-source): run {attempt}: no tasks' time in its debug log "
                    "(_TASKS no longer matches the runtime's job line?)")
            task_s += sum(float(t) for tasks in task_lines for t in tasks.split(",") if t.strip())
            print(f"    run {attempt}: {moved:,} of {count:,} rows moved, {usage.seconds:.1f} s", file=sys.stderr,
                  flush=True)
            if "BENCH_JDBC_LOGS" in os.environ:
                sys.stderr.write(text)
            if moved >= count:
                break
        size = self.topics.check(prefix + TABLE, count, "ours (jdbc-source)", _PAYLOAD_ID)
        return OursRun(total, size, session_s, job_s, task_s)
