"""The sides of bench/lakehouse.py, each checked before it counts: the records (JsonConverter with
schemas), the tables read back by their own readers (pyiceberg, delta-rs, pyarrow), Apache
Iceberg's sink in the Java Connect worker, and our sinks through `reconciler run --once`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from h2h_sides import MAX_RUNS, STALL_S, TIMED  # bench/h2h_sides.py
from jdbc_sink_sides import SCHEMA, Rows  # bench/jdbc_sink_sides.py
from measure import FAILED, JvmMeter, RunFailed, Usage, require, run_measured  # bench/measure.py

from reconciler.connectors.delta.config import DeltaSinkSettings, storage_options
from reconciler.connectors.iceberg.catalog import close_catalog, open_catalog
from reconciler.connectors.storage import open_store
from reconciler.devtools.connect import rest_call
from reconciler.devtools.connect_plugins import ICEBERG_SINK_CLASS

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
NAMESPACE = "bench"
POLL_S = 0.25  # a table read back this often while Java's sink runs (each read loads the table)
# Apache Iceberg's CoordinatorThread logs this when its commit was interrupted (seen in each stall).
COORDINATOR_DIED = "Coordinator error during process, exiting thread"
LOST_STALL_S = 45.0  # no progress this long after that: the attempt is lost (commit timeout 30 s)
JAVA_ATTEMPTS = 2  # Java's sink can lose a partition's commit in its tasks' first rebalance; see JavaIceberg


def write_records(path: Path, rows: Rows) -> None:
    """N JsonConverter records with their schema (as Connect writes them), one a line for kcat -P."""
    schema = json.dumps(SCHEMA, separators=(",", ":"))
    with path.open("w") as out:
        for i in range(rows.count):
            id_, customer, quantity, pad = rows.row(i)
            payload = json.dumps({"id": id_, "customer": customer, "quantity": quantity, "pad": pad},
                                 separators=(",", ":"))
            out.write(f'{{"schema":{schema},"payload":{payload}}}\n')


@dataclass
class Result:
    """One side's run: what it used, and what its table holds (checked before any figure)."""

    label: str
    usage: Usage
    rows: int
    distinct: int
    notes: list[str] = field(default_factory=list)
    iceberg: IcebergTarget | None = None  # where an Iceberg side's rows are, to compare the two tables


def id_counts(ids: pa.ChunkedArray | pa.Array) -> tuple[int, int]:
    """(rows, distinct ids)."""
    return len(ids), len(pc.unique(ids))


# --- the tables, read back by their own readers ---------------------------------------------


@dataclass(frozen=True)
class IcebergTarget:
    """A table of the bench's SQL catalog, read back by pyiceberg."""

    catalog: dict[str, str]  # Java's iceberg.catalog.* keys, prefix removed
    table: str

    def total(self) -> int:
        """The current snapshot's `total-records` (0 while there is none): cheap, for polling."""
        catalog = open_catalog("iceberg", self.catalog)
        try:
            if not catalog.table_exists(self.table):
                return 0
            snapshot = catalog.load_table(self.table).current_snapshot()
            return int(snapshot.summary.get("total-records", "0")) if snapshot and snapshot.summary else 0
        finally:
            close_catalog(catalog)

    def ids(self) -> pa.ChunkedArray:
        catalog = open_catalog("iceberg", self.catalog)
        try:
            if not catalog.table_exists(self.table):
                return pa.chunked_array([], pa.int64())
            return catalog.load_table(self.table).scan(selected_fields=("id",)).to_arrow().column("id")
        finally:
            close_catalog(catalog)


@dataclass(frozen=True)
class DeltaTarget:
    """A Delta table (local or S3), read back by delta-rs."""

    config: dict[str, str]  # delta-sink's keys: delta.table.uri, s3.*

    def ids(self) -> pa.ChunkedArray:
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        settings = DeltaSinkSettings.parse(self.config)
        try:
            table = DeltaTable(settings.uri, storage_options=storage_options(settings))
        except TableNotFoundError:
            return pa.chunked_array([], pa.int64())
        return table.to_pyarrow_table(columns=["id"]).column("id")


@dataclass(frozen=True)
class ParquetTarget:
    """A parquet-sink dataset (local or S3), its files read by pyarrow (hidden and `_superseded/`
    files are not part of it, as for every reader)."""

    config: dict[str, str]  # parquet-sink's keys: path, s3.*

    def ids(self) -> pa.ChunkedArray:
        store = open_store(self.config["path"], self.config)
        chunks = []
        for rel in sorted(store.walk()):
            if rel.endswith(".parquet") and not any(part[0] in "._" for part in rel.split("/")):
                with store.open_input(rel) as handle:
                    chunks.append(pq.read_table(handle, columns=["id"]).column("id").combine_chunks())
        return pa.chunked_array(chunks, pa.int64())


Target = IcebergTarget | DeltaTarget | ParquetTarget


# --- the sides ------------------------------------------------------------------------------


@dataclass
class Ours:
    """One of our sinks through `reconciler run --once` (bench/reconciler_timed.py), a Connect
    group of its own per run; run again (at most MAX_RUNS) while the table lacks rows."""

    bootstrap: str
    workdir: Path
    partitions: int

    def run(self, label: str, name: str, connector: str, config: dict[str, str], target: Target,
            count: int) -> Result:
        path = self.workdir / f"{name}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name},
                                    "spec": {"class": connector, "tasksMax": self.partitions, "config": config}}))
        command = [sys.executable, str(TIMED), "run", str(path), "--once", "--bootstrap-servers", self.bootstrap,
                   "--group-id", f"bench-lake-{name}"]
        total, runs = Usage(), 0
        for runs in range(1, MAX_RUNS + 1):
            log = self.workdir / f"{name}-{runs}.out"
            with log.open("wb") as out:
                code, usage = run_measured(command, stdout=out, stderr=subprocess.STDOUT)
            total = Usage(total.seconds + usage.seconds, total.cpu_s + usage.cpu_s, max(total.peak_rss, usage.peak_rss))
            require(code == 0 and b"FAILED" not in log.read_bytes(),
                    f"{label}: `reconciler run --once` exited {code}:\n{log.read_text()[-3000:]}")
            rows, distinct = id_counts(target.ids())
            if rows >= count:
                break
        notes = [f"{runs} runs of `reconciler run --once`"] if runs > 1 else []
        return Result(label, total, rows, distinct, notes,
                      iceberg=target if isinstance(target, IcebergTarget) else None)


class Worker(Protocol):
    """A Java Connect worker with Apache Iceberg's sink on its plugin.path (`RunningConnect`)."""

    @property
    def pid(self) -> int: ...

    def rest(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]: ...

    def log_errors(self) -> list[str]: ...


@dataclass(frozen=True)
class ExistingWorker:
    """A worker the bench did not start (`--connect-url`, `--connect-pid`, `--connect-log`)."""

    url: str
    pid: int
    log_path: Path | None

    def rest(self, method: str, path: str, body: Any = None, timeout_s: float = 30.0) -> tuple[int, Any]:
        return rest_call(self.url, method, path, body, timeout_s)

    def log_errors(self) -> list[str]:
        try:
            text = self.log_path.read_text(errors="replace") if self.log_path else ""
        except OSError:
            return []
        return [line for line in text.splitlines() if "] ERROR " in line]


class Stalled(RunFailed):
    """A side whose table stopped growing short of its rows."""


@dataclass
class JavaIceberg:
    """Apache Iceberg's sink in the Java worker, created through its REST API; timed from the
    request to the commit that makes every row visible in the table (read back by pyiceberg).

    Its two tasks join their consumer group one after the other, and the rebalance between can
    lose one partition's files for good: the new coordinator reads the control topic from its
    end, past the worker's DataWritten whose offsets the worker has already committed (seen in
    CI: stuck at 1,000 of 2,000 rows, both tasks RUNNING; apache/iceberg#17637, #17925). A
    restart cannot bring them back, so a stalled attempt is deleted and the side runs once more
    into a table of its own, and the report says so. Its figure is the attempt that finished.
    Seen again in a fresh-clone CI run (03:39): task 1 took both partitions and led, task 0 joined
    4 s later, the rebalance stopped the coordinator inside `commitToTable` ("Coordinator error
    during process, exiting thread"), and the table never grew past that. After that line a
    stall is declared at LOST_STALL_S rather than STALL_S."""

    worker: Worker
    partitions: int
    control_topic: str
    commit_interval_ms: int

    def run(self, label: str, name: str, topic: str, catalog: dict[str, str], target: IcebergTarget,
            count: int) -> Result:
        prepare_java_catalog(catalog)
        stalls: list[str] = []
        for attempt in range(1, JAVA_ATTEMPTS + 1):
            suffix = "" if attempt == 1 else f"_{attempt}"
            try:
                result = self.attempt(label, f"{name}{suffix}", topic, catalog,
                                      replace(target, table=target.table + suffix), count)
            except Stalled as stall:
                self.delete(f"{name}{suffix}")
                if attempt == JAVA_ATTEMPTS:
                    raise
                stalls.append(str(stall.code).removeprefix(FAILED))
                continue
            result.notes[:0] = [f"attempt {attempt}; attempt {n} stalled: {why}" for n, why in enumerate(stalls, 1)]
            return result
        raise AssertionError("unreachable: the last attempt returns or raises")

    def attempt(self, label: str, name: str, topic: str, catalog: dict[str, str], target: IcebergTarget,
                count: int) -> Result:
        config = {"connector.class": ICEBERG_SINK_CLASS, "tasks.max": str(self.partitions), "topics": topic,
                  "iceberg.tables": target.table, "iceberg.tables.auto-create-enabled": "true",
                  **{f"iceberg.catalog.{key}": value for key, value in catalog.items()},
                  "iceberg.control.topic": self.control_topic,
                  "iceberg.control.commit.interval-ms": str(self.commit_interval_ms),
                  "key.converter": STRING, "value.converter": JSON, "value.converter.schemas.enable": "true"}
        usage, errors_before = Usage(), len(self.worker.log_errors())
        with JvmMeter(self.worker.pid).phase(usage):
            started = time.perf_counter()
            status, body = self.worker.rest("POST", "/connectors", {"name": name, "config": config})
            require(status == 201, f"{label}: creating {name} failed: {status} {body}")
            poll(target.total, count, label, lambda: str(self.worker.rest("GET", f"/connectors/{name}/status")),
                 stall_s=lambda: LOST_STALL_S if self.coordinator_died(errors_before) else STALL_S)
            usage.seconds = time.perf_counter() - started
        running = len(self.worker.log_errors())
        self.delete(name)
        rows, distinct = id_counts(target.ids())
        notes = [f"commit interval {self.commit_interval_ms} ms"]
        errors = self.worker.log_errors()
        if errors[errors_before:running]:  # its coordinator interrupted at its deletion is not the run's
            notes.append(f"the worker logged {running - errors_before} ERROR line(s) while it ran, the first: "
                         f"{errors[errors_before][:300]}")
        if errors[running:]:
            notes.append(f"{len(errors) - running} ERROR line(s) as it was deleted: {errors[running][:200]}")
        return Result(label, usage, rows, distinct, notes, iceberg=target)

    def coordinator_died(self, errors_before: int) -> bool:
        """Whether a coordinator of this attempt exited on an error (stopped mid-commit by the
        rebalance): the DataWritten it was gathering are then lost unless a later commit shows
        otherwise, which LOST_STALL_S (past the 30 s commit timeout) leaves time for."""
        return any(COORDINATOR_DIED in line for line in self.worker.log_errors()[errors_before:])

    def delete(self, name: str) -> None:
        self.worker.rest("DELETE", f"/connectors/{name}")
        poll(lambda: int(self.worker.rest("GET", f"/connectors/{name}")[0] == 404), 1, f"deleting {name}", str)


def prepare_java_catalog(catalog: dict[str, str]) -> None:
    """The SQLite catalog with its tables and Java's V1 column before Java's tasks open it. Each
    task's `JdbcCatalog.initialize` adds `iceberg_type` (`jdbc.schema-version=V1`) when it finds
    the column missing, and two tasks doing so at once on a fresh file fail one of them for good
    ("duplicate column name: iceberg_type", seen here: the task killed, its partition never
    committed). pyiceberg makes the tables; the ALTER is Java's own `V1_UPDATE_CATALOG_SQL`."""
    uri = catalog.get("uri", "")
    if not uri.startswith("jdbc:sqlite:"):
        return
    close_catalog(open_catalog("iceberg", catalog))
    with sqlite3.connect(uri.removeprefix("jdbc:sqlite:")) as db:
        if "iceberg_type" not in {row[1] for row in db.execute("PRAGMA table_info(iceberg_tables)")}:
            db.execute("ALTER TABLE iceberg_tables ADD COLUMN iceberg_type VARCHAR(5)")


def poll(progress: Callable[[], int], target: int, side: str, diagnose: Callable[[], str],
         stall_s: Callable[[], float] = lambda: STALL_S) -> None:
    """Until `progress()` reaches `target`; Stalled with `diagnose()` when nothing moves for
    `stall_s()` (asked only once nothing has moved for LOST_STALL_S: it may read a log)."""
    last, last_change = -1, time.perf_counter()
    while (value := progress()) < target:
        now = time.perf_counter()
        if value != last:
            last, last_change = value, now
        if now - last_change > LOST_STALL_S and now - last_change > (limit := stall_s()):
            raise Stalled(f"{side}: stuck at {value:,} of {target:,} rows for {limit:g}s; {diagnose()}")
        time.sleep(POLL_S)
