"""Offsets of a connector a Kafka Connect worker runs: wait until the worker has stopped it.

Our ticks never run such a connector's tasks (`core.kinds`), so the proof that none runs any
more comes from the worker, through the status topic: Java writes the connector STOPPED and
removes its task statuses once the zero-task commit and the STOPPED target state took effect.
"""

from __future__ import annotations

import time

from reconciler.kafka.io.store import LiveStore, TopicsMode
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import tasks_gone

CONNECT_WAITING_MESSAGE = (
    "the connector is stopped; the Kafka Connect worker running it has not reported it STOPPED with "
    "no tasks yet, so its offsets are not changed: run `reconciler apply` again once it has"
)
WORKER_POLL_S = 0.25


def connect_worker_stopped(settings: KafkaSettings, name: str) -> bool:
    """Whether a Connect worker reports `name` STOPPED with no task status left, within the
    timeout. That is what Java writes once the zero-task commit and the STOPPED target state
    took effect (`DistributedHerder.modifyConnectorOffsetsChecks` asks the same of its own
    state: STOPPED, zero tasks, no rebalance pending)."""
    deadline = time.monotonic() + settings.timeout_s
    with LiveStore(settings, topics=TopicsMode.PREPARED) as store:  # each poll reads what was written since the last
        while True:
            connector = store.read(task_configs=False).live.connector(name)
            if connector is not None and tasks_gone(connector):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(WORKER_POLL_S)
