"""bench/jdbc.py's sink head-to-head at a tiny size, as a user runs it (its own broker,
PostgreSQL and Java Connect worker): every side's table checked by the bench itself (rows,
distinct ids) before it prints a figure, Debezium's JDBC sink among them, and the run SIGKILLed
mid-batch converging with no row twice. A wrong count makes the bench exit non-zero."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.timeout(1500)  # a broker, PostgreSQL, a Java worker and four `reconciler run` processes
def test_the_sink_bench_checks_every_side_and_prints_their_figures() -> None:
    command = [sys.executable, "jdbc.py", "sink", "--records", "3000", "--rounds", "1", "--kill-batch-size", "50"]
    done = subprocess.run(command, cwd=ROOT / "bench", capture_output=True, text=True, timeout=1400,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    out = done.stdout
    for label in ("psql \\copy (the limit)", "kcat -C (the reference)", "ours: jdbc-sink, insert",
                  "ours: jdbc-sink, upsert", "Debezium JDBC sink, insert", "Debezium JDBC sink, upsert"):
        assert label in out, out
    assert "Debezium's JDBC sink: io.debezium:debezium-connector-jdbc:" in out, out
    assert "3,000 rows, 0 duplicated, 0 missing" in out, out
