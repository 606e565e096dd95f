"""One open source transaction at a time, for brokers that lose overlapping commits.

Tansu 0.6.0 (the test broker) resolves a transaction commit only when every other open
transaction that wrote to the same partitions is itself being committed, and it races when two
such commits arrive together: an end-transaction marker written after the other commit already
settled it re-opens the range, and the partition's last stable offset then stays below its end
for good. read_committed readers stop there, so the offsets topic looks stale forever and the
stable-offsets gate (`source_job.wait_for_stable_offsets`) keeps every source out. Measured
with three transactional producers writing the same partitions concurrently: stuck by round
7–10 of 25; with their transactions serialised, never (three runs each,
`tests/integration/test_serial_transactions.py`). Serialising only the commits is not enough:
a third open transaction still leaves one commit unresolved (measured with four producers).

Apache Kafka has no such problem, so tasks run their transactions concurrently there. On Tansu
the source tasks take an exclusive file lock from their first record to their commit: Spark's
local Python workers are processes on this machine, and the OS drops the lock of a killed
worker. (Tasks on several machines are not serialised; Tansu is a local test broker here.)
"""

from __future__ import annotations

import fcntl
import hashlib
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler.kafka.settings import KafkaSettings


def lock_key(settings: KafkaSettings) -> str:
    """Tasks writing to the same cluster share a lock; other clusters are independent."""
    return settings.bootstrap_servers


def lock_path(key: str) -> Path:
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"reconciler-transactions-{digest}.lock"


@contextmanager
def one_at_a_time(key: str | None) -> Iterator[None]:
    """Hold the cluster's transaction lock for the block; `None` = no lock (Apache Kafka)."""
    if key is None:
        yield
        return
    with lock_path(key).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
