"""Consumers kept for ListOffsets questions (`KeptListers`), for a process that asks every tick.

A `watch` asks for end offsets several times a tick with nothing to move: whether a transaction
is open in the offsets topic (`runtime.source.committed.open_transactions`, two isolation
levels) and whether a commit's markers have landed (`consume.wait_until_stable`). A new
librdkafka client per question costs its threads, a bootstrap connection, ApiVersions and a
metadata request, and its close joins those threads: four of them were about a third of an idle
tick's CPU in the driver (bench/watch_idle.py, docs/performance.md#many-connectors-idle-connectors).

A kept consumer only asks (no group, no fetch). It is taken out for one question and handed
back after an answer, so two threads never share one; one whose question failed is closed
instead, so the retry (`consume._listed`) looks the leaders up afresh with a new client, as
it does without keeping: a consumer kept watching a new topic was measured answering "not
leader" for minutes (bench/h2h_sides.py).
"""

from __future__ import annotations

import threading
from typing import Any

from reconciler.kafka.io.client import new_consumer
from reconciler.kafka.settings import KafkaSettings

_Key = tuple[str, tuple[tuple[str, str], ...], str]


class KeptListers:
    """At most one idle consumer per (cluster settings, isolation level); `close` ends them."""

    def __init__(self) -> None:
        self._idle: dict[_Key, Any] = {}
        self._lock = threading.Lock()
        self._closed = False

    def take(self, settings: KafkaSettings, isolation_level: str) -> Any:
        """A consumer at `isolation_level` for one question: the kept one, or a new one."""
        with self._lock:
            consumer = self._idle.pop(_key(settings, isolation_level), None)
        if consumer is None:
            consumer = new_consumer(settings, None, **{"isolation.level": isolation_level})
        return consumer

    def give_back(self, settings: KafkaSettings, isolation_level: str, consumer: Any) -> None:
        """Keep `consumer`, which just answered, for the next question (closed when one is
        kept already, or after `close`)."""
        key = _key(settings, isolation_level)
        with self._lock:
            if not self._closed and key not in self._idle:
                self._idle[key] = consumer
                return
        consumer.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = list(self._idle.values()), {}, True
        for consumer in idle:
            consumer.close()


def _key(settings: KafkaSettings, isolation_level: str) -> _Key:
    return settings.bootstrap_servers, tuple(sorted(settings.client_config.items())), isolation_level
