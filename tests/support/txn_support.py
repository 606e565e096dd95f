"""Shared by the tests that write transactions and then count what one batch read (no tests here)."""

from __future__ import annotations

from reconciler.kafka.io.consume import wait_until_stable
from reconciler.kafka.settings import KafkaSettings


def committed_visible(settings: KafkaSettings, topic: str) -> None:
    """Wait until `topic`'s last stable offset reaches its end: every transaction decided.

    commit_transaction and abort_transaction return once the coordinator has logged the
    decision; the markers reach the partitions a moment later (measured on the test broker: the
    LSO still lagged in half of the listings made right after the call returned, for up to
    ~60 ms). Until then a batch snapshots an end before the transaction and rightly reads only
    up to it (docs/runtime.md#offset-ranges), so a test that counts what one batch read waits
    for the broker first instead of racing it."""
    assert wait_until_stable(settings, [topic], settings.timeout_s) == [], f"{topic}: a transaction is still open"
