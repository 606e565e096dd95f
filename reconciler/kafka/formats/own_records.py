"""The records of our own `<group>-reconciler` topic: ownership, applied request ids, offsets
requests' progress and rollback snapshots, which config keys are sensitive, each connector's
last batch, why its tasks wait and its auto-restart history, and the runtime's marks
(restarts processed, where the runtime started, when a connector failed). Connect never reads
this topic; the formats are ours, in the same style as Connect's (compact JSON values, plain
UTF-8 keys; see `records`; all of them in docs/record-formats.md#reconciler-topic).

Pure: keys and values in, bytes out (and back), `Invalid(reason)` instead of raising.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
import hashlib
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple

from reconciler.core.live import AutoRestartStatus, LastBatch, RequestKind, TaskBatch, Waiting
from reconciler.core.plan import OffsetsStepKind
from reconciler.kafka.formats.records import Invalid, Record, TopicRole, dumps, loads, text_key


# Our `<group>-reconciler` topic. Connector names never contain `/` (manifest name pattern).
OWNER_PREFIX: Final = "owner/"
APPLIED_RESTART_PREFIX: Final = "applied/restart/"
APPLIED_OFFSETS_PREFIX: Final = "applied/offsets/"
APPLIED_TOPICS_RESET_PREFIX: Final = "applied/topics-reset/"
OFFSETS_PROGRESS_PREFIX: Final = "offsets-progress/"
OFFSETS_SNAPSHOT_PREFIX: Final = "offsets-snapshot/"
SENSITIVE_PREFIX: Final = "sensitive/"
BATCH_PREFIX: Final = "batch/"
WAIT_PREFIX: Final = "wait/"
AUTO_RESTART_PREFIX: Final = "auto-restart/"
# The runtime's marks (read by `kafka.replay.marks`). Their names are everything after
# the prefix: any connector of the config topic, Java-created ones too, has marks.
RESTART_PROCESSED_PREFIX: Final = "restart-processed/"
RUNTIME_STARTED_KEY: Final = "runtime-started"
CONNECTOR_FAILED_PREFIX: Final = "connector-failed/"
RECONCILER_OWNER: Final = "connect-reconciler"
# The steps a progress record may name: RECORD is the one that deletes it.
OFFSETS_STEPS: Final = frozenset(OffsetsStepKind) - {OffsetsStepKind.RECORD}


@dataclass(frozen=True, slots=True)
class OwnerInfo:
    owner: str
    created_by_plan: str


@dataclass(frozen=True, slots=True)
class OffsetsProgress:
    request_id: str
    step: OffsetsStepKind


@dataclass(frozen=True, slots=True)
class RequestProgress:
    """An offsets request's progress record as its executor reads it (`confirmed`: the
    connector's hook's answer, once known)."""

    request_id: str
    step: OffsetsStepKind
    confirmed: bool | None = None


@dataclass(frozen=True, slots=True)
class OffsetsSnapshot:
    offsets: list[dict[str, Any]]  # GET /connectors/{name}/offsets `offsets` array
    taken_at_ms: int


def _name_segment(name: str) -> str:
    if not name or "/" in name:
        raise ValueError(f"connector name {name!r} cannot be used in a reconciler-topic key")
    return name


def _request_id(request_id: str) -> str:
    if not request_id or any(ch.isspace() for ch in request_id):
        raise ValueError(f"request id {request_id!r} must be non-empty without whitespace")
    return request_id


def owner_record(name: str, created_by_plan: str) -> Record:
    value = dumps({"owner": RECONCILER_OWNER, "created-by-plan": created_by_plan})
    return Record(TopicRole.RECONCILER, text_key(OWNER_PREFIX + _name_segment(name)), value)


def owner_tombstone(name: str) -> Record:
    return Record(TopicRole.RECONCILER, text_key(OWNER_PREFIX + _name_segment(name)), None)


_APPLIED_PREFIX: Final = {
    RequestKind.RESTART: APPLIED_RESTART_PREFIX,
    RequestKind.OFFSETS: APPLIED_OFFSETS_PREFIX,
    RequestKind.TOPICS_RESET: APPLIED_TOPICS_RESET_PREFIX,
}


def applied_key(kind: RequestKind, name: str, request_id: str) -> bytes:
    prefix = _APPLIED_PREFIX[kind]
    return text_key(f"{prefix}{_name_segment(name)}/{_request_id(request_id)}")


def applied_record(kind: RequestKind, name: str, request_id: str, applied_at_ms: int) -> Record:
    key = applied_key(kind, name, request_id)
    return Record(TopicRole.RECONCILER, key, dumps({"applied-at": applied_at_ms}))


def offsets_progress_record(name: str, request_id: str, step: OffsetsStepKind) -> Record:
    if step not in OFFSETS_STEPS:
        raise ValueError(f"unknown offsets step {step!r}")
    value = dumps({"id": _request_id(request_id), "step": step})
    return Record(TopicRole.RECONCILER, text_key(OFFSETS_PROGRESS_PREFIX + _name_segment(name)), value)


def offsets_progress_tombstone(name: str) -> Record:
    return Record(TopicRole.RECONCILER, text_key(OFFSETS_PROGRESS_PREFIX + _name_segment(name)), None)


def offsets_snapshot_record(
    name: str, request_id: str, offsets: Sequence[Mapping[str, Any]], taken_at_ms: int
) -> Record:
    key = text_key(f"{OFFSETS_SNAPSHOT_PREFIX}{_name_segment(name)}/{_request_id(request_id)}")
    value = dumps({"offsets": [dict(entry) for entry in offsets], "taken-at": taken_at_ms})
    return Record(TopicRole.RECONCILER, key, value)


def sensitive_record(name: str, keys: Sequence[str]) -> Record:
    """The config keys of a connector its manifest made sensitive (none: a tombstone)."""
    key = text_key(SENSITIVE_PREFIX + _name_segment(name))
    return Record(TopicRole.RECONCILER, key, dumps({"keys": sorted(keys)}) if keys else None)


def batch_record(name: str, batch: LastBatch) -> Record:
    tasks = [
        {"id": task, "records": t.records, "bytes": t.bytes, "failed": t.failed}
        for task, t in sorted(batch.tasks.items())
    ]
    value = dumps({"finished-at": batch.finished_at_ms, "worker-id": batch.worker_id, "tasks": tasks})
    return Record(TopicRole.RECONCILER, text_key(BATCH_PREFIX + _name_segment(name)), value)


def batch_tombstone(name: str) -> Record:
    return Record(TopicRole.RECONCILER, text_key(BATCH_PREFIX + _name_segment(name)), None)


def wait_record(name: str, waiting: Waiting) -> Record:
    value = dumps({"since": waiting.since_ms, "worker-id": waiting.worker_id, "reason": waiting.reason})
    return Record(TopicRole.RECONCILER, text_key(WAIT_PREFIX + _name_segment(name)), value)


def wait_tombstone(name: str) -> Record:
    return Record(TopicRole.RECONCILER, text_key(WAIT_PREFIX + _name_segment(name)), None)


def auto_restart_record(name: str, state: AutoRestartStatus) -> Record:
    value = dumps({"count": state.count, "last-restart": state.last_restart_ms, "next-restart": state.next_restart_ms})
    return Record(TopicRole.RECONCILER, text_key(AUTO_RESTART_PREFIX + _name_segment(name)), value)


def auto_restart_tombstone(name: str) -> Record:
    """The counter is reset (healthy long enough, auto-restart turned off, or connector gone)."""
    return Record(TopicRole.RECONCILER, text_key(AUTO_RESTART_PREFIX + _name_segment(name)), None)


ReconcilerKeyKind = Literal[
    "owner",
    "applied-restart",
    "applied-offsets",
    "applied-topics-reset",
    "offsets-progress",
    "offsets-snapshot",
    "sensitive",
    "batch",
    "wait",
    "auto-restart",
]


class ReconcilerKey(NamedTuple):
    kind: ReconcilerKeyKind
    name: str
    request_id: str | None


def parse_reconciler_key(key: str) -> ReconcilerKey | None:
    """Name = the segment after the prefix up to the next `/`; id = the rest (may hold `/`)."""
    for prefix, kind in _NAME_KEYS:
        if key.startswith(prefix):
            name = key[len(prefix) :]
            return ReconcilerKey(kind, name, None) if name and "/" not in name else None
    for prefix, kind in _ID_KEYS:
        if key.startswith(prefix):
            name, _, request_id = key[len(prefix) :].partition("/")
            return ReconcilerKey(kind, name, request_id) if name and request_id else None
    return None


_NAME_KEYS: Final[tuple[tuple[str, ReconcilerKeyKind], ...]] = (
    (OWNER_PREFIX, "owner"),
    (OFFSETS_PROGRESS_PREFIX, "offsets-progress"),
    (SENSITIVE_PREFIX, "sensitive"),
    (BATCH_PREFIX, "batch"),
    (WAIT_PREFIX, "wait"),
    (AUTO_RESTART_PREFIX, "auto-restart"),
)
_ID_KEYS: Final[tuple[tuple[str, ReconcilerKeyKind], ...]] = (
    (APPLIED_RESTART_PREFIX, "applied-restart"),
    (APPLIED_OFFSETS_PREFIX, "applied-offsets"),
    (APPLIED_TOPICS_RESET_PREFIX, "applied-topics-reset"),
    (OFFSETS_SNAPSHOT_PREFIX, "offsets-snapshot"),
)


def _json_object(value: bytes, kind: str) -> dict[str, Any] | Invalid:
    """A record value that must be a JSON object, or why it is not."""
    obj = loads(value)
    if type(obj) is dict:
        return obj
    return obj if isinstance(obj, Invalid) else Invalid(f"{kind} value is not a JSON object")


def _typed_fields(value: bytes, kind: str, wanted: Mapping[str, type], problem: str) -> list[Any] | Invalid:
    """The `wanted` fields of a JSON-object value, in order, each of exactly its type (`bool` is
    no `int` here), or why not (`problem`)."""
    obj = _json_object(value, kind)
    if isinstance(obj, Invalid):
        return obj
    found = [obj.get(name) for name in wanted]
    return found if all(type(v) is t for v, t in zip(found, wanted.values(), strict=True)) else Invalid(problem)


def decode_owner(value: bytes) -> OwnerInfo | Invalid:
    obj = _json_object(value, "owner")
    if isinstance(obj, Invalid):
        return obj
    owner, plan = obj.get("owner"), obj.get("created-by-plan", "")
    if type(owner) is not str or type(plan) is not str:
        return Invalid("'owner' and 'created-by-plan' should be strings")
    return OwnerInfo(owner, plan)


def decode_sensitive(value: bytes) -> list[str] | Invalid:
    obj = _json_object(value, "sensitive")
    if isinstance(obj, Invalid):
        return obj
    keys = obj.get("keys")
    if type(keys) is not list or not all(type(k) is str for k in keys):
        return Invalid("'keys' should be a list of strings")
    return sorted(keys)


def decode_applied(value: bytes) -> int | Invalid:
    obj = loads(value)
    if isinstance(obj, Invalid):
        return obj
    at = obj.get("applied-at") if type(obj) is dict else None
    return at if type(at) is int else Invalid("'applied-at' should be an integer")


def decode_offsets_progress(value: bytes) -> OffsetsProgress | Invalid:
    obj = _json_object(value, "progress")
    if isinstance(obj, Invalid):
        return obj
    request_id, step = obj.get("id"), obj.get("step")
    if type(request_id) is not str or not request_id or type(step) is not str:
        return Invalid(f"invalid offsets progress {obj!r}")
    if step not in OFFSETS_STEPS:
        return Invalid(f"invalid offsets progress {obj!r}")
    return OffsetsProgress(request_id, OffsetsStepKind(step))


def decode_request_progress(value: bytes) -> RequestProgress | Invalid:
    """`offsets-progress/<name>`: `{"id","step"}` plus the executor's optional `"connector-confirmed"`."""
    base = decode_offsets_progress(value)
    if isinstance(base, Invalid):
        return base
    obj = loads(value)
    confirmed = obj.get("connector-confirmed") if type(obj) is dict else None
    return RequestProgress(base.request_id, base.step, confirmed if type(confirmed) is bool else None)


def decode_offsets_snapshot(value: bytes) -> OffsetsSnapshot | Invalid:
    obj = _json_object(value, "snapshot")
    if isinstance(obj, Invalid):
        return obj
    offsets, taken_at = obj.get("offsets"), obj.get("taken-at")
    if type(offsets) is not list or not all(type(e) is dict for e in offsets):
        return Invalid("'offsets' should be a list of objects")
    if type(taken_at) is not int:
        return Invalid("'taken-at' should be an integer")
    return OffsetsSnapshot(offsets, taken_at)


def decode_batch(value: bytes) -> LastBatch | Invalid:
    fields = _typed_fields(value, "batch", {"finished-at": int, "worker-id": str, "tasks": list},
                           "'finished-at', 'worker-id' and 'tasks' should be an integer, a string and a list")
    if isinstance(fields, Invalid):
        return fields
    at, worker, tasks = fields
    parsed: dict[int, TaskBatch] = {}
    for task in tasks:
        numbers = [task.get(k) for k in ("id", "records", "bytes")] if type(task) is dict else [None]
        if not all(type(n) is int for n in numbers) or type(task.get("failed")) is not bool:
            return Invalid(f"invalid task in batch value: {task!r}")
        parsed[task["id"]] = TaskBatch(records=task["records"], bytes=task["bytes"], failed=task["failed"])
    return LastBatch(finished_at_ms=at, worker_id=worker, tasks=parsed)


def decode_wait(value: bytes) -> Waiting | Invalid:
    fields = _typed_fields(value, "wait", {"since": int, "worker-id": str, "reason": str},
                           "'since', 'worker-id' and 'reason' should be an integer and two strings")
    if isinstance(fields, Invalid):
        return fields
    since, worker, reason = fields
    return Waiting(since_ms=since, worker_id=worker, reason=reason)


def decode_auto_restart(value: bytes) -> AutoRestartStatus | Invalid:
    obj = _json_object(value, "auto-restart")
    if isinstance(obj, Invalid):
        return obj
    count, last, upcoming = obj.get("count"), obj.get("last-restart"), obj.get("next-restart")
    if type(count) is not int or count < 0 or type(last) is not int:
        return Invalid("'count' and 'last-restart' should be non-negative integers")
    if upcoming is not None and type(upcoming) is not int:
        return Invalid("'next-restart' should be an integer or null")
    return AutoRestartStatus(count=count, last_restart_ms=last, next_restart_ms=upcoming)


# --- the runtime's marks ---------------------------------------------------------------------------


def restart_processed_record(connector: str, offset: int, processed_at_ms: int) -> Record:
    """`restart-processed/<name>`: restart records up to `offset` were executed."""
    if not connector:
        raise ValueError("a restart mark needs a connector name")
    value = dumps({"offset": offset, "processed-at": processed_at_ms})
    return Record(TopicRole.RECONCILER, text_key(RESTART_PROCESSED_PREFIX + connector), value)


def decode_restart_processed(value: bytes) -> int | Invalid:
    obj = loads(value)
    if isinstance(obj, Invalid):
        return obj
    offset = obj.get("offset") if type(obj) is dict else None
    return offset if type(offset) is int else Invalid("'offset' should be an integer")


def runtime_started_record(config_offset: int) -> Record:
    """`runtime-started`: restart records below `config_offset` predate this runtime."""
    return Record(TopicRole.RECONCILER, text_key(RUNTIME_STARTED_KEY), dumps({"config-offset": config_offset}))


def decode_runtime_started(value: bytes) -> int | Invalid:
    obj = loads(value)
    offset = obj.get("config-offset") if type(obj) is dict else None
    return offset if type(offset) is int else Invalid("'config-offset' should be an integer")


@dataclass(frozen=True, slots=True)
class FailureMark:
    """`connector-failed/<name>`: when a FAILED connector status was written (`kafka.replay.marks`)."""

    config_end: int  # the config topic's end offset when the FAILED status was written
    trace_digest: str

    def holds_for(self, trace: str | None) -> bool:
        return self.trace_digest == trace_digest(trace)


def trace_digest(trace: str | None) -> str:
    return hashlib.sha256((trace or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def connector_failed_record(connector: str, config_end: int, trace: str | None) -> Record:
    value = dumps({"config-end": config_end, "trace-sha256": trace_digest(trace)})
    return Record(TopicRole.RECONCILER, text_key(CONNECTOR_FAILED_PREFIX + connector), value)


def connector_failed_tombstone(connector: str) -> Record:
    return Record(TopicRole.RECONCILER, text_key(CONNECTOR_FAILED_PREFIX + connector), None)


def decode_connector_failed(value: bytes) -> FailureMark | Invalid:
    obj = loads(value)
    end = obj.get("config-end") if type(obj) is dict else None
    digest = obj.get("trace-sha256") if type(obj) is dict else None
    if type(end) is not int or type(digest) is not str:
        return Invalid("a failure mark needs 'config-end' and 'trace-sha256'")
    return FailureMark(end, digest)
