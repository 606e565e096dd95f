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

import functools
import logging
from collections.abc import Iterable
from typing import Any, NamedTuple, Protocol

from pydantic_core import from_json

from reconciler.core.live import ConnectTargetState
from reconciler.kafka import records as rec
from reconciler.kafka.live_build import build_live_state  # re-exported: built from the replays
from reconciler.kafka.records import Invalid, OffsetsProgress, OffsetsSnapshot, OwnerInfo

log = logging.getLogger(__name__)

Properties = dict[str, Any]  # as read; non-string values are converted in build_live_state
_STARTED = ConnectTargetState.STARTED
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_PROBLEMS = 100
_STATUS_CACHE_SIZE = 4096
# Caches of the replays' fast paths. Keys: one entry per distinct key (a topic's key set is what
# Connect itself keeps in memory); small values (commits, target states) repeat byte for byte.
_ROUTE_CACHE_SIZE = 1_000_000
_VALUE_CACHE_SIZE = 4096

# Record kinds with a fast path; a route is (kind, connector name, task id).
_TASK, _CONNECTOR, _COMMIT, _TARGET_STATE = range(4)
_Route = tuple[int, str, int]


class ConsumedRecord(Protocol):
    """A record as consumed (a confluent-kafka `Message` is one): what `feed` reads of it."""

    def key(self) -> bytes | None: ...

    def value(self) -> bytes | None: ...

    def offset(self) -> int: ...


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


_T, _C = ord("t"), ord("c")


def _text(data: bytes) -> str:
    """UTF-8 text as `decode("utf-8", "replace")` gives it; the strict codec is faster."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def _key_text(key: bytes | None) -> str:
    return "<null>" if key is None else key.decode("utf-8", "replace")


class _Replay:
    """Bookkeeping shared by the replays: last offset seen, skipped records (for diagnostics)."""

    def __init__(self) -> None:
        self.offset = -1
        self.skipped = 0
        self.problems: list[str] = []

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        raise NotImplementedError

    def feed(self, records: Iterable[ConsumedRecord]) -> None:
        """`apply` each record in order (the busy topics' replays do it faster)."""
        apply = self.apply
        for record in records:
            apply(record.key(), record.value(), record.offset())

    def _track_offset(self, records: list[ConsumedRecord]) -> None:
        """What `apply` leaves in `offset` after these records: the last one not negative."""
        for record in reversed(records):
            offset = record.offset()
            if offset >= 0:
                self.offset = offset
                return

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
        self._routes: dict[bytes | None, _Route] = {}
        self._counts: dict[bytes, int] = {}
        self._states: dict[bytes, ConnectTargetState | Invalid] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        """One record, every kind and every odd case: the reference `feed` is checked against."""
        if offset >= 0:
            self.offset = offset
        self._apply_parsed(key, value, offset)

    def feed(self, records: Iterable[ConsumedRecord]) -> None:
        """`apply` each record in order, with the same result, several times faster.

        The hot loop of reading a config topic. Keys repeat (every update of a connector rewrites
        the same keys), so their parse is cached; so are the small values that repeat byte for
        byte (target states, commits). Only the outcomes the fast paths can see at once are
        handled here; anything else (tombstones, odd keys, values Java would skip) goes to `apply`.
        """
        records = records if type(records) is list else list(records)
        routes, route_of, apply = self._routes, self._route, self.apply
        deferred_by_name, configs, target_states = self.deferred, self.configs, self.target_states
        states, counts, commit_tasks = self._states, self._counts, self._commit_tasks
        for record in records:
            key, value = record.key(), record.value()
            route = routes.get(key) or route_of(key)
            if route is not None and value is not None:
                kind, name = route[0], route[1]
                if kind <= _CONNECTOR:  # _TASK or _CONNECTOR: a properties map
                    try:
                        obj = from_json(value)
                    except ValueError:
                        obj = None
                    props = obj.get("properties") if type(obj) is dict else None
                    if type(props) is dict:
                        if kind == _TASK:
                            deferred = deferred_by_name.get(name)
                            if deferred is None:
                                deferred = deferred_by_name[name] = {}
                            deferred[route[2]] = props
                        else:
                            configs[name] = props
                            if name not in target_states:
                                target_states[name] = _STARTED
                        continue
                elif kind == _TARGET_STATE:
                    state = states.get(value) or self._target_state_value(value)
                    if type(state) is ConnectTargetState:
                        target_states[name] = state
                        continue
                else:  # _COMMIT
                    count = counts.get(value)
                    if count is None:
                        count = self._commit_count(value)
                    if count is not None and name in configs:
                        commit_tasks(name, count)
                        continue
            apply(key, value, record.offset())
        self._track_offset(records)

    def _route(self, key: bytes | None) -> _Route | None:
        """The cached dispatch of a well-formed key of the four common kinds; None otherwise.

        Parsed on the bytes, as `apply` parses the decoded text: the prefixes are ASCII, and `-`
        is never part of a multi-byte UTF-8 sequence nor swallowed by the decoder's replacement
        of invalid ones, so both split a key at the same places.
        """
        if not key:
            return None
        first = key[0]  # one comparison instead of up to four startswith calls
        if first == _T:
            if key.startswith(b"task-"):
                cut = key.rfind(b"-")
                tail = key[cut + 1 :]
                if cut < 5 or not tail.isdigit() or len(tail) >= 10:  # bytes.isdigit: ASCII only
                    return None
                route = (_TASK, _text(key[5:cut]), int(tail))
            elif key.startswith(b"target-state-"):
                route = (_TARGET_STATE, _text(key[13:]), 0)
            else:
                return None
        elif first == _C:
            if key.startswith(b"connector-"):
                route = (_CONNECTOR, _text(key[10:]), 0)
            elif key.startswith(b"commit-"):
                route = (_COMMIT, _text(key[7:]), 0)
            else:
                return None
        else:
            return None
        if len(self._routes) < _ROUTE_CACHE_SIZE:
            self._routes[key] = route
        return route

    def _commit_count(self, value: bytes) -> int | None:
        """The task count of a readable commit value (cached: they repeat); None otherwise."""
        obj = _parse(value)
        count = None if type(obj) is Invalid else rec.int_field_from_json(obj, "tasks")
        if type(count) is not int:
            return None
        if len(self._counts) < _VALUE_CACHE_SIZE:
            self._counts[value] = count
        return count

    def _target_state_value(self, value: bytes) -> ConnectTargetState | Invalid | None:
        """The state a target-state value sets or why not (cached); None: the JSON `null`."""
        state = self._states.get(value)
        if state is None:
            obj = _parse(value)
            if obj is None:  # the JSON text `null` reads as a tombstone, as in Java
                return None
            state = obj if type(obj) is Invalid else rec.target_state_from_json(obj)
            if len(self._states) < _VALUE_CACHE_SIZE:
                self._states[value] = state
        return state

    def _apply_parsed(self, key: bytes | None, value: bytes | None, offset: int) -> None:
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
        self._commit_tasks(name, count)

    def _commit_tasks(self, name: str, count: int) -> None:
        """A readable commit of an existing connector: the buffered task configs become visible."""
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
        committed = self.task_configs.get(name)
        if count <= 0 or committed is None or name in self.inconsistent:
            return []
        try:
            return [committed[i] for i in range(count)]
        except KeyError:  # (a complete commit always leaves every id 0..count-1 committed)
            return []


def _complete(deferred: dict[int, Properties] | None, count: int) -> bool:
    """Ids 0..count-1 all present; extra ids are fine (compaction leaves stale higher ones)."""
    if count <= 0:
        return True
    if deferred is None or len(deferred) < count:
        return False
    return deferred.keys() >= _task_ids(count)


@functools.lru_cache(maxsize=256)
def _task_ids(count: int) -> frozenset[int]:
    return frozenset(range(count))


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
        self._routes: dict[bytes | None, _Route] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        """One record, every kind and every odd case: the reference `feed` is checked against."""
        if offset >= 0:
            self.offset = offset
        self._apply_parsed(key, value)

    def feed(self, records: Iterable[ConsumedRecord]) -> None:
        """`apply` each record in order, with the same result, faster (keys' parse cached)."""
        routes, route_of, apply = self._routes, self._route, self.apply
        parsed, status_of, connectors, tasks_by_name = self._parsed, self._status, self.connectors, self.tasks
        last = -1
        for record in records:
            key, value, offset = record.key(), record.value(), record.offset()
            if offset >= 0:
                last = offset
            route = routes.get(key) or route_of(key)
            if route is not None and value is not None and route[1]:
                kind, name, task = route
                status = parsed.get(value) or status_of(_key_text(key), value)
                if status is None:  # unreadable: `_status` skipped it
                    continue
                if kind == _CONNECTOR:
                    connectors[name] = status
                    continue
                tasks = tasks_by_name.get(name)
                if tasks is None:
                    tasks = tasks_by_name[name] = {}
                cached = tasks.get(task)
                # `_put_task`'s rule: a late UNASSIGNED does not replace a RUNNING of its generation.
                if status[0] != "UNASSIGNED" or cached is None or cached[0] != "RUNNING" or cached[3] < status[3]:
                    tasks[task] = status
                continue
            apply(key, value, offset)
        if last >= 0:
            self.offset = last

    def _route(self, key: bytes | None) -> _Route | None:
        """The cached dispatch of a well-formed task or connector status key; None otherwise.

        Parsed on the bytes, as `apply` parses the text (see ConfigReplay._route).
        """
        if key is None:
            return None
        if key.startswith(b"status-task-"):
            cut = key.rfind(b"-")
            tail = key[cut + 1 :]
            if cut < 12 or not tail.isdigit() or len(tail) >= 10:
                return None
            route = (_TASK, key[12:cut].decode("utf-8", "replace"), int(tail))
        elif key.startswith(b"status-connector-"):
            route = (_CONNECTOR, key[17:].decode("utf-8", "replace"), 0)
        else:
            return None
        if len(self._routes) < _ROUTE_CACHE_SIZE:
            self._routes[key] = route
        return route

    def _apply_parsed(self, key: bytes | None, value: bytes | None) -> None:
        if key is None:
            self._skip("<null>", "status record without a key")
            return
        k = key.decode("utf-8", "replace")
        if k.startswith("status-task-"):
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

__all__ = [
    "ConfigReplay",
    "OffsetsReplay",
    "ReconcilerReplay",
    "RestartRequestRecord",
    "StatusReplay",
    "build_live_state",
    "partition_identity",
    "restart_impact",
]
