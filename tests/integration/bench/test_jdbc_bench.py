"""bench/jdbc.py at a tiny size on the session's broker, PostgreSQL and Java worker (their
addresses passed as flags), one run a side: the sink's sides (Debezium's JDBC sink among them,
from the worker's plugin path) and the source's each checked by the bench itself before it
prints a figure (the sink's tables: rows, distinct ids; the source's topics: records, every id
once), and the sink run SIGKILLed mid-batch converging with no row twice. A failed check makes
the bench exit non-zero, and the test with it. Insert mode only (`--no-upsert`: upserts are
jdbc-sink's own tests'), for one Spark start less."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reconciler.devtools.connect import RunningConnect
from reconciler.devtools.postgres import RunningPostgres

ROOT = Path(__file__).resolve().parents[3]


def bench(*args: str) -> str:
    done = subprocess.run([sys.executable, "jdbc.py", *args], cwd=ROOT / "bench", capture_output=True, text=True,
                          timeout=1400, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    return done.stdout


def servers(kafka: Any, postgres: RunningPostgres) -> list[str]:
    return ["--rounds", "1", "--bootstrap-servers", kafka.bootstrap, "--postgres", postgres.dsn]


@pytest.mark.timeout(1500)  # `reconciler run` in insert mode, then SIGKILLed and again; Debezium's sink in insert mode
def test_the_sink_bench_checks_every_side_and_prints_their_figures(kafka: Any, postgres: RunningPostgres,
                                                                   connect_worker: RunningConnect) -> None:
    out = bench("sink", *servers(kafka, postgres), "--records", "3000", "--no-upsert", "--kill-batch-size", "50", "--connect-url", connect_worker.url)
    for label in ("psql \\copy (the limit)", "kcat -C (the reference)", "ours: jdbc-sink, insert",
                  "Debezium JDBC sink, insert"):
        assert label in out, out
    assert "Debezium's JDBC sink: io.debezium:debezium-connector-jdbc:" in out, out
    assert "3,000 rows, 0 duplicated, 0 missing" in out, out
    job = re.search(r"within ours \(insert\): .* the batch's Spark job without it ([\d.]+) s", out)
    assert job is not None and float(job.group(1)) > 0, out  # read from the runtime's job line


@pytest.mark.timeout(900)
def test_the_source_bench_checks_each_topic_and_prints_the_figures(kafka: Any, postgres: RunningPostgres) -> None:
    out = bench("source", *servers(kafka, postgres), "--records", "1500")
    assert "every run's topic checked: 1,500 records, every id once" in out, out
    for label in ("psql COPY TO STDOUT | kcat -P (the limit)", "ours: jdbc-source, batch.max.rows="):
        assert label in out, out
    assert "× the limit's rate" in out, out
    tasks = re.search(r"of which the tasks themselves ([\d.]+) s", out)
    assert tasks is not None and float(tasks.group(1)) > 0, out  # read from the runtime's job line


@pytest.mark.timeout(300)
def test_the_source_task_bench_reads_the_whole_table_or_prints_no_figure(kafka: Any, postgres: RunningPostgres) -> None:
    done = subprocess.run([sys.executable, "jdbc_source_task.py", "--records", "500", "--rounds", "1", "--postgres",
                           postgres.dsn, "--bootstrap-servers", kafka.bootstrap], cwd=ROOT / "bench",
                          capture_output=True, text=True, timeout=280, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    assert re.search(r"^round 1: [\d.]+ s, [\d.]+ CPU s, [\d,]+ rows/s, \d+ B/record$", done.stdout, re.MULTILINE), done.stdout
