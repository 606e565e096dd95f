"""Manifest files read before, by their bytes: a file that has not changed is not parsed again.

Only the YAML → data step of problem-free files is cached, under a hash of each file's bytes;
every check runs again on every load. Where it lives, and the rules that keep it right:
docs/configuration.md#the-manifest-cache.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from pydantic_core import from_json, to_json

from reconciler.manifests import documents, reading, validate
from reconciler.manifests.reading import CachedDocument

LOG = logging.getLogger(__name__)
ENV_VAR = "RECONCILER_CACHE_DIR"
_OFF = {"", "0", "off", "false", "no", "none"}
_FORMAT = 1
# Cache files kept (one per set of input paths): the least recently written go first.
KEEP_FILES = 16

Entries = Mapping[str, Sequence[CachedDocument]]  # file digest → its documents


class ManifestCache:
    """The documents of the files read last time (`get`), and `save` for this time's."""

    def __init__(self, path: Path | None = None, entries: Entries | None = None) -> None:
        self.path = path
        self._entries = entries or {}
        self._rejected = False

    @classmethod
    def open(cls, paths: Sequence[str | os.PathLike[str]]) -> ManifestCache:
        """The cache for loads of these input paths (empty when there is none or it is off)."""
        directory = cache_dir()
        if directory is None:
            return cls()
        inputs = "\0".join(os.path.abspath(os.fspath(p)) for p in paths)
        name = hashlib.blake2b(inputs.encode(errors="surrogateescape"), digest_size=12).hexdigest()
        path = directory / f"manifests-{name}.json"
        return cls(path, _read(path))

    @property
    def empty(self) -> bool:
        return not self._entries

    def get(self, digest: str) -> Sequence[CachedDocument] | None:
        return self._entries.get(digest)

    def reject(self) -> None:
        """What `get` gave for a file could not be used (see `reading.from_documents`): rewrite."""
        self._rejected = True

    def save(self, entries: Entries) -> None:
        """Keep exactly these files' documents; nothing is written when they are what was read."""
        if self.path is None or (entries.keys() == self._entries.keys() and not self._rejected):
            return
        document = {"format": _FORMAT, "reader": reader_stamp(), "files": entries}
        try:
            _write_private(self.path, to_json(document, inf_nan_mode="constants"))
            _prune(self.path.parent)
        except (OSError, ValueError) as exc:  # ValueError: data JSON cannot hold (never from YAML)
            LOG.debug("manifest cache %s not written: %s", self.path, exc)


def cache_dir() -> Path | None:
    configured = os.environ.get(ENV_VAR)
    if configured is not None:
        return None if configured.strip().lower() in _OFF else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    if base.startswith("~"):  # no home directory to expand to
        return None
    return Path(base) / "connect-reconciler"


@functools.cache
def reader_stamp() -> str:
    """Changes whenever the code that turns YAML into documents' data could read differently."""
    digest = hashlib.blake2b(digest_size=12)
    for module in (documents, reading, validate):  # YAML → data; what is kept; names' positions
        with contextlib.suppress(OSError, TypeError):
            digest.update(Path(module.__file__ or "").read_bytes())
    digest.update(f"{_FORMAT}:{yaml.__version__}:{hasattr(yaml, 'CSafeLoader')}".encode())
    return digest.hexdigest()


def _read(path: Path) -> dict[str, list[CachedDocument]]:
    try:
        if not _private(path.parent):
            return {}
        document = from_json(path.read_bytes())
    except (OSError, ValueError) as exc:
        if not isinstance(exc, FileNotFoundError):
            LOG.debug("manifest cache %s ignored: %s", path, exc)
        return {}
    if not isinstance(document, dict) or document.get("format") != _FORMAT or document.get("reader") != reader_stamp():
        return {}
    files = document.get("files")
    return files if isinstance(files, dict) else {}


def _prune(directory: Path) -> None:
    """Many repositories (or temporary checkouts) read over time: keep the newest few."""
    caches = sorted(directory.glob("manifests-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in caches[KEEP_FILES:]:
        with contextlib.suppress(OSError):
            old.unlink()


def _private(directory: Path) -> bool:
    """Only this user may write there: anyone else could make us read manifests they wrote."""
    info = directory.stat()
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not _private(path.parent):
        raise OSError(f"{path.parent} is writable by other users")
    fd, temporary = tempfile.mkstemp(prefix=".manifests-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
