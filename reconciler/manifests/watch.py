"""Watching manifest files for `reconciler watch`: which file events matter, and whether the
manifests really changed.

Events are only a hint; the files decide. After each burst of events (debounced: a burst ends
after `QUIET_MS` without a new event, or `MAX_BURST_MS` after it began) the manifest files are
listed and hashed again, exactly as the loader would read them, and only a different
*fingerprint* counts as a change. That makes the noisy cases one change or none:

- editors' temporary and backup files (`.x.yaml.swp`, `x.yaml~`, `.#x.yaml`, `#x.yaml#`, vim's
  `4913` probe, JetBrains' `___jb_tmp___`) are not even looked at;
- a Kubernetes ConfigMap or Secret volume updates by writing a new hidden `..<timestamp>`
  directory, then renaming a `..data_tmp` symlink over `..data`, then removing the old
  directory: several events, one change of content;
- a file saved with the same bytes (`touch`, a formatter that changes nothing) is no change;
- a deleted file changes the fingerprint like any edit.

Each change then reloads *every* manifest from scratch (`app.reload`): level-based, nothing is
patched in place. (docs/runtime.md#watch-mode.)
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from reconciler.manifests.loader import manifest_files
from reconciler.manifests.reading import digest, read_raw

LOG = logging.getLogger(__name__)
QUIET_MS = 100  # a burst of events ends after this long without another
MAX_BURST_MS = 1000  # ... or this long after it began, even if events keep coming
RETRY_S = 2.0  # after watching failed

# File names editors write beside the file they save; never manifests.
EDITOR_TEMP_NAMES = re.compile(
    r"""(
        \.sw.$             # vim swap files: .x.yaml.swp, .swo, .swx
      | ~$                  # backups: x.yaml~
      | ^\.\#               # emacs lock files: .#x.yaml
      | ^\#.*\#$            # emacs auto-save: #x.yaml#
      | ^4913$              # vim's "can I write here" probe
      | \.___jb_\w+___$     # JetBrains safe-write
      | \.kate-swp$         # Kate
      | ^\.goutputstream-   # GNOME's safe-write
      | \.tmp$              # generic safe-write temporaries
    )""",
    re.VERBOSE,
)

Fingerprint = tuple[tuple[str, str], ...]


def is_editor_temp(path: str) -> bool:
    return EDITOR_TEMP_NAMES.search(os.path.basename(path)) is not None


def fingerprint(paths: Sequence[str]) -> Fingerprint:
    """(file, digest of its bytes) for every manifest file the loader would read, plus the
    problems it would report about the paths themselves (a deleted path changes it too)."""
    files, problems = manifest_files(paths)
    found = [(file, digest(read_raw(file)[0])) for file in files]
    found += [("!problem", problem.render()) for problem in problems]
    return tuple(found)


def watch_targets(paths: Sequence[str]) -> list[str]:
    """What to watch: directories themselves; for a file, its directory, so that a file
    replaced by a rename (editors, ConfigMap symlinks) keeps being seen."""
    targets: list[str] = []
    for path in paths:
        target = path if os.path.isdir(path) else str(Path(path).parent)
        if target not in targets:
            targets.append(target)
    return targets


def watch_files(
    paths: Sequence[str], on_event: Callable[[], None], stop: threading.Event
) -> None:
    """Call `on_event` after each burst of relevant file events under `paths`, until `stop`.

    If watching fails (a watched directory vanished, say, while a volume is remounted), it is
    set up again a moment later; meanwhile `watch`'s resync passes still notice changes.
    """
    while not stop.is_set():
        try:
            _watch(paths, on_event, stop)
        except Exception as exc:  # watchfiles' errors are plain OSError / RuntimeError
            LOG.warning("watching %s failed (%s); trying again in %g s", ", ".join(paths), exc, RETRY_S)
            stop.wait(RETRY_S)


def _watch(paths: Sequence[str], on_event: Callable[[], None], stop: threading.Event) -> None:
    from watchfiles import Change, DefaultFilter, watch

    class ManifestEvents(DefaultFilter):
        def __call__(self, change: Change, path: str) -> bool:
            return not is_editor_temp(path) and super().__call__(change, path)

    for _burst in watch(
        *watch_targets(paths),
        watch_filter=ManifestEvents(),
        step=QUIET_MS,
        debounce=MAX_BURST_MS,
        stop_event=stop,
        raise_interrupt=False,
    ):
        on_event()
