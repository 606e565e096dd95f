"""One declared offsets request (KIP-875) executed step by step, resumable after a crash at any
step: `RequestExecution`. The steps and their records are described in `reconciler.offsets.model`;
which requests run, when and how far (a tick runs them in full, `apply` mostly only stops the
connector) is the use case's business, `reconciler.app.offsets`, which also claims the
connector's transactional id and reads the topics before an execution starts.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from reconciler import failpoints
from reconciler.connectors.api import OffsetsRefused, SinkConnector, SourceConnector, partition_key
from reconciler.connectors.offsets_check import hook_offsets
from reconciler.connectors.registry import UnknownConnector, load_connector
from reconciler.core.live import ConnectTargetState, LiveConnector, RequestKind
from reconciler.core.models import DesiredConnector, OffsetsAction, OffsetsRequest, TargetState
from reconciler.core.normalize import connector_properties, to_connect_state
from reconciler.core.plan import OffsetsStepKind
from reconciler.core.transitions import offsets_modifiable
from reconciler.errors import ReconcilerError
from reconciler.failpoints import Failpoint
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Record
from reconciler.kafka.io.admin import ensure_offsets_topic
from reconciler.kafka.io.config_providers import resolved_properties
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.kafka.io.overrides import ADMIN, PRODUCER, client_settings, cluster_key, same_cluster
from reconciler.kafka.io.produce import fence_source_tasks
from reconciler.kafka.replay.topics import StoreView
from reconciler.kafka.settings import KafkaSettings
from reconciler.logs import connector_context
from reconciler.offsets import model, sink
from reconciler.offsets.model import (
    CHANGED,
    SNAPSHOT,
    STOPPED,
    OffsetsOutcome,
    OutcomeStatus,
    change_step,
    not_found_message,
    progress_record,
    resume_point,
    sink_change,
    sink_offsets_from_body,
    source_targets,
    success_message,
)
from reconciler.offsets.sink import group_offsets
from reconciler.offsets.source import confirm_reset, read_source_offsets
from reconciler.offsets.worker_stop import CONNECT_WAITING_MESSAGE
from reconciler.offsets.writer import OffsetsWriter, Placed

if TYPE_CHECKING:
    from reconciler.offsets.source import SourceOffsets, Write

LOG = logging.getLogger(__name__)

WAITING_MESSAGE = (
    "the connector is stopped; its offsets change runs at the start of the next `reconciler run` tick, "
    "when none of its tasks can be running"
)


def outcome_of(
    name: str,
    request: OffsetsRequest,
    status: OutcomeStatus,
    message: str,
    steps: Sequence[OffsetsStepKind] = (),
    confirmed: bool | None = None,
    records_written: int = 0,
) -> OffsetsOutcome:
    return OffsetsOutcome(
        connector=name,
        request_id=request.id,
        action=request.action,
        status=status,
        message=message,
        steps=tuple(steps),
        confirmed=confirmed,
        records_written=records_written,
    )


class Stop(Exception):
    """Ends a request early with an outcome (refused by the connector, not found…)."""

    def __init__(self, status: OutcomeStatus, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RequestExecution:
    """One run of one request, from wherever its progress record says it stopped."""

    def __init__(
        self,
        settings: KafkaSettings,
        writer: OffsetsWriter,
        desired: DesiredConnector,
        request: OffsetsRequest,
        state: StoreView,
        now_ms: Callable[[], int],
    ) -> None:
        self.settings, self.writer, self.desired, self.request = settings, writer, desired, request
        self.name = desired.name
        self.state = state
        self.now_ms = now_ms
        self.config = resolved_properties(connector_properties(desired))  # its clients use the resolved values
        self.sink = desired.is_sink
        self.progress = state.progress.get(self.name)
        self.done = resume_point(self.progress, request.id)
        self.steps: list[OffsetsStepKind] = []
        self.written_elsewhere = 0  # records committed by writers to other clusters (`_change_source`)

    def run(self, tasks_stopped: bool, worker_stopped: Callable[[], bool] | None = None) -> OffsetsOutcome:
        """`worker_stopped`: for a connector a Connect worker runs, waits until it reports the
        connector stopped (False when it did not in time)."""
        if self.state.live.is_applied(self.name, RequestKind.OFFSETS, self.request.id):
            return self._result("already-applied", "the request was applied earlier")
        connector = self.state.live.connector(self.name)
        if connector is None or not connector.exists:
            raise Stop("failed", not_found_message(self.name))
        self._stop(connector)
        if not tasks_stopped and worker_stopped is not None:
            if not worker_stopped():
                return self._result("waiting", CONNECT_WAITING_MESSAGE)
        elif not tasks_stopped:
            return self._result("waiting", WAITING_MESSAGE)
        source = None if self.sink else self._fence_and_read(connector)
        snapshot = self._snapshot(source)
        if self.done < CHANGED:
            confirmed = self._hook(snapshot)
            failpoints.hit(Failpoint.OFFSETS_AFTER_HOOK)
            self._change(snapshot, source, confirmed)
        else:
            confirmed = bool(self.progress and self.progress.confirmed)
        self._return_and_record()
        return self._result("applied", success_message(self.request.action, confirmed), confirmed)

    def _result(self, status: OutcomeStatus, message: str, confirmed: bool | None = None) -> OffsetsOutcome:
        return outcome_of(self.name, self.request, status, message, self.steps, confirmed, self.written)

    @property
    def written(self) -> int:
        """Records this run committed so far, whatever ends it (a refusal after the stop step too)."""
        return self.writer.written + self.written_elsewhere

    # --- stop ------------------------------------------------------------------------------------

    def _stop(self, connector: LiveConnector) -> None:
        """Zero-task commit, then STOPPED (docs/state-machine.md#stopping-a-connector): a crash in
        between never leaves stopped-with-tasks."""
        records: list[Record] = []
        if not offsets_modifiable(connector):
            records += [rec.commit_record(self.name, 0), rec.target_state_record(self.name, ConnectTargetState.STOPPED)]
        if records and self.done < STOPPED:
            records.append(progress_record(self.name, self.request.id, OffsetsStepKind.STOP))
        if records:
            self.writer.write_records(records)
            self.steps.append(OffsetsStepKind.STOP)
            failpoints.hit(Failpoint.OFFSETS_AFTER_STOP)

    # --- snapshot --------------------------------------------------------------------------------

    def _fence_and_read(self, connector: LiveConnector) -> SourceOffsets:
        """KIP-618: fence every task producer the connector may have had, then read its offsets
        (after fencing, so no zombie can commit offsets behind our back)."""
        count = max(connector.task_count or 0, len(connector.task_configs), self.desired.spec.tasksMax)
        # The task producers live on the cluster the connector produces to.
        fence_source_tasks(client_settings(self.settings, self.config, PRODUCER), self.name, count)
        return read_source_offsets(self.settings, self.name, self.config)

    def _snapshot(self, source: SourceOffsets | None) -> list[dict[str, Any]]:
        """The offsets before the change, recorded once per request (a resumed request keeps it)."""
        kept = self.state.snapshot(self.name, self.request.id)
        if self.done >= SNAPSHOT and kept is not None:
            return kept
        # What the runtime would resume from (not Java's GET view, which reads an offset under
        # another spelling as null): a rollback must restore what the tasks used.
        body = source.resume_body() if source is not None else self._sink_body()
        self.writer.write_records(
            [
                own.offsets_snapshot_record(self.name, self.request.id, body, self.now_ms()),
                progress_record(self.name, self.request.id, OffsetsStepKind.SNAPSHOT),
            ]
        )
        self.steps.append(OffsetsStepKind.SNAPSHOT)
        failpoints.hit(Failpoint.OFFSETS_AFTER_SNAPSHOT)
        return body

    def _sink_body(self) -> list[dict[str, Any]]:
        return model.sink_body(group_offsets(self.group_cluster, self.group))

    @property
    def group(self) -> str:
        return sink_group(self.name, self.config)

    @property
    def group_cluster(self) -> KafkaSettings:
        """Where the sink's group is managed: Connect's admin client, `admin.override.*` applied."""
        return client_settings(self.settings, self.config, ADMIN)

    # --- the connector's hook ------------------------------------------------------------------

    def _hook(self, snapshot: list[dict[str, Any]]) -> bool:
        """`alter_offsets` first; raising refuses the request (its message is the outcome's)."""
        try:
            plugin = load_connector(self.desired.spec.connector_class)()
        except UnknownConnector as exc:
            # A connector run by something else (e.g. a Java Connect worker): no hook to ask.
            LOG.info("offsets request %s: no alter_offsets hook called: %s", self.request.id, exc.message)
            return False
        offsets = self._hook_offsets(snapshot)
        try:
            # `validate_offsets` first, again: `validate` asked it when the manifest was loaded,
            # but `alter_offsets` may rely on it, and a reset's partitions are known only now.
            # What the plugin logs is tagged `[name|worker]`, as in `Worker.modifyConnectorOffsets`.
            with connector_context(self.desired.name):
                if isinstance(plugin, SinkConnector) and self.sink:
                    plugin.validate_offsets(self.config, offsets)
                    return bool(plugin.alter_offsets(self.config, offsets))
                if isinstance(plugin, SourceConnector) and not self.sink:
                    plugin.validate_offsets(self.config, offsets)
                    return bool(plugin.alter_offsets(self.config, offsets))
        except OffsetsRefused as exc:  # Connect's UnsupportedOperationException: a refusal
            raise Stop("refused", f"the connector refused the request: {exc.message}") from exc
        except ReconcilerError as exc:  # e.g. its config is invalid
            raise Stop("failed", f"the connector's alter_offsets failed: {exc.message}") from exc
        except Exception as exc:  # a plugin bug fails the request, with where it happened
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            raise Stop("failed", f"the connector's alter_offsets failed: {last}") from exc
        kind = "sink" if self.sink else "source"
        raise Stop(
            "failed",
            f"connector class {self.desired.spec.connector_class} is a {plugin.kind} connector, "
            f"but the request was prepared for a {kind}",
        )

    def _hook_offsets(self, snapshot: list[dict[str, Any]]) -> Mapping[Any, Any]:
        if self.request.action is OffsetsAction.ALTER:
            return hook_offsets(self.request.offsets or [], sink=self.sink)
        if self.sink:
            return {tp: None for tp in sink_offsets_from_body(snapshot)}
        return {
            partition_key(entry["partition"]): None for entry in snapshot if isinstance(entry.get("partition"), dict)
        }

    # --- alter / reset ----------------------------------------------------------------------------

    def _change(self, snapshot: list[dict[str, Any]], source: SourceOffsets | None, confirmed: bool) -> None:
        step = change_step(self.request)
        progress = progress_record(self.name, self.request.id, step, confirmed)
        if self.sink:
            self._change_sink(snapshot)
            failpoints.hit(Failpoint.OFFSETS_AFTER_ALTER)
            self.writer.write_records([progress])
        else:
            assert source is not None
            self._change_source(source, progress)
            failpoints.hit(Failpoint.OFFSETS_AFTER_ALTER)
        self.steps.append(step)
        failpoints.hit(Failpoint.OFFSETS_AFTER_ALTER_RECORDED)

    def _change_sink(self, snapshot: list[dict[str, Any]]) -> None:
        """From the snapshot, not from the group now: a re-run after a crash computes the same."""
        action, cluster = self.request.action, self.group_cluster
        if action is OffsetsAction.RESET:
            sink.delete_group(cluster, self.name, self.group, action)
            return
        change = sink_change(sink_offsets_from_body(snapshot), hook_offsets(self.request.offsets or [], sink=True))
        if change.delete_group:
            sink.delete_group(cluster, self.name, self.group, action)
        sink.commit_offsets(cluster, self.name, self.group, change.commit, action)

    def _change_source(self, source: SourceOffsets, progress: Record) -> None:
        """The offsets records in Connect's store order, the progress record last.

        Stores on the worker's cluster are written with the progress record in one transaction
        (both or neither). A store on another cluster (the connector's producer cluster) gets its
        own transaction first; a crash after it re-runs this step, which writes the same values.
        """
        for store in source.stores:  # a connector-specific topic may not exist before its first run
            if store.key != (cluster_key(self.settings), self.settings.topics.offsets):
                ensure_offsets_topic(store.settings, store.topic)
        reset = self.request.action is OffsetsAction.RESET
        writes = source.reset_records() if reset else source.alter_records(source_targets(self.request.offsets or []))
        runs = _runs_by_cluster(writes)
        last = runs.pop() if runs and same_cluster(runs[-1][0], self.settings) else None
        for cluster, placed in runs:
            if same_cluster(cluster, self.settings):
                self.writer.write_placed(placed)
            else:
                with OffsetsWriter(cluster, self.name) as other:
                    self.written_elsewhere += other.write_placed(placed)
        self.writer.write_records([progress], extra=last[1] if last else ())
        if reset:
            confirm_reset(self.name, source.stores)

    # --- return and record ------------------------------------------------------------------------

    def _return_and_record(self) -> None:
        """Back to the declared state, the id recorded as applied, the progress cleared: one transaction."""
        records: list[Record] = []
        declared = self.desired.spec.state
        if declared is not TargetState.STOPPED:
            records.append(rec.target_state_record(self.name, to_connect_state(declared)))
        records.append(own.applied_record(RequestKind.OFFSETS, self.name, self.request.id, self.now_ms()))
        records.append(own.offsets_progress_tombstone(self.name))
        self.writer.write_records(records)
        self.steps.append(OffsetsStepKind.RETURN if declared is not TargetState.STOPPED else OffsetsStepKind.RECORD)
        failpoints.hit(Failpoint.OFFSETS_AFTER_RETURN)


def _runs_by_cluster(writes: Sequence[Write]) -> list[tuple[KafkaSettings, list[Placed]]]:
    """Consecutive writes to the same cluster grouped, order kept."""
    runs: list[tuple[KafkaSettings, list[Placed]]] = []
    for store, placed in writes:
        if runs and same_cluster(runs[-1][0], store.settings):
            runs[-1][1].append(placed)
        else:
            runs.append((store.settings, [placed]))
    return runs
