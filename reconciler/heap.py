"""Building large object graphs (a manifest tree, the live state, a batch of records) quickly.

CPython's cyclic collector runs every 700 container allocations, and its older generations walk
the whole heap. Building 10,000 connectors' worth of objects that all stay alive triggers
collections that find nothing, over and over (measured: composing 10,000 manifests 1.7 s →
0.6 s without them; ~10% of reading the live state; ~20% of a sink partition's CPU, where
reference counting frees every message anyway). So `building()` pauses collection.

Re-enabling is not free either: everything allocated meanwhile sits in the youngest generation,
and the first allocation after re-enabling walks all of it (0.3–0.4 s after loading 10,000
manifests). A one-shot command (`validate`, `plan`, `apply`, `status`, `snapshot`, `offsets`)
keeps what it built until it exits, so it runs inside `one_shot()` and the objects are frozen
instead (`gc.freeze`): taken out of the collector's sight, still freed by reference counting.
A long-running process (`run`, `watch`) does not freeze: a reference cycle frozen there would
outlive its use for good. It moves what it built to the oldest generation instead, in one step
(`gc.freeze()` then `gc.unfreeze()` splice the lists, walking nothing): the collector's young
generations never walk it, its full collections still do (measured: reading 10,000 connectors'
live state, bench/state_read.py, 0.46–0.48 → 0.41 CPU-seconds, the first allocations after it
no longer walking ~0.5 M young objects).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

_one_shot = False


@contextlib.contextmanager
def one_shot(enabled: bool = True) -> Iterator[None]:
    """Within: the process exits once this command is done (the CLI's short commands)."""
    global _one_shot
    previous, _one_shot = _one_shot, enabled
    try:
        yield
    finally:
        _one_shot = previous


@contextlib.contextmanager
def building() -> Iterator[None]:
    """No cyclic collection inside; the objects built are frozen after it in a one-shot process,
    moved to the oldest generation in a long-running one."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    except BaseException:
        if enabled:  # a failure's traceback holds cycles: never freeze those
            gc.enable()
        raise
    if enabled:
        if _one_shot:
            gc.freeze()
        elif gc.get_freeze_count() == 0:  # (never thaw what a one-shot command froze)
            gc.freeze()
            gc.unfreeze()  # all of it into the oldest generation: see the module's doc
        gc.enable()
