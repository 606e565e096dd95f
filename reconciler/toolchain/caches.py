"""The project's cache directory on this machine, and keeping it from growing without end.

Everything the runtime and the dev tools cache (Maven class paths, shipped code, the Spark CDS
archive, the executors' packed environment) lives under `$XDG_CACHE_HOME/connect-reconciler/`
(`~/.cache/connect-reconciler/` when that is unset), each kind in a directory of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "connect-reconciler"


def keep_newest(directory: Path, pattern: str, kept: int) -> list[Path]:
    """Delete all but the `kept` newest (by modification time) files matching `pattern` in
    `directory`; the deleted ones are returned, for a caller to drop what belongs to them."""
    found = sorted(directory.glob(pattern), key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for stale in found[kept:]:
        stale.unlink(missing_ok=True)
    return found[kept:]


def made_once(home: Path, make: Callable[[Path], None]) -> Path:
    """`home`, made by `make(staging)` in a fresh directory beside it, then renamed to it: atomic,
    so no reader sees half of it, and of two concurrent makers the first to finish wins. When
    `make` raises, nothing is left behind."""
    home.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{home.name}-making-", dir=home.parent))
    try:
        make(staging)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        staging.rename(home)
    except OSError:  # another maker's rename came first: theirs is kept
        shutil.rmtree(staging, ignore_errors=True)
    return home
