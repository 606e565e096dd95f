"""Spark Connect sessions kept across runs (docs/runtime.md#spark-connect).

A new Spark Connect session costs the server a Python worker start for it (its artifacts are
its own) and us an upload of the package and a preflight job: 14 s of a one-record `run
--once` was the preflight alone. Spark Connect lets a client attach to a session by id
(`sc://host:port/;session_id=<uuid>`), so the id of the session a run set up is kept in the
cache directory, one file per (server URL without its token, user, `--spark-conf`, the shipped
package's content hash), written atomically. The next run attaches to it: what was uploaded
to it is there, and the preflight's verdict holds (same code, same server session).

- The server says the session is gone (`INVALID_HANDLE.SESSION_CLOSED`/`…_NOT_FOUND`: released,
  or timed out after `spark.connect.session.manager.defaultSessionTimeout`): a new session,
  once, said at debug level. A restarted server knows no session of that id and makes a new
  one under it: its server-side id (which every response carries) differs from the kept one,
  so the run ships and checks again, as for a new session.
- Two runs at once may share a session: Spark Connect runs concurrent operations of one
  session, and ours set nothing per session but the SQL defaults every run sets alike.
- A session this process attached to is not released when it closes (`release_session_on_close`
  is off): the next run is to find it. `RECONCILER_SPARK_CONNECT_KEEP=off` turns keeping off.
- A URL that names its own `session_id` is used as given, without keeping anything.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlparse

from reconciler.toolchain.caches import cache_root, keep_newest

LOG = logging.getLogger(__name__)

ENV_KEEP = "RECONCILER_SPARK_CONNECT_KEEP"
KEPT_FILES = 32  # sessions remembered on this machine (servers × users × code versions)
# Spark Connect's conditions for a session id the server will not attach to (any more).
GONE_CONDITIONS = ("INVALID_HANDLE.SESSION_CLOSED", "INVALID_HANDLE.SESSION_NOT_FOUND",
                   "INVALID_HANDLE.SESSION_CHANGED")
SECRET_PARAMS = ("token",)  # credentials, not identity: never in a key or a file


@dataclass(frozen=True, kw_only=True)
class KeptSession:
    """What a kept session is known to hold."""

    session_id: str
    server_session_id: str | None = None  # the server's own id of it, to tell a restarted server
    verified: bool = False  # the executors' preflight passed in it
    shipped: Mapping[str, str] = field(default_factory=dict)  # artifact file name -> content digest
    checked: frozenset[str] = frozenset()  # connector classes that loaded in its Python workers

    @staticmethod
    def new() -> KeptSession:
        return KeptSession(session_id=str(uuid.uuid4()))

    def to_json(self) -> str:
        return json.dumps({"session_id": self.session_id, "server_session_id": self.server_session_id,
                           "verified": self.verified, "shipped": dict(self.shipped),
                           "checked": sorted(self.checked)})

    @staticmethod
    def from_json(text: str) -> KeptSession:
        data = json.loads(text)
        uuid.UUID(data["session_id"], version=4)  # what Spark Connect accepts
        return KeptSession(session_id=data["session_id"], server_session_id=data.get("server_session_id"),
                           verified=bool(data.get("verified")), shipped=dict(data.get("shipped") or {}),
                           checked=frozenset(data.get("checked") or ()))

    def merged(self, other: KeptSession | None) -> KeptSession:
        """This, with what a concurrent run recorded about the same session (uploads and checks
        are only ever added to a session)."""
        if other is None or (other.session_id, other.server_session_id) != (self.session_id, self.server_session_id):
            return self
        return replace(self, verified=self.verified or other.verified, shipped={**other.shipped, **self.shipped},
                       checked=self.checked | other.checked)


def keeping() -> bool:
    return os.environ.get(ENV_KEEP, "on").strip().lower() not in ("off", "0", "false", "no")


def url_params(url: str) -> dict[str, str]:
    """The `;key=value` parameters of a Spark Connect URL (`sc://host:port/;a=b;c=d`)."""
    path = urlparse(url.strip()).path
    params = {}
    for part in path.lstrip("/").split(";"):
        key, sep, value = part.partition("=")
        if sep and key:
            params[key] = value
    return params


def with_session_id(url: str, session_id: str) -> str:
    """`url` with `session_id=…` among its parameters (Spark Connect's own syntax)."""
    url = url.strip()
    parsed = urlparse(url)
    base = f"{parsed.scheme}://{parsed.netloc}/"
    params = [part for part in parsed.path.lstrip("/").split(";") if part]
    return base + ";" + ";".join([*params, f"session_id={session_id}"])


def connect_user(url: str) -> str:
    """The user a session belongs to, as the Connect client picks it."""
    return url_params(url).get("user_id") or os.environ.get("SPARK_USER") or os.environ.get("USER") or ""


def session_key(url: str, conf: Mapping[str, str], code: str) -> str:
    """The name of a kept session: server, user, settings and shipped code; not the token."""
    parsed = urlparse(url.strip())
    params = sorted((k, v) for k, v in url_params(url).items() if k not in SECRET_PARAMS)
    what = json.dumps([parsed.netloc.lower(), params, connect_user(url), sorted(conf.items()), code])
    return hashlib.blake2b(what.encode(), digest_size=12).hexdigest()


def is_session_gone(exc: BaseException) -> bool:
    """Whether the server refused a session id it will not attach to (closed, unknown)."""
    for error in (exc, exc.__cause__):
        condition = getattr(error, "getCondition", None)
        named = condition() if callable(condition) else None
        text = str(named or error or "")
        if any(gone in text for gone in GONE_CONDITIONS):
            return True
    return False


def _directory() -> Path:
    return cache_root() / "spark-connect"


def load(key: str) -> KeptSession | None:
    """The kept session of `key`, or None (none kept, or a file no run could have written)."""
    try:
        return KeptSession.from_json((_directory() / f"{key}.json").read_text())
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(key: str, kept: KeptSession) -> None:
    """Keep `kept` for the next run, atomically (a concurrent run reads all or nothing); what
    another run recorded meanwhile about the same session is kept too."""
    directory = _directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / f"{key}.json"
        text = kept.merged(load(key)).to_json()
        partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
        partial.write_text(text)
        os.replace(partial, target)
        keep_newest(directory, "*.json", KEPT_FILES)
    except OSError as exc:  # a read-only home: runs then start a session each, as before
        LOG.debug("cannot keep the Spark Connect session id in %s: %s", directory, exc)


def forget(key: str) -> None:
    (_directory() / f"{key}.json").unlink(missing_ok=True)


def digest(path: Path) -> str:
    return hashlib.blake2b(path.read_bytes(), digest_size=8).hexdigest()
