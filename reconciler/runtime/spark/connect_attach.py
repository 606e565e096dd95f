"""A Spark Connect session for this run: the kept one when the server still has it, else a new
one with the package shipped and the executors checked (`connect_sessions` says why and when).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reconciler import masking
from reconciler.runtime.spark import connect_sessions as kept_sessions
from reconciler.runtime.spark.connect_sessions import KeptSession
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.session import SparkTarget, SparkUnavailable, connect_address, start_remote
from reconciler.runtime.spark.ship import check_connectors, plugin_files, preflight, ship

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOG = logging.getLogger(__name__)


@dataclass(kw_only=True)
class RemoteSession:
    """The session, and what it holds; `key` None: not kept (keeping off, or the URL's own id)."""

    session: SparkSession
    key: str | None
    kept: KeptSession
    reused: bool = False

    def check_classes(self, classes: Sequence[str]) -> dict[str, str]:
        """`check_connectors` for the classes the session has not loaded with these very plugin
        files; their files shipped first. A plugin file changed since the session imported it
        cannot be shipped into it again (Spark Connect refuses to overwrite an artifact, and its
        Python workers keep the module): the class fails, and the session is not kept."""
        files = {name: plugin_files(name) for name in classes}
        digests = {path.name: kept_sessions.digest(path) for paths in files.values() for path in paths}
        changed = {name for name, paths in files.items()
                   if any(self.kept.shipped.get(p.name, digests[p.name]) != digests[p.name] for p in paths)}
        failures = {name: f"connector class {name!r}: its module changed since the kept Spark Connect session "
                    "imported it, and a session cannot take a new version; the next run starts a new session"
                    for name in changed}
        if changed and self.key is not None:
            kept_sessions.forget(self.key)
            self.key = None
        known = {name for name in classes if name in self.kept.checked and name not in changed}
        new = [name for name in classes if name not in known and name not in changed]
        if not new:
            return failures
        ship(Spark.over(self.session), [p for name in new for p in files[name] if p.name not in self.kept.shipped])
        failures.update(check_connectors(Spark.over(self.session), new))
        shipped = {p.name: digests[p.name] for name in new for p in files[name]}
        loaded = {name for name in new if name not in failures}
        self._record(replace(self.kept, shipped={**self.kept.shipped, **shipped}, checked=self.kept.checked | loaded))
        return failures

    def _record(self, kept: KeptSession) -> None:
        self.kept = kept
        if self.key is not None:
            kept_sessions.save(self.key, kept)


def open_remote(target: SparkTarget, code: Path) -> RemoteSession:
    """The session on `target.remote` with `code` (the package's zip) shipped and checked: the
    kept session when the server still has it as it was, else a new one."""
    started = time.monotonic()
    remote = _open(target, code)
    host, port = connect_address(target.remote or "")
    LOG.info("Spark session (sc://%s:%d, %s) ready in %.1fs", host, port,
             "the kept session" if remote.reused else "a new session", time.monotonic() - started)
    return remote


def _open(target: SparkTarget, code: Path) -> RemoteSession:
    url = target.remote
    assert url is not None, "a Spark Connect target"
    token = kept_sessions.url_params(url).get("token")
    if token:
        masking.remember([token])  # never in an error message or a log line
    if not kept_sessions.keeping() or "session_id" in kept_sessions.url_params(url):
        return _set_up(RemoteSession(session=_start(target, url), key=None, kept=KeptSession(session_id="")), code)
    key = kept_sessions.session_key(url, target.conf, code.name)
    kept = kept_sessions.load(key)
    if kept is not None:
        attached = _attach(target, key, kept)
        if attached is not None and attached.reused:
            return attached
        if attached is not None:
            return _set_up(attached, code)
    kept = KeptSession.new()
    fresh = RemoteSession(session=_start(target, kept_sessions.with_session_id(url, kept.session_id)), key=key, kept=kept)
    return _set_up(fresh, code)


def _attach(target: SparkTarget, key: str, kept: KeptSession) -> RemoteSession | None:
    """The kept session if the server attaches to it (`reused` if as it was), else None."""
    url = kept_sessions.with_session_id(target.remote or "", kept.session_id)
    try:
        session = _start(target, url)
    except SparkUnavailable as exc:
        if not kept_sessions.is_session_gone(exc):
            raise
        LOG.debug("the kept Spark Connect session %s is gone (%s): starting a new one", kept.session_id,
                  str(exc.__cause__ or exc).splitlines()[0][:200])
        return None
    observed = server_session_id(session)
    if observed is not None and observed == kept.server_session_id and kept.verified:
        LOG.debug("Spark Connect: reusing the kept session %s (code and checks in place)", kept.session_id)
        return RemoteSession(session=session, key=key, kept=kept, reused=True)
    LOG.debug("Spark Connect: the server holds a new session under the kept id %s (restarted?): "
              "shipping and checking again", kept.session_id)
    return RemoteSession(session=session, key=key, kept=KeptSession(session_id=kept.session_id))


def _start(target: SparkTarget, url: str) -> SparkSession:
    session = start_remote(url, target.conf, timeout_s=target.timeout_s)
    session.release_session_on_close = False  # type: ignore[attr-defined]  # Connect's own switch
    return session


def _set_up(remote: RemoteSession, code: Path) -> RemoteSession:
    """Ship `code` into a session that does not have it, and check the executors; kept after."""
    session = remote.session
    LOG.debug("Spark Connect: shipping %s into session %s and checking the executors", code.name,
              remote.kept.session_id or "(the URL's)")
    try:
        ship(Spark.over(session), [code])
        preflight(Spark.over(session))
    except BaseException:
        session.release_session_on_close = True  # type: ignore[attr-defined]  # nobody is to find it
        session.stop()
        raise
    remote._record(replace(remote.kept, server_session_id=server_session_id(session), verified=True,
                           shipped={code.name: kept_sessions.digest(code)}))
    return remote


def server_session_id(session: SparkSession) -> str | None:
    """The server's own id of the session (every response carries it; a restarted server gives
    a new one for the same session id)."""
    client = getattr(session, "client", None)
    observed = getattr(client, "_server_session_id", None)
    return observed if isinstance(observed, str) else None
