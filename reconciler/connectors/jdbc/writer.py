"""jdbc-sink's transactions, run one at a time on a thread of their own while the task reads and
decodes the next records: the database parses and stores a COPY on its own core while this
process waits for it, so the two overlap instead of taking turns (docs/performance.md, jdbc-sink).

Order is what keeps the sink exactly once: a partition's transactions commit in the order they
were given, each with the offset after its last record, and once one fails none after it runs
(a later one would commit an offset past rows that are not in the table). The failure is raised
to the task at its next `submit` or `drain`. Few transactions wait (`DEPTH`), so reading stays at
most that far ahead of the database and the memory they hold stays small.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Final

DEPTH: Final = 4  # transactions submitted and not done, the running one included


class TransactionWriter:
    """Runs `submit`ted transactions in order on one thread; `drain` waits for them all."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: deque[Future[None]] = deque()
        self._failed = False

    def submit(self, transaction: Callable[[], None]) -> None:
        """Queue `transaction` behind the others, once fewer than `DEPTH` are waiting; raises
        the error of one that failed before."""
        while self._pending and (len(self._pending) >= DEPTH or self._pending[0].done()):
            self._pending.popleft().result()
        if self._pool is None:  # a thread only for a task that writes
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jdbc-sink-writer")
        self._pending.append(self._pool.submit(self._run, transaction))

    def drain(self) -> None:
        """Wait until every submitted transaction ran; raises the first failure."""
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        """Wait for what was submitted (each transaction commits whole or not at all, so letting
        them finish keeps the progress), then end the thread. Raises nothing: `drain` reports."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._pending.clear()

    def _run(self, transaction: Callable[[], None]) -> None:
        if self._failed:
            raise SkippedAfterFailure("an earlier transaction of this task failed")
        try:
            transaction()
        except BaseException:
            self._failed = True
            raise


class SkippedAfterFailure(Exception):
    """Not run: a transaction submitted before it failed (that one's error is raised first)."""
