"""KIP-875 offsets requests as a resumable state machine, and Connect's words for the outcome. Pure.

A declared request (`spec.offsets`, keyed by `id`) runs in steps; each step's records go to
Kafka in one transaction together with a progress record `offsets-progress/<name>` =
`{"id":…,"step":…}` in `<group>-reconciler`, so a crash between two steps resumes at the next
one on the next run — never losing the request, never applying it twice:

| step      | records (one transaction)                                  | I/O outside it           |
|-----------|------------------------------------------------------------|--------------------------|
| stop      | commit-N {"tasks":0}, target-state-N STOPPED, progress     |                          |
| snapshot  | offsets-snapshot/N/<id> (current offsets), progress        | fence source task ids    |
| alter     | source: offsets records (null → tombstone), progress       | hook; sink: group admin  |
| reset     | source: a tombstone per live key, progress                 | hook; sink: delete group |
| return    | target-state-N <declared>, applied/offsets/N/<id>, progress tombstone |               |

Side effects outside a transaction (the connector's `alter_offsets` hook, consumer-group admin
calls) are idempotent and computed from the *snapshot*, not from what the group holds now: a
step re-run after a crash computes the same targets and converges (the connector is stopped
meanwhile, so nothing else moves its offsets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from reconciler.core.live import InstanceState, LiveConnector, LiveState, RequestKind
from reconciler.core.models import DesiredConnector, OffsetEntry, OffsetsAction, OffsetsRequest
from reconciler.core.offsets_rules import KAFKA_OFFSET, KAFKA_PARTITION, KAFKA_TOPIC
from reconciler.core.offsets_rules import TopicPartition, parse_sink_partition
from reconciler.core.plan import OffsetsStepKind
from reconciler.failpoints import Failpoint
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Record
from reconciler.kafka.replay import partition_identity

SinkOffsets = dict[TopicPartition, int]
SourcePair = tuple[dict[str, Any], dict[str, Any] | None]  # (partition, offset or None)
OutcomeStatus = Literal["applied", "already-applied", "waiting", "refused", "retry", "failed"]

# How far a request got: the index of its last recorded step (-1: nothing recorded).
NOTHING, STOPPED, SNAPSHOT, CHANGED = -1, 0, 1, 2
STEP_INDEX: dict[OffsetsStepKind, int] = {
    OffsetsStepKind.STOP: STOPPED,
    OffsetsStepKind.SNAPSHOT: SNAPSHOT,
    OffsetsStepKind.ALTER: CHANGED,
    OffsetsStepKind.RESET: CHANGED,
}


# The executor's crash points between the steps (`reconciler.failpoints`), in step order.
AFTER_STOP = Failpoint.OFFSETS_AFTER_STOP
AFTER_SNAPSHOT = Failpoint.OFFSETS_AFTER_SNAPSHOT
AFTER_HOOK = Failpoint.OFFSETS_AFTER_HOOK
AFTER_ALTER = Failpoint.OFFSETS_AFTER_ALTER
AFTER_ALTER_RECORDED = Failpoint.OFFSETS_AFTER_ALTER_RECORDED
AFTER_RETURN = Failpoint.OFFSETS_AFTER_RETURN
FAILPOINTS = (AFTER_STOP, AFTER_SNAPSHOT, AFTER_HOOK, AFTER_ALTER, AFTER_ALTER_RECORDED, AFTER_RETURN)


# --- Connect's messages (docs/state-machine.md#alter-and-reset) -----------------------------------


def success_message(action: OffsetsAction, confirmed: bool) -> str:
    """The `{"message": …}` of Connect's 200 answer to PATCH (alter) / DELETE (reset)."""
    done = "altered" if action is OffsetsAction.ALTER else "reset"
    if confirmed:
        return f"The offsets for this connector have been {done} successfully"
    return (
        f"The Connect framework-managed offsets for this connector have been {done} successfully. "
        f"However, if this connector manages offsets externally, they will need to be manually {done} "
        "in the system that the connector uses."
    )


def zombie_sink_message(name: str, action: OffsetsAction, members: Sequence[str] = ()) -> str:
    """Connect's error when the sink's consumer group still has members (zombie sink tasks)."""
    verb = "alter" if action is OffsetsAction.ALTER else "reset"
    who = f" (active members: {', '.join(members)})" if members else ""
    return (
        f"Failed to {verb} consumer group offsets for connector {name} either because its tasks haven't "
        f"stopped completely yet or the connector was resumed before the request to {verb} its offsets "
        f"could be successfully completed{who}. If the connector is in a stopped state, this operation "
        "can be safely retried. If it doesn't eventually succeed, the zombie sink tasks holding the "
        "consumer group need to be stopped."
    )


def not_found_message(name: str) -> str:
    return f"Connector {name} not found"


# --- outcome ----------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class OffsetsOutcome:
    """What running one request did. `message` is Connect's answer (success or error text)."""

    connector: str
    request_id: str
    action: OffsetsAction
    status: OutcomeStatus
    message: str
    steps: tuple[OffsetsStepKind, ...] = ()  # steps executed by this call, in order
    confirmed: bool | None = None  # the connector's hook returned True
    records_written: int = 0  # records this call committed, on any cluster (a refused request's stop step too)

    @property
    def ok(self) -> bool:
        return self.status in ("applied", "already-applied")

    @property
    def retryable(self) -> bool:
        return self.status in ("waiting", "retry")

    def render(self) -> str:
        head = f"offsets request {self.request_id} ({self.action.value}) for {self.connector}"
        return f"{head}: {self.status}: {self.message}"


# --- which requests run, and where they resume ------------------------------------------------------


def pending_requests(desired: Iterable[DesiredConnector], live: LiveState) -> list[DesiredConnector]:
    """Declared offsets requests whose id is not recorded as applied, by connector name."""
    pending = [
        connector
        for connector in desired
        if connector.spec.offsets is not None
        and not live.is_applied(connector.name, RequestKind.OFFSETS, connector.spec.offsets.id)
    ]
    return sorted(pending, key=lambda c: c.name)


# The progress record of one connector as read (`confirmed`: the hook's answer, once known);
# read with the topics (`reconciler.kafka.io.store`).
Progress = own.RequestProgress
decode_progress = own.decode_request_progress


def progress_record(name: str, request_id: str, step: OffsetsStepKind, confirmed: bool | None = None) -> Record:
    """The progress record (the same bytes as `records.offsets_progress_record`, plus the hook's
    answer after the change step, so a resumed request still reports Connect's right message)."""
    base = own.offsets_progress_record(name, request_id, step)
    if confirmed is None:
        return base
    return Record(base.topic_role, base.key, rec.dumps({"id": request_id, "step": step, "connector-confirmed": confirmed}))


def resume_point(progress: Progress | None, request_id: str) -> int:
    """The last step recorded for *this* request (another id's progress starts from scratch)."""
    if progress is None or progress.request_id != request_id:
        return NOTHING
    return STEP_INDEX.get(progress.step, NOTHING)


def change_step(request: OffsetsRequest) -> OffsetsStepKind:
    return OffsetsStepKind.ALTER if request.action is OffsetsAction.ALTER else OffsetsStepKind.RESET


def created_fresh(before: LiveConnector | None) -> bool:
    """No task of this connector can be running: it did not exist (nor any leftover of a deleted
    one) before the apply that created it — created STOPPED, it never had a task."""
    if before is None:
        return True
    return not before.exists and before.connector_status is None and not before.task_statuses and not before.task_count


def tasks_gone(connector: LiveConnector) -> bool:
    """The connector reports STOPPED and no task status is left (what a worker writes once stopped)."""
    status = connector.connector_status
    return status is not None and status.state is InstanceState.STOPPED and not connector.task_statuses


# --- connector kind, groups, topics ------------------------------------------------------------------


# --- the request body ↔ maps ------------------------------------------------------------------------


def source_targets(entries: Sequence[OffsetEntry]) -> list[SourcePair]:
    """A validated source alter body as (partition, offset-or-None) pairs, last entry per partition."""
    by_identity: dict[Any, SourcePair] = {}
    for entry in entries:
        partition = dict(entry.partition)
        by_identity[partition_identity(partition)] = (partition, None if entry.offset is None else dict(entry.offset))
    return list(by_identity.values())


@dataclass(frozen=True)
class SinkChange:
    """How to bring a sink group from `before` to the altered offsets.

    Kafka's admin API here has no "delete one partition's offset" call in confluent-kafka, so a
    null in the request is done as Connect's reset is: delete the group, then commit every
    offset that remains. Without nulls only the altered partitions are committed.
    """

    commit: SinkOffsets
    delete_group: bool


def sink_change(before: Mapping[TopicPartition, int], targets: Mapping[TopicPartition, int | None]) -> SinkChange:
    removed = any(offset is None and tp in before for tp, offset in targets.items())
    if not removed:
        return SinkChange({tp: offset for tp, offset in targets.items() if offset is not None}, False)
    after = {tp: offset for tp, offset in before.items() if tp not in targets}
    after.update({tp: offset for tp, offset in targets.items() if offset is not None})
    return SinkChange(after, True)


def sink_body(offsets: Mapping[TopicPartition, int]) -> list[dict[str, Any]]:
    """`GET /connectors/{name}/offsets` entries of a sink, by topic and partition."""
    return [
        {"partition": {KAFKA_TOPIC: topic, KAFKA_PARTITION: partition}, "offset": {KAFKA_OFFSET: offset}}
        for (topic, partition), offset in sorted(offsets.items())
    ]


def source_body(pairs: Iterable[SourcePair]) -> list[dict[str, Any]]:
    return [{"partition": partition, "offset": offset} for partition, offset in pairs]


def sink_offsets_from_body(entries: Sequence[Mapping[str, Any]]) -> SinkOffsets:
    """A sink body (e.g. a snapshot) back to `{(topic, partition): offset}`; odd entries skipped."""
    offsets: SinkOffsets = {}
    for entry in entries:
        partition, offset = entry.get("partition"), entry.get("offset")
        if not isinstance(partition, Mapping) or not isinstance(offset, Mapping):
            continue
        topic, number, value = partition.get(KAFKA_TOPIC), partition.get(KAFKA_PARTITION), offset.get(KAFKA_OFFSET)
        if isinstance(topic, str) and type(number) is int and type(value) is int:
            offsets[(topic, number)] = value
    return offsets


# --- plan display: current offsets, in the request's own key order -----------------------------------


def current_entries(
    body: Sequence[Mapping[str, Any]], request: OffsetsRequest
) -> list[OffsetEntry]:
    """Current offsets to show beside a request (from → to).

    Alter: the requested partitions that have an offset now, each partition map written in the
    request's key order (the renderer pairs them by their text). Reset: every current partition.
    """
    entries = [_entry(e) for e in body]
    valid = [e for e in entries if e is not None]
    if request.action is OffsetsAction.RESET:
        return valid
    now = {partition_identity(dict(e.partition)): e for e in valid}
    shown: list[OffsetEntry] = []
    for wanted in request.offsets or []:
        found = now.get(partition_identity(_normal_partition(wanted.partition)))
        if found is not None:
            shown.append(OffsetEntry(partition=dict(wanted.partition), offset=found.offset))
    return shown


def _normal_partition(partition: Mapping[str, Any]) -> dict[str, Any]:
    """A requested sink partition may give its number as a string ("0"); compare as Connect parses it."""
    if set(partition) == {KAFKA_TOPIC, KAFKA_PARTITION}:
        try:
            topic, number = parse_sink_partition(partition)
        except (ValueError, KeyError):
            return dict(partition)
        return {KAFKA_TOPIC: topic, KAFKA_PARTITION: number}
    return dict(partition)


def _entry(doc: Mapping[str, Any]) -> OffsetEntry | None:
    partition, offset = doc.get("partition"), doc.get("offset")
    if not isinstance(partition, dict) or not (offset is None or isinstance(offset, dict)):
        return None
    try:
        return OffsetEntry(partition=partition, offset=offset)
    except ValueError:
        return None
