"""Our own `<group>-reconciler` topic's state machine (docs/record-formats.md#reconciler-topic)."""

from __future__ import annotations

import logging
from typing import Any

from reconciler.core.live import AutoRestartStatus, LastBatch, Waiting
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats.own_records import OffsetsSnapshot, OwnerInfo, RequestProgress
from reconciler.kafka.formats.records import Invalid
from reconciler.kafka.replay.base import Replay
from reconciler.kafka.replay.marks import FailureLog, RestartLog


class ReconcilerReplay(Replay):
    """Our own `<group>-reconciler` topic: ownership, applied request ids, offsets progress,
    rollback snapshots, which config keys are sensitive, each connector's last batch, why its
    tasks wait and its auto-restart history; and the runtime's marks (`marks`: restarts
    executed, failures)."""

    def __init__(self) -> None:
        super().__init__()
        self.restarts = RestartLog()
        self.failures = FailureLog()
        self.owners: dict[str, OwnerInfo] = {}
        self.applied_restart: dict[str, dict[str, int]] = {}  # name → id → applied-at
        self.applied_offsets: dict[str, dict[str, int]] = {}
        self.applied_topics_reset: dict[str, dict[str, int]] = {}
        # Each applied-request key kind's table.
        self._applied = {
            "applied-restart": self.applied_restart,
            "applied-offsets": self.applied_offsets,
            "applied-topics-reset": self.applied_topics_reset,
        }
        self.offsets_progress: dict[str, RequestProgress] = {}
        self.snapshots: dict[tuple[str, str], OffsetsSnapshot] = {}
        self.sensitive: dict[str, list[str]] = {}  # name → config keys its manifest made sensitive
        self.batches: dict[str, LastBatch] = {}
        self.waiting: dict[str, Waiting] = {}
        self.auto_restarts: dict[str, AutoRestartStatus] = {}

    def apply(self, key: bytes | None, value: bytes | None, offset: int = -1) -> None:
        if offset >= 0:
            self.offset = offset
        if self.restarts.on_reconciler(key, value) or self.failures.on_reconciler(key, value):
            return
        text = "<null>" if key is None else key.decode("utf-8", "replace")
        parsed = own.parse_reconciler_key(text)
        if parsed is None:
            self._skip(text, "unknown reconciler key", logging.DEBUG)
            return
        kind, name, request_id = parsed
        if kind == "owner":
            self._put(self.owners, name, None if value is None else own.decode_owner(value), text)
        elif kind == "offsets-progress":
            decoded = None if value is None else own.decode_request_progress(value)
            self._put(self.offsets_progress, name, decoded, text)
        elif kind == "sensitive":
            self._put(self.sensitive, name, None if value is None else own.decode_sensitive(value), text)
        elif kind == "batch":
            self._put(self.batches, name, None if value is None else own.decode_batch(value), text)
        elif kind == "wait":
            self._put(self.waiting, name, None if value is None else own.decode_wait(value), text)
        elif kind == "auto-restart":
            decoded_auto = None if value is None else own.decode_auto_restart(value)
            self._put(self.auto_restarts, name, decoded_auto, text)
        elif kind == "offsets-snapshot":
            decoded_snapshot = None if value is None else own.decode_offsets_snapshot(value)
            self._put(self.snapshots, (name, request_id or ""), decoded_snapshot, text)
        else:
            applied = self._applied[kind]
            at = None if value is None else own.decode_applied(value)
            self._put(applied.setdefault(name, {}), request_id or "", at, text)

    def _put(self, table: dict[Any, Any], key: Any, value: object, text: str) -> None:
        if value is None:
            table.pop(key, None)
        elif isinstance(value, Invalid):
            self._skip(text, value.reason)
        else:
            table[key] = value
