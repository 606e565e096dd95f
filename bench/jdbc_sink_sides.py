"""The sides of bench/jdbc.py's sink head-to-head, each checked before it counts: the records
(JsonConverter with schemas), the table's rows and duplicates, `psql \\copy` (the limit), `kcat -C`
(the reference), our jdbc-sink through `reconciler run --once`, Debezium's JDBC sink in the Java
Connect worker, and our jdbc-sink SIGKILLed mid-batch then run again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict

from h2h_sides import MAX_RUNS, TIMED, job_times, wait_for  # bench/h2h_sides.py
from measure import JvmMeter, Usage, run_measured  # bench/measure.py

from reconciler.devtools.connect import RunningConnect, rest_call
from reconciler.devtools.postgres import RunningPostgres, bin_dir

JSON = "org.apache.kafka.connect.json.JsonConverter"
RUN = uuid.uuid4().hex[:8]  # in every topic, group and connector name: a shared broker or worker is reused
DEBEZIUM_SINK = "io.debezium.connector.jdbc.JdbcSinkConnector"
SCHEMA = {"type": "struct", "name": "bench.row", "optional": False, "fields": [
    {"field": "id", "type": "int64", "optional": False}, {"field": "customer", "type": "string", "optional": True},
    {"field": "quantity", "type": "int32", "optional": True}, {"field": "pad", "type": "string", "optional": True}]}
COLUMNS = "id BIGINT NOT NULL, customer TEXT, quantity INT, pad TEXT"


@dataclass(frozen=True)
class Rows:
    """N rows of about `row_bytes` (id, customer, quantity, pad), as records and as CSV."""

    count: int
    row_bytes: int

    def row(self, i: int) -> tuple[int, str, int, str]:
        customer = f"customer {i % 10_000:05d}"
        pad = "x" * max(0, self.row_bytes - 8 - 4 - len(customer))
        return i, customer, i % 100, pad

    def write(self, records: Path, csv: Path) -> None:
        schema = json.dumps(SCHEMA, separators=(",", ":"))
        with records.open("w") as out, csv.open("w") as table:
            for i in range(self.count):
                id_, customer, quantity, pad = self.row(i)
                payload = json.dumps({"id": id_, "customer": customer, "quantity": quantity, "pad": pad},
                                     separators=(",", ":"))
                out.write(f'{{"schema":{schema},"payload":{payload}}}\n')
                table.write(f"{id_},{customer},{quantity},{pad}\n")


@dataclass
class Result:
    label: str
    seconds: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ExternalPostgres:
    """A server already running, given as a superuser's `postgresql://` URL (the tests' session
    server): what the sides use of a `RunningPostgres`; psql from the same binaries."""

    host: str
    port: int
    user: str
    password: str
    bindir: Path

    @classmethod
    def of(cls, url: str) -> ExternalPostgres:
        parts = conninfo_to_dict(url)
        return cls(str(parts.get("host", "127.0.0.1")), int(str(parts.get("port", 5432))), str(parts.get("user", "")),
                   str(parts.get("password", "")), bin_dir())

    def dsn_for(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        with psycopg.connect(self.dsn_for("postgres"), autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.dsn_for(name)


@dataclass
class Target:
    """The benchmark's database: a fresh table per run, its rows checked."""

    postgres: RunningPostgres | ExternalPostgres
    database: str

    @property
    def dsn(self) -> str:
        return self.postgres.dsn_for(self.database)

    def create(self, table: str, keyed: bool) -> None:
        columns = COLUMNS + (", PRIMARY KEY (id)" if keyed else "")
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE TABLE {} (" + columns + ")").format(sql.Identifier(table)))

    def counts(self, table: str) -> tuple[int, int]:
        """(rows, distinct ids) of `table`."""
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            found = connection.execute(sql.SQL("SELECT count(*), count(DISTINCT id) FROM {}").format(
                sql.Identifier(table))).fetchone()
        assert found is not None
        return int(found[0]), int(found[1])

    def rows(self, table: str) -> int:
        with psycopg.connect(self.dsn, autocommit=True) as connection:
            found = connection.execute(sql.SQL("SELECT count(*) FROM {}").format(sql.Identifier(table))).fetchone()
        return int(found[0]) if found else 0

    def check(self, table: str, expected: int, side: str) -> None:
        """Every row exactly once, or SystemExit saying what is off: no figure of a wrong run."""
        rows, distinct = self.counts(table)
        if rows != expected or distinct != expected:
            raise SystemExit(f"{side}: {rows:,} rows, {distinct:,} distinct ids in {table}, expected {expected:,} "
                             f"({rows - distinct:,} duplicated)")


def psql_copy(target: Target, csv: Path, table: str, count: int) -> Usage:
    """`psql -c "\\copy … FROM file"`: the client reads the file and streams it, one COPY."""
    target.create(table, keyed=False)
    command = [str(target.postgres.bindir / "psql"), target.dsn, "-v", "ON_ERROR_STOP=1", "-c", f"\\copy \"{table}\" FROM '{csv}' WITH (FORMAT csv)"]
    code, usage = run_measured(command)
    if code != 0:
        raise SystemExit(f"psql \\copy exited with {code}")
    target.check(table, count, "psql \\copy")
    return usage


def kcat_read(kcat: str, flags: list[str], bootstrap: str, topic: str, count: int, out: Path) -> Usage:
    """`kcat -C -e`: every record read to the end and written to `out` (its lines counted)."""
    command = [kcat, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n", *flags]
    with out.open("wb") as sink:
        code, usage = run_measured(command, stdout=sink)
    if code != 0:
        raise SystemExit(f"kcat -C exited with {code}")
    with out.open("rb") as read:
        lines = sum(block.count(b"\n") for block in iter(lambda: read.read(1 << 20), b""))
    out.unlink()
    if lines != count:
        raise SystemExit(f"kcat -C read {lines:,} records, expected {count:,}")
    return usage


MANIFEST = {"apiVersion": "reconciler.io/v1", "kind": "Connector"}


@dataclass
class Ours:
    """jdbc-sink through `reconciler run --once` (bench/reconciler_timed.py), a group per run.
    `jobs`: per mode, each run's (Spark session start, the batch's Spark job without it), read
    from the runtime's debug log (`h2h_sides.job_times`)."""

    bootstrap: str
    target: Target
    workdir: Path
    partitions: int
    jobs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)

    def manifest(self, name: str, topic: str, table: str, mode: str, batch_size: int = 3000) -> Path:
        config = {"topics": topic, "table.name.format": table, "connection.url": self.target.postgres.jdbc_url(
            self.target.database), "connection.user": self.target.postgres.user,
            "connection.password": self.target.postgres.password, "value.converter": JSON,
            "insert.mode": mode, "batch.size": str(batch_size)}
        if mode == "upsert":
            config |= {"pk.mode": "record_value", "pk.fields": "id"}
        path = self.workdir / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**MANIFEST, "metadata": {"name": name}, "spec": {
            "class": "jdbc-sink", "tasksMax": self.partitions, "config": config}}))
        return path

    def command(self, path: Path, name: str) -> list[str]:
        return [sys.executable, str(TIMED), "run", str(path), "--once", "--bootstrap-servers", self.bootstrap,
                "--group-id", f"bench-jdbc-{RUN}-{name}"]

    def run(self, name: str, topic: str, table: str, mode: str, count: int) -> Usage:
        self.target.create(table, keyed=mode == "upsert")
        path = self.manifest(name, topic, table, mode)
        total, session_s, job_s = Usage(), 0.0, 0.0
        for attempt in range(1, MAX_RUNS + 1):
            log = self.workdir / f"{name}-{attempt}.out"
            with log.open("wb") as out:
                code, usage = run_measured(self.command(path, name), stdout=out, stderr=subprocess.STDOUT)
            total = Usage(total.seconds + usage.seconds, total.cpu_s + usage.cpu_s, max(total.peak_rss, usage.peak_rss))
            if code != 0 or b"FAILED" in log.read_bytes():
                raise SystemExit(f"ours ({mode}): exit {code}:\n{log.read_text()[-3000:]}")
            session, job = job_times(log.read_text())
            if job is None:
                raise SystemExit(f"ours ({mode}): no job line in {log} (h2h_sides._JOB no longer matches the runtime's?)")
            session_s, job_s = session_s + session, job_s + job
            if self.target.rows(table) >= count:
                break
        self.target.check(table, count, f"ours ({mode})")
        self.jobs.setdefault(mode, []).append((session_s, job_s))
        return total

    def killed_then_converged(self, topic: str, table: str, count: int, batch_size: int) -> tuple[int, int]:
        """SIGKILL mid-batch (once the table holds a third of the rows), then a run to the end:
        (rows at the kill, rows after the second run), duplicates checked."""
        name = "killed-insert"
        self.target.create(table, keyed=False)
        path = self.manifest(name, topic, table, "insert", batch_size)
        process = subprocess.Popen(self.command(path, name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        at_kill = self._kill_when(process, table, max(1, count // 3))
        code, _ = run_measured(self.command(path, name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if code != 0:
            raise SystemExit(f"ours (insert), the run after the SIGKILL: exit {code}")
        self.target.check(table, count, "ours (insert) after a SIGKILL mid-batch")
        return at_kill, count

    def _kill_when(self, process: subprocess.Popen[bytes], table: str, rows: int) -> int:
        while process.poll() is None:
            found = self.target.rows(table) if _exists(self.target, table) else 0
            if found >= rows:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                return found
            time.sleep(0.01)
        raise SystemExit(f"ours (insert): the run to be killed ended (exit {process.returncode}) before "
                         f"{table} held {rows:,} rows; use more records or a smaller --kill-batch-size")


def _exists(target: Target, table: str) -> bool:
    with psycopg.connect(target.dsn, autocommit=True) as connection:
        return connection.execute("SELECT to_regclass(%s) IS NOT NULL", [f'"{table}"']).fetchone() == (True,)


@dataclass(frozen=True)
class ExternalConnect:
    """A Java worker already running, by its REST URL (the tests' session worker)."""

    url: str

    def rest(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """One REST call: (status code, parsed JSON body or None), as `RunningConnect.rest`."""
        return rest_call(self.url, method, path, body)

    @property
    def pid(self) -> int:
        """The worker's process (its CPU is measured): the one listening on the URL's port."""
        port = urllib.parse.urlsplit(self.url).port
        found = [c.pid for c in psutil.net_connections("tcp") if c.laddr and c.laddr.port == port
                 and c.status == psutil.CONN_LISTEN and c.pid]
        if not found:
            raise SystemExit(f"no process listens on {self.url} (--connect-url)")
        return int(found[0])

    def plugin_note(self) -> str:
        """Which Debezium JDBC sink the worker has; SystemExit when it has none."""
        status, plugins = self.rest("GET", "/connector-plugins")
        found = [p for p in plugins or [] if isinstance(p, dict) and p.get("class") == DEBEZIUM_SINK] \
            if status == 200 and isinstance(plugins, list) else []
        if not found:
            raise SystemExit(f"the worker at {self.url} has no {DEBEZIUM_SINK} plugin (--connect-url)")
        return f"io.debezium:debezium-connector-jdbc:{found[0].get('version')}"


@dataclass
class Debezium:
    """Debezium's JDBC sink (`io.debezium:debezium-connector-jdbc`) in the Java worker, created
    through its REST API; timed from the request to the last row in the table."""

    worker: RunningConnect | ExternalConnect
    target: Target
    partitions: int

    def run(self, name: str, topic: str, table: str, mode: str, count: int) -> Usage:
        self.target.create(table, keyed=mode == "upsert")
        name = f"{name}-{RUN}"  # a shared worker keeps the consumer groups of earlier runs
        config = {"connector.class": DEBEZIUM_SINK, "tasks.max": str(self.partitions), "topics": topic,
                  "connection.url": self.target.postgres.jdbc_url(self.target.database),
                  "connection.username": self.target.postgres.user,
                  "connection.password": self.target.postgres.password, "insert.mode": mode,
                  "primary.key.mode": "record_value" if mode == "upsert" else "none", "primary.key.fields": "id",
                  "schema.evolution": "none", "collection.name.format": table, "value.converter": JSON,
                  "key.converter": "org.apache.kafka.connect.storage.StringConverter"}
        if mode != "upsert":
            del config["primary.key.fields"]
        usage = Usage()
        with JvmMeter(self.worker.pid).phase(usage):
            started = time.perf_counter()
            status, body = self.worker.rest("POST", "/connectors", {"name": name, "config": config})
            if status != 201:
                raise SystemExit(f"creating {name} failed: {status} {body}")
            _, done = wait_for(lambda: self.target.rows(table), count, f"Debezium JDBC sink ({mode})",
                               lambda: str(self.worker.rest("GET", f"/connectors/{name}/status")))
            usage.seconds = done - started
        self.worker.rest("DELETE", f"/connectors/{name}")
        self.target.check(table, count, f"Debezium JDBC sink ({mode})")
        return usage


def summary(result: Result, count: int, limit: float | None) -> str:
    """One line: the median's rate, its share of the limit's, the spread, the median CPU."""
    ordered = sorted(result.seconds)
    median = ordered[len(ordered) // 2]
    cpu = sorted(result.cpu_s)[len(ordered) // 2]
    share = f"{limit / median:5.2f}×" if limit else "     "
    spread = f"{ordered[0]:.2f}–{ordered[-1]:.2f} s" if len(ordered) > 1 else "one run"
    return (f"{result.label:<38} {median:8.2f} s {count / median:>12,.0f} rows/s {share} of \\copy  "
            f"spread {spread:<16} CPU {cpu:7.2f} s")
