"""Start and stop a Google Cloud Storage server on loopback, for the tests and the examples.

fake-gcs-server (github.com/fsouza/fake-gcs-server, Go) at the version `gcs/go.mod` beside this
module pins, built with `gcs/main.go`, which adds the object writes of GCS's XML API that
fake-gcs-server does not route (PUT, copy, DELETE, each under its x-goog-if-generation-match)
and its listing's start-after: the API delta-rs (object_store) speaks. `go build` makes it on
first use into the project's cache (once per source; Go must be on the machine). GCS's JSON,
upload and XML APIs over plain HTTP, objects in memory, no credentials checked (clients connect
anonymously). A bucket is created at start. Stopped by its PID, never by name
(docs/real-components.md#gcs-server).

    python -m reconciler.devtools.gcs                # prints the endpoint, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reconciler.devtools.process import (
    RunningServer,
    http_status,
    launch,
    on_a_free_port,
    serve_in_foreground,
    wait_ready,
)
from reconciler.errors import ReconcilerError
from reconciler.toolchain.caches import cache_root, made_once

HOST = "127.0.0.1"
BUCKET = "reconciler"
READY_TIMEOUT_S = 30.0
SOURCE_DIR = Path(__file__).resolve().parent / "gcs"
SOURCES = ("go.mod", "go.sum", "main.go")
BINARY = "fake-gcs-xml"
GO_TARBALL = Path("/usr/local/go/bin/go")  # where go.dev's tarball installs it, often not on PATH
BUILD_TIMEOUT_S = 1200.0  # the first build fetches and compiles ~100 modules: ~4 min on 2 busy cores


class GcsStartError(ReconcilerError):
    """The GCS server could not be started (not installed, no binary for this machine, no answer)."""


@dataclass(kw_only=True)
class RunningGcs(RunningServer):
    """A started fake-gcs-server, as RunningServer, with its bucket."""

    bucket: str = BUCKET

    def uri(self, key: str = "") -> str:
        """`gs://bucket/key` in the default bucket."""
        return f"gs://{self.bucket}/{key}"

    def keys(self) -> dict[str, str]:
        """The connector keys that reach this server."""
        return {"gcs.endpoint": self.endpoint, "gcs.anonymous": "true"}


def server_binary() -> Path:
    """The server's binary, from the cache, else built there by `go build` first."""
    digest = hashlib.sha256(b"".join((SOURCE_DIR / name).read_bytes() for name in SOURCES)).hexdigest()[:16]
    home = cache_root() / "fake-gcs" / digest
    if not (home / BINARY).exists():
        made_once(home, _build)
    return home / BINARY


def _build(into: Path) -> None:
    go = shutil.which("go") or (str(GO_TARBALL) if GO_TARBALL.exists() else None)
    if go is None:
        raise GcsStartError("Go is needed to build the GCS server (fake-gcs-server)",
                            hint="install Go 1.21 or newer (go.dev/dl); it fetches the toolchain go.mod asks for")
    done = subprocess.run([go, "build", "-trimpath", "-mod=readonly", "-o", str(into / BINARY), "."],
                          cwd=SOURCE_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise GcsStartError(f"go build of {SOURCE_DIR} failed: {' '.join(done.stderr.split())[-600:]}")


def start_gcs(log_dir: Path | None = None, *, port: int = 0, bucket: str = BUCKET,
              ready_timeout_s: float = READY_TIMEOUT_S) -> RunningGcs:
    """Start the server on `127.0.0.1:port` (0 = a free port); ready once `bucket` is created."""
    binary = server_binary()
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-gcs-"))
    return on_a_free_port(
        port, lambda chosen: _start_once(binary, log_dir, chosen, bucket, ready_timeout_s), GcsStartError
    )


def _start_once(binary: Path, log_dir: Path, port: int, bucket: str, ready_timeout_s: float) -> RunningGcs:
    log_path = log_dir / f"gcs-{port}.log"
    endpoint = f"http://{HOST}:{port}"
    process = launch("the GCS server", [str(binary), "-host", HOST, "-port", str(port)], log_path)
    wait_ready(process, functools.partial(_bucket_made, port, bucket), timeout_s=ready_timeout_s,
               error=GcsStartError, what=f"did not answer on {endpoint}", poll_s=0.05)
    return RunningGcs(port=port, log_path=log_path, process=process, bucket=bucket)


def _bucket_made(port: int, name: str) -> bool:
    return _create_bucket(port, name) in (200, 409)  # 409: it exists already


def _create_bucket(port: int, name: str) -> int | None:
    """POST /storage/v1/b (buckets.insert): its HTTP status, None when nothing answers."""
    return http_status(HOST, port, "POST", "/storage/v1/b", body=json.dumps({"name": name}),
                       headers={"Content-Type": "application/json"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reconciler.devtools.gcs",
                                     description="Run a GCS server (fake-gcs-server) on loopback until interrupted.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--bucket", default=BUCKET, help=f"bucket to create (default: {BUCKET})")
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_gcs(port=args.port, bucket=args.bucket), GcsStartError,
        address=lambda server: server.endpoint,
        about=lambda server: f"GCS server pid {server.pid}, bucket {server.bucket}, log {server.log_path}; "
        f"connector keys gcs.endpoint={server.endpoint} gcs.anonymous=true; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
