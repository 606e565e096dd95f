"""Waiting for a state by polling it, with a deadline: the one loop the tests' waits use, so no
test sleeps a fixed time for something it could ask about."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

WAIT_S = 60.0


def until(check: Callable[[], Any], timeout_s: float = WAIT_S, every_s: float = 0.1, *,
          what: str = "the condition") -> Any:
    """`check()`'s first truthy result, asked every `every_s`; fails naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        time.sleep(every_s)


def eventually(check: Callable[[], Any], timeout_s: float = WAIT_S, every_s: float = 0.5) -> Any:
    """`check()`'s result once it stops raising AssertionError; its last one after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(every_s)
