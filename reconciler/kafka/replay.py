"""Connect's reader state machines: records in topic order in, live state out.

One class per topic, each with `apply(key, value, offset)`, fed by the I/O layer in the order
it consumes records (per partition order is all that matters: every key lives in one partition).
They follow connect-internals.md §1–§3, i.e. Java's `KafkaConfigBackingStore`,
`KafkaStatusBackingStore` and `KafkaOffsetBackingStore`, including their quirks, so that we see
exactly what a Connect worker reading the same topics would see.

`apply` is the hot loop of `reconciler snapshot`/`plan` (100,000s of records), so it works on
plain dicts and tuples; pydantic models are built once, in `build_live_state`.
"""

from __future__ import annotations

import logging
from typing import Any, NamedTuple

from pydantic_core import from_json

from reconciler.core.live import (
    AppliedRequests,
    ConnectTargetState,
    InstanceStatus,
    LiveConnector,
    LiveState,
)
from reconciler.kafka import records as rec
from reconciler.kafka.records import Invalid, OffsetsProgress, OffsetsSnapshot, OwnerInfo

log = logging.getLogger(__name__)

Properties = dict[str, Any]  # as read; non-string values are converted in build_live_state
_STARTED = ConnectTargetState.STARTED
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_PROBLEMS = 100
_STATUS_CACHE_SIZE = 4096


class RestartRequestRecord(NamedTuple):
    """The pending KIP-745 request for a connector; `offset` = newest restart record merged in."""

    include_tasks: bool
    only_failed: bool
    offset: int


def restart_impact(include_tasks: bool, only_failed: bool) -> int:
    """§1.6 ranking: onlyFailed∧¬tasks < onlyFailed∧tasks < ¬onlyFailed∧¬tasks < ¬onlyFailed∧tasks."""
    return (0 if only_failed else 2) + (1 if include_tasks else 0)


def _parse(value: bytes) -> object:
    try:
        return from_json(value)
    except ValueError:
        return rec.loads(value)


class _Replay:
    """Bookkeeping shared by the replays: last offset seen, skipped records (for diagnostics)."""

    def __init__(self) -> None:
        self.offset = -1
        self.skipped = 0
        self.problems: list[str] = []

    def _skip(self, key: str, reason: str, level: int = logging.WARNING) -> None:
        self.skipped += 1
        if len(self.problems) < _MAX_PROBLEMS:
            self.problems.append(f"{key}: {reason}")
        log.log(level, "ignoring record %r: %s", key, reason)


class ConfigReplay(_Replay):
    """The config topic (§1): configs, target states, committed task configs, restart requests.

    `restart_after`: restart records at or below this offset were already handled by the caller
    (Java ignores every restart record read before the worker started; a reader that keeps its
    own watermark passes it here). None keeps them all.
    """

    def __init__(self, *, restart_after: int | None = None) -> None:
        super().__init__()
        self.configs: dict[str, Properties] = {}
        self.target_states: dict[str, ConnectTargetState] = {}
        self.task_counts: dict[str, int] = {}
        self.task_configs: dict[str, dict[int, Properties]] = {}  # committed, by task id
        self.deferred: dict[str, dict[int, Properties]] = {}  # read, waiting for `commit-`
        self.inconsistent: set[str] = set()
        self.pending_fencing: set[str] = set()
        self.task_count_records: dict[str, int] = {}  # `tasks-fencing-` (KIP-618)
        self.task_config_generations: dict[str, int] = {}
        self.restart_requests: dict[str, RestartRequestRecord] = {}
        self._restart_after = restart_after

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if key is None:
            self._skip("<null>", "config record without a key")
            return
        k = key.decode("utf-8", "replace")
        obj: object = None
        if value is not None:
            try:
                obj = from_json(value)
            except ValueError:
                obj = rec.loads(value)
                if isinstance(obj, Invalid):  # Java drops records its converter cannot read
                    self._skip(k, obj.reason)
                    return
        # Java tests the prefixes in the order target-state-, connector-, task-, commit-,
        # restart-connector-, tasks-fencing-; no key can match two of them, so the most
        # frequent come first here.
        if k.startswith("task-"):
            # Inlined fast path for the commonest record (`task-<name>-<digits>` with properties).
            rest = k[5:]
            cut = rest.rfind("-")
            tail = rest[cut + 1 :]
            props = obj.get("properties") if type(obj) is dict else None
            if cut >= 0 and type(props) is dict and tail.isdigit() and tail.isascii() and len(tail) < 10:
                name = rest[:cut]
                deferred = self.deferred.get(name)
                if deferred is None:
                    deferred = self.deferred[name] = {}
                deferred[int(tail)] = props
            else:
                self._task(k, obj)
        elif k.startswith("connector-"):
            self._connector(k[10:], obj)
        elif k.startswith("commit-"):
            self._commit(k[7:], obj, k)
        elif k.startswith("target-state-"):
            self._target_state(k[13:], obj, k)
        elif k.startswith("restart-connector-"):
            self._restart(k[18:], obj, offset, k)
        elif k.startswith("tasks-fencing-"):
            self._tasks_fencing(k[14:], obj, k)
        elif k == rec.SESSION_KEY or k.startswith(rec.LOGGER_CLUSTER_PREFIX):
            log.debug("config record %r is for the Connect workers only; ignored", k)
        else:
            self._skip(k, "unknown config key", logging.DEBUG)

    def _task(self, key: str, obj: object) -> None:
        task_id = rec.parse_task_id(key, "task-")
        if task_id is None:
            self._skip(key, "cannot parse the task id")
            return
        props = obj.get("properties") if type(obj) is dict else None
        if type(props) is not dict:
            self._skip(key, "task config is null or has no 'properties' map")
            return
        name, task = task_id
        deferred = self.deferred.get(name)
        if deferred is None:
            deferred = self.deferred[name] = {}
        deferred[task] = props

    def _connector(self, name: str, obj: object) -> None:
        if obj is None:  # tombstone: the connector was deleted
            self._remove(name)
            return
        props = obj.get("properties") if type(obj) is dict else None
        if type(props) is not dict:
            self._skip(rec.CONNECTOR_PREFIX + name, "no 'properties' map")
            return
        self.configs[name] = props
        if name not in self.target_states:
            self.target_states[name] = _STARTED

    def _remove(self, name: str) -> None:
        """Java's `processConnectorRemoval`: the target state goes with its own tombstone."""
        self.configs.pop(name, None)
        self.task_counts.pop(name, None)
        self.task_configs.pop(name, None)
        self.deferred.pop(name, None)

    def _commit(self, name: str, obj: object, key: str) -> None:
        if name not in self.configs:
            # Deleted connector whose config and tombstone were compacted away: drop its state.
            self._remove(name)
            log.debug("commit for unknown connector %r: its task configs are dropped", name)
            return
        count = rec.int_field_from_json(obj, "tasks")
        if isinstance(count, Invalid):
            self._skip(key, count.reason)
            return
        deferred = self.deferred.get(name)
        if _complete(deferred, count):
            if deferred is not None:
                self.task_configs.setdefault(name, {}).update(deferred)
                generation = self.task_config_generations.get(name)
                self.task_config_generations[name] = 0 if generation is None else generation + 1
            self.inconsistent.discard(name)
        else:  # compaction (or a crashed leader) left an incomplete set: zero tasks until fixed
            self.inconsistent.add(name)
        if deferred is not None:
            deferred.clear()
        self.task_counts[name] = count
        self.pending_fencing.add(name)

    def _target_state(self, name: str, obj: object, key: str) -> None:
        if obj is None:
            self.target_states.pop(name, None)
            if name in self.configs:
                self.target_states[name] = _STARTED
            return
        state = rec.target_state_from_json(obj)
        if isinstance(state, Invalid):
            self._skip(key, state.reason)
            return
        self.target_states[name] = state  # stored even before the connector exists (KIP-980)

    def _restart(self, name: str, obj: object, offset: int, key: str) -> None:
        flags = rec.restart_from_json(obj)
        if isinstance(flags, Invalid):
            self._skip(key, flags.reason)
            return
        if self._restart_after is not None and offset <= self._restart_after:
            return
        new = RestartRequestRecord(flags.include_tasks, flags.only_failed, offset)
        old = self.restart_requests.get(name)
        if old is not None and restart_impact(old.include_tasks, old.only_failed) >= restart_impact(
            new.include_tasks, new.only_failed
        ):
            new = old._replace(offset=max(old.offset, offset))  # Java keeps the existing one
        self.restart_requests[name] = new

    def _tasks_fencing(self, name: str, obj: object, key: str) -> None:
        count = rec.int_field_from_json(obj, "task-count")
        if isinstance(count, Invalid):
            self._skip(key, count.reason)
            return
        self.task_count_records[name] = count
        self.pending_fencing.discard(name)

    def pop_restart_requests(self) -> dict[str, RestartRequestRecord]:
        """Take the pending restart requests (like the herder does once it has handled them)."""
        pending, self.restart_requests = self.restart_requests, {}
        return pending

    def visible_task_configs(self, name: str) -> list[Properties]:
        """`ClusterConfigState.tasks`: ids 0..count-1, none while inconsistent."""
        count = self.task_counts.get(name, 0)
        committed = self.task_configs.get(name, {})
        if name in self.inconsistent or not all(i in committed for i in range(count)):
            return []  # (a complete commit always leaves every id 0..count-1 committed)
        return [committed[i] for i in range(count)]


def _complete(deferred: dict[int, Properties] | None, count: int) -> bool:
    """Ids 0..count-1 all present; extra ids are fine (compaction leaves stale higher ones)."""
    ids = deferred if deferred is not None else {}
    return len(ids) >= count and all(i in ids for i in range(count))


class StatusReplay(_Replay):
    """The status topic (§2): latest status per connector and per task."""

    def __init__(self) -> None:
        super().__init__()
        self.connectors: dict[str, rec.StatusValue] = {}
        self.tasks: dict[str, dict[int, rec.StatusValue]] = {}
        # KIP-558 active topics: connector → topic → (task, discoverTimestamp).
        self.topics: dict[str, dict[str, tuple[int, int]]] = {}
        # Most status values are byte-identical (same state, worker and generation for many
        # tasks): each distinct value is parsed once.
        self._parsed: dict[bytes, rec.StatusValue] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if key is None:
            self._skip("<null>", "status record without a key")
            return
        k = key.decode("utf-8", "replace")
        if k.startswith("status-task-"):
            rest = k[12:]
            cut = rest.rfind("-")
            tail = rest[cut + 1 :]
            if value is not None and cut >= 0 and tail.isdigit() and tail.isascii() and len(tail) < 10:
                self._put_task(k, rest[:cut], int(tail), value)  # the common shape, parsed inline
            else:
                self._task(k, value)
        elif k.startswith("status-connector-"):
            self._connector(k, value)
        elif k.startswith("status-topic-"):
            self._topic(k, value)
        else:
            self._skip(k, "unknown status key", logging.DEBUG)

    def _status(self, key: str, value: bytes) -> rec.StatusValue | None:
        known = self._parsed.get(value)
        if known is not None:
            return known
        status = self._parse_status(key, value)
        if status is not None and len(self._parsed) < _STATUS_CACHE_SIZE:
            self._parsed[value] = status
        return status

    def _parse_status(self, key: str, value: bytes) -> rec.StatusValue | None:
        try:  # fast path: the exact shape Connect writes
            obj = from_json(value)
            if type(obj) is dict:
                state, trace, worker = obj.get("state"), obj.get("trace"), obj.get("worker_id")
                generation = obj.get("generation")
                if (
                    type(generation) is int
                    and _INT32_MIN <= generation <= _INT32_MAX
                    and type(state) is str
                    and state in rec.STATUS_STATES
                    and type(worker) is str
                    and (trace is None or type(trace) is str)
                ):
                    return state, trace, worker, generation
        except ValueError:
            pass
        parsed = rec.status_from_json(_parse(value))
        if isinstance(parsed, Invalid):  # Java drops unparseable statuses
            self._skip(key, parsed.reason)
            return None
        return parsed

    def _connector(self, key: str, value: bytes | None) -> None:
        name = key[17:]
        if not name:
            self._skip(key, "empty connector name")
            return
        if value is None:  # Java's remove(connector) also forgets the task statuses
            self.connectors.pop(name, None)
            self.tasks.pop(name, None)
            return
        status = self._status(key, value)
        if status is not None:
            self.connectors[name] = status

    def _task(self, key: str, value: bytes | None) -> None:
        task_id = rec.parse_task_id(key, "status-task-")
        if task_id is None:
            self._skip(key, "cannot parse the task id")
            return
        name, task = task_id
        tasks = self.tasks.get(name)
        if value is None:
            if tasks is not None:
                tasks.pop(task, None)
            return
        self._put_task(key, name, task, value)

    def _put_task(self, key: str, name: str, task: int, value: bytes) -> None:
        status = self._status(key, value)
        if status is None:
            return
        tasks = self.tasks.get(name)
        if tasks is None:
            tasks = self.tasks[name] = {}
        cached = tasks.get(task)
        # A worker that missed a rebalance may write UNASSIGNED after another wrote RUNNING.
        if status[0] == "UNASSIGNED" and cached is not None and cached[0] == "RUNNING":
            if cached[3] >= status[3]:
                return
        tasks[task] = status

    def _topic(self, key: str, value: bytes | None) -> None:
        # Like Java: topic up to the first `:`, connector after `:connector-` (not re-checked).
        rest = key[13:]
        colon = rest.find(":")
        topic, connector = rest[:colon], rest[colon + len(rec.STATUS_TOPIC_SEPARATOR) :]
        if colon <= 0 or not connector:
            self._skip(key, "invalid topic status key")
            return
        if value is None:
            self.topics.get(connector, {}).pop(topic, None)
            return
        obj = _parse(value)
        inner = obj.get("topic") if type(obj) is dict else None
        task = rec.java_int(inner.get("task")) if type(inner) is dict else None
        stamp = inner.get("discoverTimestamp") if type(inner) is dict else None
        if task is None or type(stamp) is not int:
            self._skip(key, "invalid topic status value")
            return
        self.topics.setdefault(connector, {})[topic] = (task, stamp)


class OffsetsReplay(_Replay):
    """Source offsets (§3.1): latest value per raw key; raw key bytes kept per logical partition.

    Java keys its offsets by raw key bytes, so two encodings of one partition are two keys. We
    keep every raw key ever seen for each (connector, partition) so that writers reuse Java's
    exact bytes, and report the most recently written live one as the partition's offset.
    """

    def __init__(self) -> None:
        super().__init__()
        self._values: dict[bytes, tuple[int, bytes]] = {}  # raw key → (write seq, value)
        self._keys: dict[bytes, tuple[str, Any, dict[str, Any]] | None] = {}
        self._partitions: dict[str, dict[Any, list[bytes]]] = {}  # connector → canon → raw keys
        self._seq = 0

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if key is None:
            self._skip("<null>", "offset record without a key")
            return
        if key not in self._keys:
            self._keys[key] = self._parse_key(key)
        if value is None:
            self._values.pop(key, None)
        else:
            self._seq += 1
            self._values[key] = (self._seq, value)

    def _parse_key(self, key: bytes) -> tuple[str, Any, dict[str, Any]] | None:
        parsed = rec.offset_key_from_json(_parse(key))
        if isinstance(parsed, Invalid):
            if not parsed.quiet:  # `[name, null]` is skipped silently, as Java does
                self._skip(key.decode("utf-8", "replace"), parsed.reason)
            return None
        name, partition = parsed
        canon = partition_identity(partition)
        self._partitions.setdefault(name, {}).setdefault(canon, []).append(key)
        return name, canon, partition

    def connectors(self) -> list[str]:
        return sorted(self._partitions)

    def _latest_live(self, raw_keys: list[bytes]) -> bytes | None:
        live = [(self._values[k][0], k) for k in raw_keys if k in self._values]
        return max(live)[1] if live else None

    def offsets_for(self, connector: str) -> list[tuple[dict[str, Any], dict[str, Any], bytes]]:
        """(partition, offset, raw key) per live partition, in the order first seen."""
        result = []
        for raw_keys in self._partitions.get(connector, {}).values():
            raw = self._latest_live(raw_keys)
            if raw is None:
                continue
            offset = rec.decode_offset_value(self._values[raw][1])
            if isinstance(offset, Invalid):
                log.warning("offset for key %r is unreadable: %s", raw, offset.reason)
                continue
            key_info = self._keys[raw]
            assert key_info is not None
            result.append((dict(key_info[2]), offset, raw))
        return result

    def live_raw_keys(self, connector: str) -> list[bytes]:
        """Every raw key holding a value for this connector: what a reset must tombstone."""
        return [
            raw
            for raw_keys in self._partitions.get(connector, {}).values()
            for raw in raw_keys
            if raw in self._values
        ]

    def key_for(self, connector: str, partition: dict[str, Any]) -> bytes:
        """The key bytes to write this partition under: Java's own if ever seen, else new ones."""
        raw_keys = self._partitions.get(connector, {}).get(partition_identity(partition))
        if not raw_keys:
            return rec.encode_offset_key(connector, partition)
        return self._latest_live(raw_keys) or raw_keys[-1]


def partition_identity(partition: dict[str, Any]) -> Any:
    """Equality as Java's `Map.equals` sees it: `1`, `1.0` and `true` are different values."""
    identity = tuple(sorted((k, type(v).__name__, v) for k, v in partition.items()))
    try:
        hash(identity)
        return identity
    except TypeError:  # nested values (not valid for Connect, but readable): compare as JSON
        return ("json", rec.dumps(dict(sorted(partition.items()))))


class ReconcilerReplay(_Replay):
    """Our own `<group>-reconciler` topic: ownership, applied request ids, offsets progress."""

    def __init__(self) -> None:
        super().__init__()
        self.owners: dict[str, OwnerInfo] = {}
        self.applied_restart: dict[str, dict[str, int]] = {}  # name → id → applied-at
        self.applied_offsets: dict[str, dict[str, int]] = {}
        self.offsets_progress: dict[str, OffsetsProgress] = {}
        self.snapshots: dict[tuple[str, str], OffsetsSnapshot] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        text = "<null>" if key is None else key.decode("utf-8", "replace")
        parsed = rec.parse_reconciler_key(text)
        if parsed is None:
            self._skip(text, "unknown reconciler key", logging.DEBUG)
            return
        kind, name, request_id = parsed
        if kind == "owner":
            self._put(self.owners, name, None if value is None else rec.decode_owner(value), text)
        elif kind == "offsets-progress":
            decoded = None if value is None else rec.decode_offsets_progress(value)
            self._put(self.offsets_progress, name, decoded, text)
        elif kind == "offsets-snapshot":
            decoded_snapshot = None if value is None else rec.decode_offsets_snapshot(value)
            self._put(self.snapshots, (name, request_id or ""), decoded_snapshot, text)
        else:
            applied = self.applied_restart if kind == "applied-restart" else self.applied_offsets
            at = None if value is None else rec.decode_applied(value)
            self._put(applied.setdefault(name, {}), request_id or "", at, text)

    def _put(self, table: dict[Any, Any], key: Any, value: object, text: str) -> None:
        if value is None:
            table.pop(key, None)
        elif isinstance(value, Invalid):
            self._skip(text, value.reason)
        else:
            table[key] = value


def build_live_state(
    config: ConfigReplay, status: StatusReplay, ours: ReconcilerReplay, group_id: str | None
) -> LiveState:
    """The live state: every connector named in the config topic (config or target state) or
    in the status topic, with its statuses; plus ownership and applied requests from our topic."""
    names = set(config.configs) | set(config.target_states) | set(status.connectors)
    names.update(name for name, tasks in status.tasks.items() if tasks)
    statuses = _StatusCache()
    connectors = {name: _live_connector(name, config, status, statuses) for name in sorted(names)}
    applied: dict[str, AppliedRequests] = {}
    for name in sorted(set(ours.applied_restart) | set(ours.applied_offsets)):
        restart = sorted(ours.applied_restart.get(name, {}))
        offsets = sorted(ours.applied_offsets.get(name, {}))
        if restart or offsets:
            applied[name] = AppliedRequests.model_construct(restart=restart, offsets=offsets)
    return LiveState.model_construct(
        group_id=group_id,
        connectors=connectors,
        owned=sorted(ours.owners),
        applied=applied,
        offsets_in_progress={
            name: progress.request_id for name, progress in sorted(ours.offsets_progress.items())
        },
    )


class _StatusCache(dict[rec.StatusValue, InstanceStatus]):
    """Statuses repeat (same state, worker, generation): build each distinct one once."""

    def __missing__(self, value: rec.StatusValue) -> InstanceStatus:
        status = self[value] = rec.to_instance_status(value)
        return status


def _live_connector(
    name: str, config: ConfigReplay, status: StatusReplay, statuses: _StatusCache
) -> LiveConnector:
    props = config.configs.get(name)
    connector_status = status.connectors.get(name)
    task_statuses = status.tasks.get(name, {})
    return LiveConnector.model_construct(
        name=name,
        config=None if props is None else rec.string_properties(props),
        target_state=config.target_states.get(name, _STARTED),
        task_count=config.task_counts.get(name),
        task_configs=[rec.string_properties(t) for t in config.visible_task_configs(name)],
        inconsistent=name in config.inconsistent,
        connector_status=None if connector_status is None else statuses[connector_status],
        task_statuses={task: statuses[value] for task, value in sorted(task_statuses.items())},
    )
