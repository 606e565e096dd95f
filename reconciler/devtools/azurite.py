"""Start and stop an Azure Blob Storage server on loopback, for the tests and the examples.

Azurite (Microsoft's Azure Storage emulator, npm `azurite`), pinned with its whole dependency
tree by `azurite/package.json` and `azurite/package-lock.json` beside this module and installed
from the npm registry by `npm ci` on first use into the project's cache (once per lock file;
node and npm must be on the machine). Its blob service alone runs here, objects in memory, with
one account of our own (a random key, so that tests can check it is masked) and a container
created at start. It checks SharedKey signatures as Azure does; given `tls` (`devtools.entra`),
it serves HTTPS and takes Entra ID bearer tokens too (`--oauth basic`, which Azurite allows
over HTTPS only). Stopped by its PID, never by name (docs/real-components.md#azure-server-azurite).

    python -m reconciler.devtools.azurite            # prints the endpoint, Ctrl-C stops
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import functools
import hashlib
import hmac
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler.devtools.process import (
    RunningServer,
    launch,
    on_a_free_port,
    port_open,
    serve_in_foreground,
    wait_ready,
)
from reconciler.devtools.entra import Tls
from reconciler.errors import ReconcilerError
from reconciler.toolchain.caches import cache_root, made_once

if TYPE_CHECKING:
    import pyarrow.fs as pafs

HOST = "127.0.0.1"
ACCOUNT = "reconciler"
CONTAINER = "reconciler"
PACKAGE_DIR = Path(__file__).resolve().parent / "azurite"
READY_TIMEOUT_S = 60.0  # node starts it in ~3 s idle, much longer on a loaded 2-core machine
INSTALL_TIMEOUT_S = 900.0


class AzuriteStartError(ReconcilerError):
    """Azurite could not be installed or started (no node/npm, no registry, no answer)."""


@dataclass(kw_only=True)
class RunningAzurite(RunningServer):
    """A started Azurite blob service, as RunningServer, with its account, key and container."""

    account_key: str
    account: str = ACCOUNT
    container: str = CONTAINER
    tls: Tls | None = None

    @property
    def scheme(self) -> str:
        return "http" if self.tls is None else "https"

    @property
    def endpoint(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"

    def uri(self, key: str = "") -> str:
        """`abfs://container@account.dfs.core.windows.net/key` in the default container."""
        return f"abfs://{self.container}@{self.account}.dfs.core.windows.net/{key}"

    def keys(self) -> dict[str, str]:
        """The connector keys that reach this server."""
        return {"azblob.endpoint": self.endpoint, "azblob.account.key": self.account_key}

    def sas_token(self, *, permissions: str = "rwdlac", hours: int = 1) -> str:
        """An account SAS token of the blob service (containers and objects), signed with the
        account key as the portal's "Shared access signature" page signs one (version 2019-12-12:
        account, permissions, service, resource types, start, expiry, IP, protocol, version)."""
        expiry = (datetime.datetime.now(datetime.UTC) + datetime.timedelta(hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")
        fields = {"sp": permissions, "ss": "b", "srt": "sco", "se": expiry, "spr": "https,http", "sv": "2019-12-12"}
        text = "\n".join([self.account, fields["sp"], fields["ss"], fields["srt"], "", expiry, "", fields["spr"],
                          fields["sv"], ""])
        signature = hmac.new(base64.b64decode(self.account_key), text.encode(), hashlib.sha256).digest()
        return urllib.parse.urlencode({**fields, "sig": base64.b64encode(signature).decode()})

    def filesystem(self) -> pafs.AzureFileSystem:
        """pyarrow's filesystem of the account (pyarrow loaded only by who asks)."""
        import pyarrow.fs as pafs

        return pafs.AzureFileSystem(account_name=self.account, account_key=self.account_key,
                                    blob_storage_authority=f"{self.host}:{self.port}", blob_storage_scheme=self.scheme,
                                    dfs_storage_authority=f"{self.host}:{self.port}", dfs_storage_scheme=self.scheme)


def installed() -> Path:
    """Azurite's blob server script, from the cache, else installed there by `npm ci` first."""
    lock = (PACKAGE_DIR / "package-lock.json").read_bytes()
    home = cache_root() / "azurite" / hashlib.sha256(lock).hexdigest()[:16]
    script = home / "node_modules" / ".bin" / "azurite-blob"
    if script.exists():
        return script
    made_once(home, _npm_ci)
    return script


def _npm_ci(into: Path) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise AzuriteStartError("node and npm are needed to install Azurite", hint="apt-get install -y nodejs npm")
    for name in ("package.json", "package-lock.json"):
        shutil.copy(PACKAGE_DIR / name, into / name)
    done = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                          cwd=into, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise AzuriteStartError(f"npm ci of {PACKAGE_DIR} failed: {' '.join(done.stderr.split())[-600:]}")


def start_azurite(log_dir: Path | None = None, *, port: int = 0, container: str = CONTAINER,
                  ready_timeout_s: float = READY_TIMEOUT_S, tls: Tls | None = None) -> RunningAzurite:
    """Start Azurite's blob service on `127.0.0.1:port` (0 = a free port); ready once `container`
    exists. With `tls`: over HTTPS, bearer tokens taken (the container is made with the key, the
    CA trusted meanwhile)."""
    script = installed()
    log_dir = log_dir if log_dir is not None else Path(tempfile.mkdtemp(prefix="reconciler-azurite-"))
    key = base64.b64encode(secrets.token_bytes(64)).decode()
    env = {**os.environ, "AZURITE_ACCOUNTS": f"{ACCOUNT}:{key}"}

    def start(chosen: int) -> RunningAzurite:
        log_path = log_dir / f"azurite-{chosen}.log"
        command = [str(script), "--blobHost", HOST, "--blobPort", str(chosen), "--inMemoryPersistence",
                   "--skipApiVersionCheck", "--disableTelemetry", "--loose"]
        if tls is not None:
            command += ["--oauth", "basic", "--cert", str(tls.cert), "--key", str(tls.key)]
        process = launch("Azurite", command, log_path, env=env)
        wait_ready(process, functools.partial(port_open, HOST, chosen), timeout_s=ready_timeout_s, error=AzuriteStartError,
                   what=f"did not answer on http://{HOST}:{chosen}", poll_s=0.1)
        return RunningAzurite(port=chosen, account_key=key, log_path=log_path, process=process, container=container,
                              tls=tls)

    server = on_a_free_port(port, start, AzuriteStartError)
    try:
        with _trusting(tls):
            server.filesystem().create_dir(container)
    except OSError as exc:
        server.stop()
        raise AzuriteStartError(f"creating container {container!r} on {server.endpoint} failed: {exc}") from None
    return server


@contextlib.contextmanager
def _trusting(tls: Tls | None) -> Iterator[None]:
    """This process's new TLS connections trust `tls`'s CA meanwhile (pyarrow's OpenSSL reads
    SSL_CERT_FILE on each one)."""
    saved = {name: os.environ.get(name) for name in (tls.env() if tls else {})}
    os.environ.update(tls.env() if tls else {})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reconciler.devtools.azurite",
                                     description="Run Azurite's blob service on loopback until interrupted.")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: a free one)")
    parser.add_argument("--container", default=CONTAINER, help=f"container to create (default: {CONTAINER})")
    args = parser.parse_args(argv)
    return serve_in_foreground(
        lambda: start_azurite(port=args.port, container=args.container), AzuriteStartError,
        address=lambda server: server.endpoint,
        about=lambda server: f"Azurite pid {server.pid}, account {server.account}, container {server.container}, "
        f"log {server.log_path}; path {server.uri()} with azblob.endpoint={server.endpoint} "
        f"azblob.account.key={server.account_key}; Ctrl-C stops it",
    )


if __name__ == "__main__":
    sys.exit(main())
