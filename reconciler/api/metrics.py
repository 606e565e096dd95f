"""`/metrics`: Prometheus metrics under the names Connect's JMX metrics get from Strimzi's
JMX-exporter rules, so existing dashboards and alerts work, and our own under `reconciler_`.

What each of Connect's names means for a batch worker: docs/rest.md#metrics-connects-names-for-a-batch-worker.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from reconciler.api.state import ApiState, Board, TickInfo
from reconciler.core.kinds import Kind
from reconciler.core.live import LiveState
from reconciler.render.connect_rest import connector_type, task_ids

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)
TASK_STATES = ("running", "paused", "failed", "unassigned", "restarting")
TASK = ["connector", "task"]


class Metrics:
    """One registry per server (never the global one): the loop records ticks here, and the
    rest is read from the board's snapshot at scrape time."""

    def __init__(self, board: Board) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.duration = Histogram(
            "reconciler_reconcile_duration_seconds", "Duration of a reconcile tick (apply, offsets requests, batch).",
            buckets=DURATION_BUCKETS, registry=self.registry,
        )
        self.outcomes = Counter(
            "reconciler_reconcile", "Reconcile ticks by outcome: succeeded, apply_failed, failed.",
            ["outcome"], registry=self.registry,
        )
        for outcome in ("succeeded", "apply_failed", "failed"):
            self.outcomes.labels(outcome)  # every outcome present from the start, at 0
        self.registry.register(SnapshotCollector(board))

    def record(self, tick: TickInfo) -> None:
        self.duration.observe(tick.duration_s)
        self.outcomes.labels(tick.outcome).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class SnapshotCollector(Collector):
    """Every other metric, computed from one snapshot per scrape."""

    def __init__(self, board: Board) -> None:
        self.board = board

    def collect(self) -> Iterator[Metric]:
        state = self.board.state
        yield from _ours(state)
        if state.live is not None:
            yield from _worker(state.live)
            yield from _connectors(state.live)
        yield from _tasks(state)


def _gauge(name: str, doc: str, value: float | None = None, labels: list[str] | None = None) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, value=value, labels=labels)


def _ours(state: ApiState) -> Iterator[Metric]:
    yield _gauge("reconciler_manifests_valid", "1 when the manifests on disk are valid.", float(state.manifests.valid))
    yield _gauge("reconciler_broker_reachable", "1 when the broker answered the last probe.", float(bool(state.broker.reachable)))
    if state.last_success_at is not None:
        yield _gauge(
            "reconciler_last_success_timestamp_seconds", "When the last successful reconcile finished.", state.last_success_at
        )
    yield _gauge("reconciler_uptime_seconds", "Seconds since the process started.", time.time() - state.started_at)
    if state.live is not None and state.live.last_batches:
        batches = _gauge("reconciler_connector_last_batch_timestamp_seconds",
                         "When the runtime last ran a batch of the connector's tasks.", labels=["connector"])
        for name, batch in sorted(state.live.last_batches.items()):
            batches.add_metric([name], batch.finished_at_ms / 1000)
        yield batches
    if state.live is not None and state.live.waiting:
        waiting = _gauge("reconciler_connector_waiting_since_timestamp_seconds",
                         "Since when the connector's tasks wait for the next batch (absent: they do not).",
                         labels=["connector"])
        for name, wait in sorted(state.live.waiting.items()):
            waiting.add_metric([name], wait.since_ms / 1000)
        yield waiting


def _worker(live: LiveState) -> Iterator[Metric]:
    existing = [c for _, c in sorted(live.connectors.items()) if c.exists]
    yield _gauge("kafka_connect_worker_connector_count", "The number of connectors run in this worker.", len(existing))
    yield _gauge("kafka_connect_worker_task_count", "The number of tasks run in this worker.",
                 sum(len(task_ids(c)) for c in existing))
    families = {
        kind: _gauge(f"kafka_connect_worker_connector_{kind}_task_count",
                     f"The number of {kind} tasks of the connector on the worker.", labels=["connector"])
        for kind in ("total", *TASK_STATES)
    }
    for connector in existing:
        states = [s.state.value.lower() for s in connector.task_statuses.values()]
        families["total"].add_metric([connector.name], len(task_ids(connector)))
        for kind in TASK_STATES:
            families[kind].add_metric([connector.name], states.count(kind))
    yield from families.values()


def _connectors(live: LiveState) -> Iterator[Metric]:
    status = _gauge("kafka_connect_connector_status", "The status of the connector.", labels=["connector", "status"])
    klass = _gauge("kafka_connect_connector_connector_class", "The name of the connector class.",
                   labels=["connector", "connector_class"])
    kind = _gauge("kafka_connect_connector_connector_type", "The type of the connector.", labels=["connector", "connector_type"])
    tasks = _gauge("kafka_connect_connector_task_status", "The status of the connector task.", labels=[*TASK, "status"])
    for name, connector in sorted(live.connectors.items()):
        if connector.config is None:  # deleted: like Java, no metrics for it, whatever statuses linger
            continue
        if connector.connector_status is not None:
            status.add_metric([name, connector.connector_status.state.value.lower()], 1)
        klass.add_metric([name, connector.config.get("connector.class") or ""], 1)
        kind.add_metric([name, connector_type(connector)], 1)
        for task, task_status in sorted(connector.task_statuses.items()):
            tasks.add_metric([name, str(task), task_status.state.value.lower()], 1)
    yield from (status, klass, kind, tasks)


def _tasks(state: ApiState) -> Iterator[Metric]:
    def counter(name: str, doc: str) -> CounterMetricFamily:
        return CounterMetricFamily(name, doc, labels=TASK)

    poll = counter("kafka_connect_source_task_source_record_poll", "Records polled by the source task.")
    write = counter("kafka_connect_source_task_source_record_write", "Records written to Kafka by the source task.")
    read = counter("kafka_connect_sink_task_sink_record_read", "Records read from Kafka by the sink task.")
    send = counter("kafka_connect_sink_task_sink_record_send", "Records handed to the sink task's write().")
    commits = counter("kafka_connect_sink_task_offset_commit_completion", "Offset commits the sink task completed.")
    lag = _gauge("kafka_connect_sink_task_sink_record_lag_max", "Records the sink task was behind when its last batch started.",
                 labels=TASK)
    errors = _gauge("kafka_connect_task_error_total_record_errors", "Failed batches of the task.", labels=TASK)
    failures = _gauge("kafka_connect_task_error_total_record_failures", "Failed batches of the task.", labels=TASK)
    records = counter("reconciler_task_records", "Records the task moved.")
    size = counter("reconciler_task_bytes", "Key and value bytes the task moved.")
    waits = counter("reconciler_task_waits", "Batches the task waited out: a cluster its clients could not reach, "
                    "or an open transaction over the source offsets.")
    for (name, task), totals in sorted(state.totals.items()):
        labels = [name, str(task)]
        if totals.kind == Kind.SOURCE:
            poll.add_metric(labels, totals.records)
            write.add_metric(labels, totals.records)
        else:
            read.add_metric(labels, totals.records)
            send.add_metric(labels, totals.records)
            commits.add_metric(labels, totals.commits)
            if totals.lag is not None:
                lag.add_metric(labels, totals.lag)
        errors.add_metric(labels, totals.failures)
        failures.add_metric(labels, totals.failures)
        records.add_metric(labels, totals.records)
        size.add_metric(labels, totals.bytes)
        waits.add_metric(labels, totals.waits)
    yield from (poll, write, read, send, commits, lag, errors, failures, records, size, waits)

