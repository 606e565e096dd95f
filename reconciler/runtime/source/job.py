"""One batch of source connectors: each task polls and produces from its own Spark partition.

Exactly-once as KIP-618 does it (docs/runtime.md#source-tasks): a task produces its records and
its source offsets (Connect's offsets-topic key `["<name>",{partition}]`, murmur2-placed) in
ONE Kafka transaction with `transactional.id = ${group}-${connector}-${task}`. Initialising
that id fences any older producer with it — a zombie task from a crashed or slow run — and
aborts its open transaction, so of two runs of the same task at most one commits.

Before the job the driver takes over the tasks' transactional ids, checks for open
transactions and reads the committed offsets (`driver`); the job hands each task all of
its connector's offsets. What a task does in its Spark partition is `task`.

Many connectors' tasks share one job (`plan_source` per connector, then `run_sources` over all
the plans): each task is one partition of it, and its outcome is its own partition's.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reconciler.connectors.api import ConnectorError, SourceConnector, SourceTask
from reconciler.connectors.registry import load_connector
from reconciler.kafka.io.consume import wait_until_stable
from reconciler.kafka.io.offset_stores import OffsetsStore
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.source.committed import STABLE_WAIT_S, CommittedOffsets
from reconciler.runtime.source.task import (
    DEFAULT_BATCH_RECORDS,
    SourceTaskResult,
    SourceTaskWork,
    source_partition,
)
from reconciler.runtime.spark.jobs import PartitionFailed, run_partitions
from reconciler.runtime.batch.tasks import TaskOutcome, TaskWork
from reconciler.runtime.batch.task_logs import for_connector

if TYPE_CHECKING:
    from reconciler.runtime.spark.handle import Spark

LOG = logging.getLogger(__name__)

# See `_per_partition`.
PACKED_SPREAD = 8
TASKS_PER_PARTITION = 16


@dataclass(frozen=True, kw_only=True)
class SourcePlan:
    """One source connector's share of a batch: its works, and a partition for each task that
    has something to poll (in works order); a task left out ran nothing and moved nothing."""

    name: str
    works: tuple[TaskWork, ...]
    items: tuple[SourceTaskWork, ...]


def plan_source(
    settings: KafkaSettings,
    works: Sequence[TaskWork],
    committed: CommittedOffsets,
    *,
    stores: Sequence[OffsetsStore] = (),
    max_records: int = DEFAULT_BATCH_RECORDS,
    reread: bool = False,
) -> SourcePlan:
    """What every task in `works` (all of one source connector) runs in this batch.

    `stores`: the connector's offsets stores, primary first (default: the worker's topic). The
    tasks produce on the primary store's cluster. `reread`: each task reads its offsets again
    after its fence rather than trust `committed` (`source.committed`)."""
    name = works[0].connector
    connector = load_connector(works[0].connector_class)
    if not issubclass(connector, SourceConnector):
        raise ConnectorError(f"{works[0].connector_class!r} is not a source connector")
    # A task with nothing to poll (its task class says so from the offsets alone) gets no Spark
    # partition, and a connector whose tasks all have nothing no job: an idle connector is
    # carried for the cost of reading its offsets (issue 30, bench/many_connectors.py).
    idle = {w.task_id for w in works if _exhausted(connector.task_class, w, committed)}
    if len(idle) == len(works):
        LOG.debug("source %s: nothing to poll, no partition", name)
        return SourcePlan(name=name, works=tuple(works), items=())
    primary = stores[0] if stores else OffsetsStore(settings, settings.topics.offsets)
    secondary = stores[1] if len(stores) > 1 else None
    # The task's settings reach the primary store's cluster and name its topic as `offsets`.
    task_settings = dataclasses.replace(
        primary.settings, topics=dataclasses.replace(primary.settings.topics, offsets=primary.topic)
    )
    logs = for_connector([works[0].connector_config, *(w.task_config for w in works)])
    items = tuple(
        SourceTaskWork(
            settings=task_settings, connector=w.connector, connector_class=w.connector_class, task_id=w.task_id,
            task_config=dict(w.task_config), committed=committed, max_records=max_records, secondary=secondary,
            logging=logs, reread=reread,
        )
        for w in works
        if w.task_id not in idle
    )
    return SourcePlan(name=name, works=tuple(works), items=items)


def run_sources(spark: Callable[[], Spark], plans: Sequence[SourcePlan], *, pool: str) -> list[TaskOutcome]:
    """The tasks of every plan as the partitions of ONE Spark job (no job when none has
    anything to poll); one outcome per work, plan after plan.

    A task's failure is its partition's result (`PartitionFailed` or its own error), so it
    fails that task alone. Packing matters with many small connectors: a job costs the driver
    and the scheduler far more than a partition does (bench/many_connectors.py). Should the job
    itself fail (a Python worker killed, say), it raises, and every packed task's outcome is
    unknown: the caller runs them again after fencing and reading their offsets anew."""
    items = [item for plan in plans for item in plan.items]
    results: list[SourceTaskResult | PartitionFailed] = []
    if items:
        names = sorted({item.connector for item in items})
        description = f"source {names[0]}" if len(names) == 1 else f"sources: {len(names)} connectors"
        packed = len(items) > 1
        if packed:  # the driver waits for the commits' markers once, after the job (`_wait_readable`)
            items = [dataclasses.replace(item, wait_readable=False) for item in items]
        started = time.monotonic()
        results = run_partitions(
            spark(), items, source_partition, pool=pool, description=description, per_partition=_per_partition(len(items))
        )
        if packed:
            _wait_readable(items, results)
        seconds = ", ".join(f"{r.seconds:.2f}" for r in results[:20] if isinstance(r, SourceTaskResult))
        LOG.debug("%s: job of %d task(s) %.3fs (tasks %s s)", description, len(items), time.monotonic() - started, seconds)
    outcomes, position = [], 0
    for plan in plans:
        outcomes += _outcomes(plan, results[position:position + len(plan.items)])
        position += len(plan.items)
    return outcomes


def _wait_readable(items: Sequence[SourceTaskWork], results: Sequence[SourceTaskResult | PartitionFailed]) -> None:
    """What each task would wait for after its commit (`task.TransactionalBatch._wait_until_readable`),
    once for the whole job: until read_committed readers see every topic the tasks committed to,
    and their offsets topics, per cluster. A task's own wait costs it four consumers' starts;
    a thousand tasks' waits cost more than their records."""
    clusters: dict[str, tuple[KafkaSettings, set[str]]] = {}
    for item, result in zip(items, results, strict=True):
        if isinstance(result, SourceTaskResult) and result.error is None:
            _, topics = clusters.setdefault(item.settings.bootstrap_servers, (item.settings, set()))
            topics.update((*result.topics, item.settings.topics.offsets))
    for settings, topics in clusters.values():
        try:
            late = wait_until_stable(settings, sorted(topics), STABLE_WAIT_S)
        except Exception:  # the records are committed either way; only the next reader may lag
            LOG.info("sources: could not check that their commits are readable yet", exc_info=True)
            continue
        if late:
            LOG.info("sources: committed, but %s still hold(s) an open transaction of another producer", ", ".join(late))


def _per_partition(count: int) -> int:
    """How many tasks share a partition, side by side in threads. A small task's batch is mostly
    waits on the broker (a producer's start, InitProducerId, the commit, the wait for its
    markers): with one task per partition, a 2-core machine waited on two at a time. Up to
    `PACKED_SPREAD` partitions keep one task each, as before (so does a lone big task); beyond
    that, tasks share partitions, at most `TASKS_PER_PARTITION` each."""
    return max(1, min(TASKS_PER_PARTITION, -(-count // PACKED_SPREAD)))


def _exhausted(task_class: type[SourceTask], work: TaskWork, committed: CommittedOffsets) -> bool:
    """The task class's word that the task has nothing to poll; a check that raises says no."""
    try:
        return bool(task_class.exhausted(work.task_config, committed.offsets))
    except Exception:
        LOG.debug("source %s: task %d's exhausted() raised; it is polled", work.connector, work.task_id, exc_info=True)
        return False


def _outcomes(plan: SourcePlan, results: Sequence[SourceTaskResult | PartitionFailed]) -> list[TaskOutcome]:
    """One outcome per work; a task without a partition had nothing to poll."""
    by_task = {item.task_id: result for item, result in zip(plan.items, results, strict=True)}
    outcomes = []
    for work in plan.works:
        result = by_task.get(work.task_id)
        if result is None:
            outcomes.append(TaskOutcome(connector=plan.name, task_id=work.task_id, records=0, error=None))
        elif isinstance(result, PartitionFailed):
            outcomes.append(TaskOutcome(connector=plan.name, task_id=work.task_id, records=0, error=result.trace))
        else:
            outcomes.append(
                TaskOutcome(
                    connector=plan.name, task_id=work.task_id, records=result.records, error=result.error,
                    bytes=result.bytes, topics=result.topics,
                )
            )
    return outcomes
