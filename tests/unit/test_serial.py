"""The transaction lock of reconciler.runtime.serial excludes other processes, and is a no-op without a key."""

from __future__ import annotations

import multiprocessing
import time
import uuid
from pathlib import Path

from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime import serial


def _hold(key: str, log: str, hold_s: float) -> None:
    with serial.one_at_a_time(key):
        started = time.monotonic()
        time.sleep(hold_s)
        with open(log, "a") as out:
            out.write(f"{started} {time.monotonic()}\n")


def test_lock_excludes_other_processes(tmp_path: Path) -> None:
    key, log = f"test-{uuid.uuid4().hex}", tmp_path / "intervals"
    workers = [multiprocessing.Process(target=_hold, args=(key, str(log), 0.2)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    intervals = sorted(tuple(map(float, line.split())) for line in log.read_text().splitlines())
    assert len(intervals) == 3
    for (_, end), (start, _) in zip(intervals, intervals[1:], strict=False):
        assert start >= end  # each held the lock only after the previous one let go


def test_a_killed_holder_releases_the_lock(tmp_path: Path) -> None:
    key = f"test-{uuid.uuid4().hex}"
    holder = multiprocessing.Process(target=_hold, args=(key, str(tmp_path / "log"), 60))
    holder.start()
    time.sleep(0.5)
    holder.kill()
    holder.join(10)
    started = time.monotonic()
    with serial.one_at_a_time(key):
        assert time.monotonic() - started < 5


def test_no_key_no_lock_file() -> None:
    key = f"test-{uuid.uuid4().hex}"
    with serial.one_at_a_time(None):
        pass
    assert not serial.lock_path(key).exists()


def test_one_lock_per_cluster() -> None:
    a = serial.lock_key(KafkaSettings(bootstrap_servers="a:9092"))
    b = serial.lock_key(KafkaSettings(bootstrap_servers="b:9092"))
    assert serial.lock_path(a) != serial.lock_path(b)
    assert serial.lock_path(a) == serial.lock_path(serial.lock_key(KafkaSettings(bootstrap_servers="a:9092")))
