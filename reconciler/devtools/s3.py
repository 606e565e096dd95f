"""Start and stop an S3-compatible server on loopback, for the tests, the benchmarks and the examples.

moto's standalone server (`moto[server]`, a dev dependency) in its own process: S3's real HTTP
API, path-style (`http://127.0.0.1:<port>/<bucket>/<key>`), with conditional writes (a PUT with
`If-None-Match: *` of an existing key is refused with 412). Objects live in the server's memory
and go with it. It takes any credentials; we hand out random ones so that a test can check that
they are masked. A bucket is created at start. Stopped by its PID, never by name
(docs/real-components.md#s3-compatible-server).

    python -m reconciler.devtools.s3                # prints the endpoint, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import secrets
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from reconciler.devtools.process import (
    RunningServer,
    http_status,
    launch,
    on_a_free_port,
    port_is_free,
    serve_in_foreground,
    wait_ready,
)
from reconciler.errors import ReconcilerError

HOST = "127.0.0.1"
BUCKET = "reconciler"
REGION = "us-east-1"
READY_TIMEOUT_S = 30.0


class S3StartError(ReconcilerError):
    """The S3 server could not be started (moto missing, port taken, did not answer)."""


@dataclass(kw_only=True)
class RunningS3(RunningServer):
    """A started server, as RunningServer, with its credentials, bucket and region."""

    access_key_id: str
    secret_access_key: str
    bucket: str = BUCKET
    region: str = REGION

    def uri(self, key: str = "") -> str:
        """`s3://bucket/key` in the default bucket."""
        return f"s3://{self.bucket}/{key}"

    def env(self) -> dict[str, str]:
        """The standard AWS variables that point SDKs (boto3, pyarrow's AWS SDK, Java's) at this server."""
        return {
            "AWS_ACCESS_KEY_ID": self.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret_access_key,
            "AWS_REGION": self.region,
            "AWS_DEFAULT_REGION": self.region,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ENDPOINT_URL_S3": self.endpoint,
        }

    def create_bucket(self, name: str) -> None:
        status = _put_bucket(self.host, self.port, name)
        if status != 200:
            raise S3StartError(f"creating bucket {name!r} on {self.endpoint} answered HTTP {status}")


def start_s3(
    log_dir: Path | None = None, *, port: int = 0, bucket: str = BUCKET, ready_timeout_s: float = READY_TIMEOUT_S,
    check_credentials: bool = False,
) -> RunningS3:
    """Start moto's server on `127.0.0.1:port` (0 = a free port); ready once `bucket` is created.
    `check_credentials`: after creating the bucket, the server checks requests' signatures as
    AWS does (moto's IAM: no key is known, so every signed request is refused with 403) — for
    the tests of refused credentials."""
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        raise S3StartError("moto's S3 server is not installed", hint="pip install -e '.[dev]' (moto[server])")
    if port and not port_is_free(port):
        raise S3StartError(f"port {port} on {HOST} is already in use", hint="choose another --port")
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-s3-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    return on_a_free_port(
        port, lambda chosen: _start_once(log_dir, chosen, bucket, ready_timeout_s, check_credentials), S3StartError
    )


def _start_once(log_dir: Path, port: int, bucket: str, ready_timeout_s: float, check_credentials: bool) -> RunningS3:
    log_path = log_dir / f"s3-{port}.log"
    # moto lets the first N requests in unchecked: the one that creates the bucket.
    env = {**os.environ, "INITIAL_NO_AUTH_ACTION_COUNT": "1"} if check_credentials else None
    process = launch("the S3 server", [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)], log_path,
                     env=env)
    server = RunningS3(port=port, access_key_id=f"AKIA{secrets.token_hex(8).upper()}",
                       secret_access_key=secrets.token_urlsafe(30), log_path=log_path, process=process, bucket=bucket)
    # Creating the bucket is the readiness probe: the first answer is the one we need.
    wait_ready(process, lambda: _put_bucket(HOST, port, bucket) == 200, timeout_s=ready_timeout_s,
               error=S3StartError, what=f"did not answer on {server.endpoint}", poll_s=0.05)
    return server


def _put_bucket(host: str, port: int, name: str) -> int | None:
    """PUT /<name> (CreateBucket, path-style): its HTTP status, None when nothing answers.
    Unsigned: moto's server does not check signatures, and the stdlib keeps this module free of SDKs."""
    return http_status(host, port, "PUT", f"/{name}", headers={"Content-Length": "0"})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m reconciler.devtools.s3",
        description="Run an S3-compatible server (moto) on loopback until interrupted; prints its endpoint.",
    )
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--bucket", default=BUCKET, help=f"bucket to create (default: {BUCKET})")
    parser.add_argument("--log-dir", type=Path, default=None, help="where to keep the server log")
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_s3(args.log_dir, port=args.port, bucket=args.bucket), S3StartError,
        address=lambda server: server.endpoint,
        about=lambda server: f"S3 server (moto) pid {server.pid}, bucket {server.bucket}, log {server.log_path}; "
        f"export {' '.join(f'{key}={value}' for key, value in server.env().items())}; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
