"""The manifests a `run`/`watch` loop applies at each tick: fixed (`run`), or re-read when the
files change (`watch`).

Static deployments (KIP-304's idea): the manifests are mounted (e.g. a ConfigMap) or baked into
a derived image, and the files are the only API. A change wakes the loop at once; the new
manifests are validated first, and an invalid edit is reported while the previous valid
manifests keep being applied and run. Which file events count as a change is
`reconciler.manifests.watch`'s business; every change reloads all manifests and re-plans from
scratch (docs/runtime.md#watch-mode).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from reconciler.core.diagnostics import Diagnostic
from reconciler.core.models import DesiredConnector
from reconciler.manifests import load_manifests
from reconciler.manifests.watch import Fingerprint, fingerprint, watch_files


class ReloadOutput(Protocol):
    """Where a reload is told: a reload, or an invalid edit (the previous manifests still run)."""

    def notice(self, message: str, **fields: Any) -> None: ...
    def invalid_manifests(self, diagnostics: Sequence[Diagnostic]) -> None: ...


class ManifestSource(Protocol):
    """What a tick applies: `()` gives (desired, paths); `problems` says what is wrong with the
    files on disk (their edit is not applied; none while they are valid)."""

    @property
    def problems(self) -> Sequence[str]: ...
    def __call__(self) -> tuple[Sequence[DesiredConnector], Sequence[str]]: ...


@dataclass(frozen=True)
class FixedManifests:
    """`run`'s manifests: read once, at start."""

    desired: Sequence[DesiredConnector]
    paths: Sequence[str]
    problems: Sequence[str] = field(default=())

    def __call__(self) -> tuple[Sequence[DesiredConnector], Sequence[str]]:
        return self.desired, self.paths


class Manifests:
    """The current valid manifests, and what the files held when they were last read.

    The watcher thread calls `notice()` after a burst of file events; the tick thread takes the
    manifests by calling the object, which reloads them first if the files changed.
    """

    def __init__(self, paths: Sequence[str], desired: Sequence[DesiredConnector], output: ReloadOutput) -> None:
        self.paths = list(paths)
        self.desired = list(desired)
        self.output = output
        self.valid = True  # False while the files on disk are invalid (the previous ones still run)
        self.problems: list[str] = []  # what is wrong with them, for /readyz
        self.reloads = 0
        self._seen: Fingerprint = fingerprint(self.paths)
        self._changed = threading.Event()
        self._lock = threading.Lock()

    def __call__(self) -> tuple[Sequence[DesiredConnector], Sequence[str]]:
        if self._changed.is_set():
            self._changed.clear()
            self.reload()
        return self.desired, self.paths

    def notice(self) -> bool:
        """Whether the files now differ from what was last read; if so, the next call reloads."""
        now = fingerprint(self.paths)
        with self._lock:
            if now == self._seen:
                return False
            self._changed.set()
            return True

    def reload(self) -> bool:
        """Take the files as they are now; keep the previous manifests if they are invalid."""
        seen = fingerprint(self.paths)  # before reading: a later edit differs from it, and is seen
        result = load_manifests(self.paths)
        with self._lock:
            self._seen = seen
        self.reloads += 1
        self.valid = result.ok
        self.problems = [diagnostic.render() for diagnostic in result.diagnostics if not result.ok]
        if not result.ok:
            self.output.invalid_manifests(result.diagnostics)
            return False
        self.desired = list(result.connectors)
        self.output.notice(f"manifests reloaded: {len(self.desired)} connector(s)", event="manifests-reloaded",
                           connectors=len(self.desired))
        return True

    def watch(self, *, changed: Callable[[], None], stop: threading.Event) -> threading.Thread:
        """Watch the files from a daemon thread until `stop`: `changed()` when they differ."""

        def on_files_event() -> None:
            if self.notice():
                changed()

        watcher = threading.Thread(
            target=watch_files, args=(self.paths, on_files_event, stop), name="manifest-watcher", daemon=True
        )
        watcher.start()
        return watcher
