"""Debian's `kcat` (`apt-get install -y kcat`), the reference client of the benchmarks.

It is run as Debian ships it, on the system librdkafka (2.0), against Apache Kafka: the plain C
client doing the least work a Kafka client can (docs/real-components.md#kcat).

It is given the librdkafka settings our own clients use on the same path, where this
librdkafka knows them, so that both sides pay the same waits and batch alike; neither side is
tuned for the benchmark:
- consuming: `fetch.wait.max.ms` (reconciler.kafka.io.client.consumer_config). A read to the end
  waits for the broker to answer an empty fetch, which it holds this long; with librdkafka's
  default (500 ms) kcat would pay half a second per read that our readers do not;
- producing: the batching settings of our source tasks (reconciler.runtime.source.job).
"""

from __future__ import annotations

import shutil

from reconciler.kafka.io.client import consumer_config
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.source.task import PRODUCER_TUNING

CONSUMER_KEYS = ("fetch.wait.max.ms",)
PRODUCER_KEYS = ("linger.ms", "batch.num.messages", "batch.size", "queue.buffering.max.messages",
                 "queue.buffering.max.kbytes")


def kcat_binary() -> str:
    """The path of kcat (or its old name, kafkacat); exits with how to install it if missing."""
    found = shutil.which("kcat") or shutil.which("kafkacat")
    if found is None:
        raise SystemExit("kcat not found: install it with `apt-get install -y kcat` (Debian/Ubuntu)")
    return found


def consumer_flags() -> list[str]:
    conf = consumer_config(KafkaSettings())
    return [flag for key in CONSUMER_KEYS for flag in ("-X", f"{key}={conf[key]}")]


def producer_flags() -> list[str]:
    return [flag for key in PRODUCER_KEYS for flag in ("-X", f"{key}={PRODUCER_TUNING[key]}")]
