"""The config topic's state machine (docs/state-machine.md#config-topic-state-machine, Java's
`KafkaConfigBackingStore`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable

from pydantic_core import from_json

from reconciler.core.live import ConnectTargetState
from reconciler.core.transitions import PendingRestart, merge_restart
from reconciler.kafka.formats import records as rec
from reconciler.kafka.replay.marks import RestartLog
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay.base import (
    ROUTE_CACHE_SIZE,
    UNREADABLE,
    VALUE_CACHE_SIZE,
    ConsumedRecord,
    Properties,
    Replay,
    Route,
    PROPERTIES,
    log,
    parse_json,
    utf8,
)

_STARTED = ConnectTargetState.STARTED
# Record kinds with a fast path in `feed`.
_TASK, _CONNECTOR, _COMMIT, _TARGET_STATE = range(4)
_T, _C = ord("t"), ord("c")


class ConfigReplay(Replay):
    """The config topic: configs, target states, committed task configs, restart requests.

    `restart_after`: restart records at or below this offset were already handled by the caller
    (Java ignores every restart record read before the worker started; a reader that keeps its
    own watermark passes it here). None keeps them all. `restarts`: where every readable restart
    record also goes, whatever its offset (the runtime's rule of which are pending, `marks`).
    """

    def __init__(self, *, restart_after: int | None = None, restarts: RestartLog | None = None) -> None:
        super().__init__()
        self.configs: dict[str, Properties] = {}
        self.target_states: dict[str, ConnectTargetState] = {}
        self.task_counts: dict[str, int] = {}
        self.task_configs: dict[str, dict[int, Properties]] = {}  # committed, by task id
        self.deferred: dict[str, dict[int, Properties]] = {}  # read, waiting for `commit-`
        self.inconsistent: set[str] = set()
        # The connector config at its last complete commit (Java's `appliedConnectorConfigs`).
        self.applied_configs: dict[str, Properties] = {}
        self.pending_fencing: set[str] = set()
        self.task_count_records: dict[str, int] = {}  # `tasks-fencing-` (KIP-618)
        self.task_config_generations: dict[str, int] = {}
        self.restart_requests: dict[str, PendingRestart] = {}
        # connector → offset of its latest `connector-` record, readable or not (`marks`: a
        # config written after a failure restarts the connector).
        self.connector_offsets: dict[str, int] = {}
        self._restart_after = restart_after
        self._restarts = restarts
        self._routes: dict[bytes | None, Route] = {}
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
        the same keys), so their parse is cached; so are small values that repeat byte for byte
        (target states, commits). Anything the fast paths cannot see at once (tombstones, odd keys,
        values Java would skip, another shape of properties map) goes to `apply`."""
        records = records if type(records) is list else list(records)
        routes, route_of, apply = self._routes, self._route, self.apply
        deferred_by_name, configs, target_states = self.deferred, self.configs, self.target_states
        connector_offsets, decode = self.connector_offsets, PROPERTIES.decode
        states, counts, commit_tasks = self._states, self._counts, self._commit_tasks
        for record in records:
            key, value = record.key(), record.value()
            route = routes.get(key) or route_of(key)
            if route is None or value is None:
                apply(key, value, record.offset())
                continue
            kind, name = route[0], route[1]
            if kind <= _CONNECTOR:  # _TASK or _CONNECTOR: a properties map
                try:
                    props = decode(value).properties
                except UNREADABLE:  # not the shape Connect writes: `apply` decides
                    apply(key, value, record.offset())
                    continue
                if kind == _TASK:
                    deferred = deferred_by_name.get(name)
                    if deferred is None:
                        deferred = deferred_by_name[name] = {}
                    deferred[route[2]] = props
                else:
                    configs[name] = props
                    connector_offsets[name] = record.offset()
                    if name not in target_states:
                        target_states[name] = _STARTED
                continue
            if kind == _TARGET_STATE:
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

    def _route(self, key: bytes | None) -> Route | None:
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
                route = (_TASK, utf8(key[5:cut]), int(tail))
            elif key.startswith(b"target-state-"):
                route = (_TARGET_STATE, utf8(key[13:]), 0)
            else:
                return None
        elif first == _C:
            if key.startswith(b"connector-"):
                route = (_CONNECTOR, utf8(key[10:]), 0)
            elif key.startswith(b"commit-"):
                route = (_COMMIT, utf8(key[7:]), 0)
            else:
                return None
        else:
            return None
        if len(self._routes) < ROUTE_CACHE_SIZE:
            self._routes[key] = route
        return route

    def _commit_count(self, value: bytes) -> int | None:
        """The task count of a readable commit value (cached: they repeat); None otherwise."""
        obj = parse_json(value)
        count = None if type(obj) is Invalid else rec.int_field_from_json(obj, "tasks")
        if type(count) is not int:
            return None
        if len(self._counts) < VALUE_CACHE_SIZE:
            self._counts[value] = count
        return count

    def _target_state_value(self, value: bytes) -> ConnectTargetState | Invalid | None:
        """The state a target-state value sets or why not (cached); None: the JSON `null`."""
        state = self._states.get(value)
        if state is None:
            obj = parse_json(value)
            if obj is None:  # the JSON text `null` reads as a tombstone, as in Java
                return None
            state = obj if type(obj) is Invalid else rec.target_state_from_json(obj)
            if len(self._states) < VALUE_CACHE_SIZE:
                self._states[value] = state
        return state

    def _apply_parsed(self, key: bytes | None, value: bytes | None, offset: int) -> None:
        if key is None:
            self._skip("<null>", "config record without a key")
            return
        k = key.decode("utf-8", "replace")
        if k.startswith("connector-"):
            self.connector_offsets[k[10:]] = offset
        obj: object = None
        if value is not None:
            try:
                obj = from_json(value, allow_inf_nan=False)
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
        self.applied_configs.pop(name, None)

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
        # Ids 0..count-1 all buffered, extra (stale higher) ids allowed: with exactly `count`
        # distinct non-negative ids, that is "the highest is count-1" (the common case, cheaply).
        if (deferred is not None and len(deferred) == count and count > 0 and max(deferred) == count - 1) or _complete(
            deferred, count
        ):
            if deferred is not None:
                self.task_configs.setdefault(name, {}).update(deferred)
                generation = self.task_config_generations.get(name)
                self.task_config_generations[name] = 0 if generation is None else generation + 1
            self.inconsistent.discard(name)
            self.applied_configs[name] = self.configs[name]
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
        if self._restarts is not None:
            self._restarts.add(name, flags, offset)
        if self._restart_after is not None and offset <= self._restart_after:
            return
        new = PendingRestart(flags.include_tasks, flags.only_failed, offset)
        self.restart_requests[name] = merge_restart(self.restart_requests.get(name), new)

    def _tasks_fencing(self, name: str, obj: object, key: str) -> None:
        count = rec.int_field_from_json(obj, "task-count")
        if isinstance(count, Invalid):
            self._skip(key, count.reason)
            return
        self.task_count_records[name] = count
        self.pending_fencing.discard(name)

    def pop_restart_requests(self) -> dict[str, PendingRestart]:
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
