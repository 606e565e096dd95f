"""The status topic's state machine (docs/state-machine.md#status-semantics, Java's
`KafkaStatusBackingStore`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pydantic_core import from_json

from reconciler.core.live import InstanceState
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay.base import ROUTE_CACHE_SIZE, ConsumedRecord, Replay, Route, key_text, parse_json

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_STATUS_CACHE_SIZE = 4096
_NEVER = -(2**63)  # the deletion time of a connector without a tombstone seen
# Record kinds with a fast path in `feed`.
_TASK, _CONNECTOR = range(2)
# The states `feed` compares, bound once (a module global, not an attribute lookup per record).
_UNASSIGNED, _RUNNING = InstanceState.UNASSIGNED, InstanceState.RUNNING


class StatusReplay(Replay):
    """The status topic: latest status per connector and per task."""

    def __init__(self) -> None:
        super().__init__()
        self.connectors: dict[str, rec.StatusValue] = {}
        self.tasks: dict[str, dict[int, rec.StatusValue]] = {}
        # KIP-558 active topics: connector → topic → (task, discoverTimestamp).
        self.topics: dict[str, dict[str, tuple[int, int]]] = {}
        # Record timestamps, for the one rule that crosses keys: a connector-status tombstone
        # forgets the connector's task statuses. Connector and task keys hash to different
        # partitions, and a reader from offset 0 sees one partition's history before another's
        # (Java's live consumer sees them as written): the tombstone of an earlier deletion can
        # arrive after the task statuses of the connector created again since. So a tombstone
        # forgets only task statuses written before it, and a task status written before a
        # tombstone already seen is not taken.
        self._task_times: dict[str, dict[int, int]] = {}
        self._deleted_at: dict[str, int] = {}
        # Most status values are byte-identical (same state, worker and generation for many
        # tasks): each distinct value is parsed once.
        self._parsed: dict[bytes, rec.StatusValue] = {}
        self._routes: dict[bytes | None, Route] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1, timestamp: int = -1) -> None:
        """One record, every kind and every odd case: the reference `feed` is checked against.

        `timestamp`: the record's, in milliseconds; -1 when unknown (then a connector-status
        tombstone forgets every task status, as in Java).
        """
        if offset >= 0:
            self.offset = offset
        self._apply_parsed(key, value, timestamp)

    def feed(self, records: Iterable[ConsumedRecord]) -> None:
        """`apply` each record in order, with the same result, faster (keys' parse cached)."""
        routes, route_of, apply = self._routes, self._route, self.apply
        parsed, status_of, connectors, tasks_by_name = self._parsed, self._status, self.connectors, self.tasks
        times_by_name, deleted_at = self._task_times, self._deleted_at
        last = -1
        for record in records:
            key, value, offset = record.key(), record.value(), record.offset()
            stamp = record.timestamp()[1]
            if offset >= 0:
                last = offset
            route = routes.get(key) or route_of(key)
            if route is not None and value is not None and route[1]:
                kind, name, task = route
                status = parsed.get(value) or status_of(key_text(key), value)
                if status is None:  # unreadable: `_status` skipped it
                    continue
                if kind == _CONNECTOR:
                    connectors[name] = status
                    continue
                if deleted_at and stamp < deleted_at.get(name, _NEVER):  # `_put_task`'s first rule
                    continue
                tasks = tasks_by_name.get(name)
                if tasks is None:
                    tasks = tasks_by_name[name] = {}
                    times_by_name[name] = {}
                cached = tasks.get(task)
                # `_put_task`'s second rule: a late UNASSIGNED does not replace a RUNNING of its generation.
                if status[0] != _UNASSIGNED or cached is None or cached[0] != _RUNNING or cached[3] < status[3]:
                    tasks[task] = status
                    times_by_name[name][task] = stamp
                continue
            apply(key, value, offset, stamp)
        if last >= 0:
            self.offset = last

    def _route(self, key: bytes | None) -> Route | None:
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
        if len(self._routes) < ROUTE_CACHE_SIZE:
            self._routes[key] = route
        return route

    def _apply_parsed(self, key: bytes | None, value: bytes | None, stamp: int) -> None:
        if key is None:
            self._skip("<null>", "status record without a key")
            return
        k = key.decode("utf-8", "replace")
        if k.startswith("status-task-"):
            self._task(k, value, stamp)
        elif k.startswith("status-connector-"):
            self._connector(k, value, stamp)
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
            obj = from_json(value, allow_inf_nan=False)
            if type(obj) is dict:
                state, trace, worker = obj.get("state"), obj.get("trace"), obj.get("worker_id")
                generation, version = obj.get("generation"), obj.get("version")
                if (
                    type(generation) is int
                    and _INT32_MIN <= generation <= _INT32_MAX
                    and type(state) is str
                    and state in rec.STATUS_STATES
                    and type(worker) is str
                    and (trace is None or type(trace) is str)
                    and (version is None or type(version) is str)
                ):
                    return state, trace, worker, generation, version
        except ValueError:
            pass
        parsed = rec.status_from_json(parse_json(value))
        if isinstance(parsed, Invalid):  # Java drops unparseable statuses
            self._skip(key, parsed.reason)
            return None
        return parsed

    def _connector(self, key: str, value: bytes | None, stamp: int) -> None:
        name = key[17:]
        if not name:
            self._skip(key, "empty connector name")
            return
        if value is None:  # Java's remove(connector) also forgets the task statuses
            self.connectors.pop(name, None)
            self._forget_tasks(name, stamp)
            return
        status = self._status(key, value)
        if status is not None:
            self.connectors[name] = status

    def _forget_tasks(self, name: str, deleted_at: int) -> None:
        """The task statuses a connector-status tombstone at `deleted_at` removes (see __init__)."""
        if deleted_at < 0:
            self.tasks.pop(name, None)
            self._task_times.pop(name, None)
            return
        self._deleted_at[name] = max(deleted_at, self._deleted_at.get(name, _NEVER))
        tasks, times = self.tasks.get(name), self._task_times.get(name, {})
        if tasks is None:
            return
        for task in [t for t in tasks if times.get(t, -1) < deleted_at]:
            del tasks[task]
            times.pop(task, None)
        if not tasks:
            del self.tasks[name]
            self._task_times.pop(name, None)

    def _task(self, key: str, value: bytes | None, stamp: int) -> None:
        task_id = rec.parse_task_id(key, "status-task-")
        if task_id is None:
            self._skip(key, "cannot parse the task id")
            return
        name, task = task_id
        tasks = self.tasks.get(name)
        if value is None:
            if tasks is not None:
                tasks.pop(task, None)
                self._task_times.get(name, {}).pop(task, None)
            return
        self._put_task(key, name, task, value, stamp)

    def _put_task(self, key: str, name: str, task: int, value: bytes, stamp: int) -> None:
        status = self._status(key, value)
        if status is None:
            return
        if stamp < self._deleted_at.get(name, _NEVER):  # written before a deletion already seen
            return
        tasks = self.tasks.get(name)
        if tasks is None:
            tasks = self.tasks[name] = {}
        cached = tasks.get(task)
        # A worker that missed a rebalance may write UNASSIGNED after another wrote RUNNING.
        if status[0] == InstanceState.UNASSIGNED and cached is not None and cached[0] == InstanceState.RUNNING:
            if cached[3] >= status[3]:
                return
        tasks[task] = status
        self._task_times.setdefault(name, {})[task] = stamp

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
        obj = parse_json(value)
        inner = obj.get("topic") if type(obj) is dict else None
        task = rec.java_int(inner.get("task")) if type(inner) is dict else None
        stamp = inner.get("discoverTimestamp") if type(inner) is dict else None
        if task is None or type(stamp) is not int:
            self._skip(key, "invalid topic status value")
            return
        self.topics.setdefault(connector, {})[topic] = (task, stamp)
