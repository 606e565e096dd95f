"""Kafka restarts under a running `reconciler watch`, in the middle of a sink's batch.

A broker of its own (not the session's, which every other test shares), on a data directory it
starts again on, with its cluster id and port. `watch` runs a `file-sink`; once it has served a
first tick, a batch is paused half-way (the `sink.mid_write` failpoint, armed then by deleting
its marker), the broker is stopped under it, the batch resumed against no broker, and the
broker started again. `watch` must recover by itself (the time is
printed), `/readyz` must say 503 while Kafka is away and 200 after, and every record must be in
the files exactly once: 0 lost, 0 duplicated.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from confluent_kafka import Producer

from reconciler import failpoints
from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.kafka.settings import KafkaSettings, Topics
from loop_support import served_url, until
from loop_support import Running
from run_support import child_env, create_topic

FIRST = 50  # moved by the first tick, before the pause is armed
TOTAL = 3000
LATER = 500  # produced after the recovery: the loop still moves new records
RECOVERY_S = 240.0


@pytest.fixture
def own_broker(tmp_path: Path) -> Iterator[RunningBroker]:
    broker = start_broker(tmp_path / "broker-logs", data_dir=tmp_path / "kafka-data", quick=True)
    try:
        yield broker
    finally:
        broker.stop()


def sink(topic: str, out: Path) -> dict[str, Any]:
    return {
        "apiVersion": "reconciler.io/v1",
        "kind": "Connector",
        "metadata": {"name": "lines"},
        "spec": {"class": "file-sink", "tasksMax": 1, "state": "running",
                 "config": {"topics": topic, "path": str(out), "flush.records": 100}},
    }


def produce(bootstrap: str, topic: str, first: int, last: int) -> None:
    """Values first…last-1, by a producer gone when this returns."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in range(first, last):
        producer.produce(topic, b"%d" % i, b"%d" % i)
    assert producer.flush(60) == 0


def lines(out: Path) -> Counter[str]:
    """Each line of the sink's files, counted (temporary and superseded files left out)."""
    counted: Counter[str] = Counter()
    for file in sorted(out.rglob("*.txt")):
        if not any(part[0] in "._" for part in file.relative_to(out).parts):
            counted.update(file.read_text().splitlines())
    return counted


def readyz(http: httpx.Client) -> tuple[int, dict[str, Any]]:
    try:
        answer = http.get("/readyz")
    except httpx.HTTPError:
        return 0, {}
    return answer.status_code, answer.json()


@pytest.mark.timeout(900)
def test_watch_recovers_from_a_broker_restart_mid_batch_exactly_once(own_broker: RunningBroker, tmp_path: Path) -> None:
    group = "restarted"
    settings = KafkaSettings(bootstrap_servers=own_broker.bootstrap, group_id=group, topics=Topics.for_group(group),
                             timeout_s=20)
    topic, out, pauses = f"{group}.ids", tmp_path / "out", tmp_path / "pauses"
    pauses.mkdir()
    paused = pauses / "sink.mid_write.paused"
    paused.touch()  # disarmed until deleted
    create_topic(settings, topic, 2)
    produce(own_broker.bootstrap, topic, 0, FIRST)
    (tmp_path / "manifests").mkdir()
    (tmp_path / "manifests" / "lines.yaml").write_text(yaml.safe_dump(sink(topic, out)))
    env = child_env(**{failpoints.ENV_POINTS: "sink.mid_write", failpoints.ENV_PAUSE_DIR: str(pauses)})
    args = ["watch", str(tmp_path / "manifests"), "-v", "--interval", "2", "--worker-id", "restarted:1", "--timeout", "10",
            "--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=768m"]
    watch = Running(args, settings, env=env)
    try:
        with httpx.Client(base_url=served_url(watch), timeout=30) as http:
            until(lambda: readyz(http)[0] == 200 and sum(lines(out).values()) == FIRST, timeout_s=RECOVERY_S)
            paused.unlink()  # armed: the next batch that reads more than one chunk pauses
            produce(own_broker.bootstrap, topic, FIRST, TOTAL)
            until(paused.exists, timeout_s=RECOVERY_S)
            _restart_under_the_batch(own_broker, http, paused, out)
            produce(own_broker.bootstrap, topic, TOTAL, TOTAL + LATER)
            until(lambda: sum(lines(out).values()) >= TOTAL + LATER, timeout_s=RECOVERY_S)
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()
        (tmp_path / "watch.out").write_text(watch.output())  # what it said, for a failure's report
    written = lines(out)
    assert written == Counter(str(i) for i in range(TOTAL + LATER)), {
        "lost": sorted(set(map(str, range(TOTAL + LATER))) - set(written))[:20],
        "duplicated": sorted(line for line, n in written.items() if n > 1)[:20],
    }


def _restart_under_the_batch(broker: RunningBroker, http: httpx.Client, paused: Path, out: Path) -> None:
    """Stop Kafka under the paused batch, resume it against no broker, start Kafka again; the
    REST API says not ready while Kafka is away, ready once `watch` has recovered."""
    stopped = time.monotonic()
    broker.stop()  # its data directory stays: a data_dir the test gave
    paused.with_suffix(".resume").touch()  # the batch goes on, and meets no broker
    code, body = until(lambda: (answer := readyz(http))[0] == 503 and answer, timeout_s=RECOVERY_S)
    print(f"/readyz 503 {time.monotonic() - stopped:.1f}s after Kafka stopped: {body['checks']['broker']['detail']}")
    assert body["status"] == "not ready" and body["checks"]["broker"]["ok"] is False
    # Away long enough once the probe timed out (10 s): the resumed batch met no broker. No fixed
    # wait on top: the 5 s slept here did not make a tick fail either (one fails ~75 s after the stop).
    broker.start_again()
    back = time.monotonic()
    until(lambda: readyz(http)[0] == 200, timeout_s=RECOVERY_S)
    ready_s = time.monotonic() - back
    until(lambda: sum(lines(out).values()) >= TOTAL, timeout_s=RECOVERY_S)
    print(f"watch recovered by itself: /readyz 200 {ready_s:.1f}s and all {TOTAL} records written "
          f"{time.monotonic() - back:.1f}s after Kafka was back ({back - stopped:.1f}s away)")
