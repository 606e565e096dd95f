"""jdbc-sink's writer thread (`jdbc.writer`): transactions run in order, and none after one that
failed (it would commit an offset past rows that are not in the table)."""

from __future__ import annotations

import threading
from functools import partial

import pytest

from reconciler.connectors.jdbc.writer import DEPTH, TransactionWriter


def record(ran: list[tuple[int, str]], number: int) -> None:
    ran.append((number, threading.current_thread().name))


def test_transactions_run_in_order_on_one_thread_and_drain_waits_for_them() -> None:
    ran: list[tuple[int, str]] = []
    writer = TransactionWriter()
    for number in range(3 * DEPTH):
        writer.submit(partial(record, ran, number))
    writer.drain()
    writer.close()
    assert [number for number, _ in ran] == list(range(3 * DEPTH))
    assert len({name for _, name in ran}) == 1 and ran[0][1] != threading.current_thread().name


def test_none_runs_after_a_failure_which_the_next_call_raises() -> None:
    ran: list[int] = []
    release = threading.Event()
    writer = TransactionWriter()

    def fail() -> None:
        release.wait()
        raise RuntimeError("COPY failed")

    writer.submit(lambda: ran.append(1))
    writer.submit(fail)
    writer.submit(lambda: ran.append(3))  # queued behind the failing one
    release.set()
    with pytest.raises(RuntimeError, match="COPY failed"):
        writer.drain()
    writer.close()
    assert ran == [1]
