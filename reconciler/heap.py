"""Building large object graphs (a manifest tree, the live state, a batch of records) quickly.

`building()` pauses the cyclic collector while they are built; `one_shot()` freezes what a
one-shot command built, and a long-running process moves it to the oldest generation instead.
Why, and what each measured: docs/performance.md#building-large-object-graphs.
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
