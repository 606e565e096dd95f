"""One batch of a source connector: each task polls and produces from its own Spark partition.

Exactly-once as KIP-618 does it (docs/runtime.md#source-tasks): a task produces its records and
its source offsets (Connect's offsets-topic key `["<name>",{partition}]`, murmur2-placed) in
ONE Kafka transaction with `transactional.id = ${group}-${connector}-${task}`. Initialising
that id fences any older producer with it — a zombie task from a crashed or slow run — and
aborts its open transaction, so of two runs of the same task at most one commits.

Before the job the driver takes over the tasks' transactional ids, checks for open
transactions and reads the committed offsets (`driver`); the job hands each task all of
its connector's offsets. What a task does in its Spark partition is `task`.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from reconciler.connectors.api import ConnectorError, SourceConnector, SourceTask
from reconciler.connectors.registry import load_connector
from reconciler.kafka.io.offset_stores import OffsetsStore
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.source.task import (
    DEFAULT_BATCH_RECORDS,
    CommittedOffsets,
    SourceTaskResult,
    SourceTaskWork,
    source_partition,
)
from reconciler.runtime.spark.jobs import PartitionFailed, run_partitions
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork
from reconciler.runtime.batch.task_logs import for_connector

if TYPE_CHECKING:
    from reconciler.runtime.spark.session import SparkSession

LOG = logging.getLogger(__name__)


def run_source(
    session: Callable[[], SparkSession],
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    committed: CommittedOffsets,
    *,
    pool: str,
    stores: Sequence[OffsetsStore] = (),
    max_records: int = DEFAULT_BATCH_RECORDS,
) -> list[TaskOutcome]:
    """One batch of every task in `works` (all of one source connector); one outcome per work.

    `session` is called only when a task has something to poll (no Spark for an idle source).
    `stores`: the connector's offsets stores, primary first (default: the worker's topic). The
    tasks produce on the primary store's cluster."""
    name = works[0].connector
    connector = load_connector(works[0].connector_class)
    if not issubclass(connector, SourceConnector):
        raise ConnectorError(f"{works[0].connector_class!r} is not a source connector")
    # A task with nothing to poll (its task class says so from the offsets alone) gets no Spark
    # partition, and a connector whose tasks all have nothing no job: an idle connector is
    # carried for the cost of reading its offsets (issue 30, bench/many_connectors.py).
    idle = {w.task_id for w in works if _exhausted(connector.task_class, w, committed)}
    if len(idle) == len(works):
        LOG.debug("source %s: nothing to poll, no job", name)
        return [TaskOutcome(connector=name, task_id=w.task_id, records=0, error=None) for w in works]
    primary = stores[0] if stores else OffsetsStore(settings, settings.topics.offsets)
    secondary = stores[1] if len(stores) > 1 else None
    # The task's settings reach the primary store's cluster and name its topic as `offsets`.
    task_settings = dataclasses.replace(
        primary.settings, topics=dataclasses.replace(primary.settings.topics, offsets=primary.topic)
    )
    logs = for_connector([works[0].connector_config, *(w.task_config for w in works)])
    items = [
        SourceTaskWork(
            settings=task_settings, connector=w.connector, connector_class=w.connector_class, task_id=w.task_id,
            task_config=dict(w.task_config), committed=committed, max_records=max_records, secondary=secondary,
            logging=logs,
        )
        for w in works
        if w.task_id not in idle
    ]
    started = time.monotonic()
    ran = iter(run_partitions(session(), items, source_partition, pool=pool, description=f"source {name}"))
    results = [None if w.task_id in idle else next(ran) for w in works]
    seconds = ", ".join(f"{r.seconds:.2f}" for r in results if isinstance(r, SourceTaskResult))
    LOG.debug("source %s: job %.3fs (tasks %s s)", name, time.monotonic() - started, seconds)
    return _outcomes(name, works, results)


def _exhausted(task_class: type[SourceTask], work: TaskWork, committed: CommittedOffsets) -> bool:
    """The task class's word that the task has nothing to poll; a check that raises says no."""
    try:
        return bool(task_class.exhausted(work.task_config, committed.offsets))
    except Exception:
        LOG.debug("source %s: task %d's exhausted() raised; it is polled", work.connector, work.task_id, exc_info=True)
        return False


def _outcomes(
    name: str, works: Sequence[TaskWork], results: Sequence[SourceTaskResult | PartitionFailed | None]
) -> list[TaskOutcome]:
    """One outcome per work; None: the task had nothing to poll and ran no partition."""
    outcomes = []
    for work, result in zip(works, results, strict=True):
        if result is None:
            outcomes.append(TaskOutcome(connector=name, task_id=work.task_id, records=0, error=None))
        elif isinstance(result, PartitionFailed):
            outcomes.append(TaskOutcome(connector=name, task_id=work.task_id, records=0, error=result.trace))
        else:
            outcomes.append(
                TaskOutcome(
                    connector=name, task_id=work.task_id, records=result.records, error=result.error,
                    bytes=result.bytes, topics=result.topics,
                )
            )
    return outcomes
