"""A connector's offsets as `reconciler offsets NAME` shows them (and the REST API can): the
current ones, Connect's `GET /connectors/{name}/offsets` body, and the history of rollback
snapshots its offsets requests took (id, when, whether applied, the offsets then). Read-only:
a group without its topics is an error.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import read_view
from reconciler.kafka.replay.topics import StoreView
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import not_found_message
from reconciler.offsets.state import current_body


@dataclass(frozen=True, kw_only=True)
class OffsetsSnapshot:
    """One snapshot taken before an offsets request ran (its fields in the JSON's order)."""

    id: str
    taken_at: str  # ISO 8601, UTC, milliseconds
    status: str  # applied, in progress (after step N), not applied
    applied_at: str | None
    offsets: list[dict[str, Any]]


def current_offsets(settings: KafkaSettings, name: str) -> list[dict[str, Any]]:
    """The `offsets` array of Connect's `GET /connectors/{name}/offsets`."""
    state = _read(settings, name)
    config = state.live.connectors[name].config
    assert config is not None  # `_read` refused a connector without one
    return current_body(settings, name, config)


def offsets_history(settings: KafkaSettings, name: str) -> list[OffsetsSnapshot]:
    return history(_read(settings, name), name)


def _read(settings: KafkaSettings, name: str) -> StoreView:
    state = read_view(settings)  # read-only: a group without its topics is an error
    connector = state.live.connector(name)
    if connector is None or connector.config is None:
        raise ReconcilerError(not_found_message(name))
    return state


def history(state: StoreView, name: str) -> list[OffsetsSnapshot]:
    """The connector's snapshots, oldest first."""
    applied = state.applied_offsets.get(name, {})
    in_progress = state.progress.get(name)
    entries = []
    for (connector, request_id), snapshot in state.snapshots.items():
        if connector != name:
            continue
        if request_id in applied:
            status = "applied"
        elif in_progress is not None and in_progress.request_id == request_id:
            status = f"in progress (after step {in_progress.step})"
        else:
            status = "not applied"
        entries.append(
            OffsetsSnapshot(
                id=request_id,
                taken_at=_iso(snapshot.taken_at_ms),
                status=status,
                applied_at=_iso(applied[request_id]) if request_id in applied else None,
                offsets=snapshot.offsets,
            )
        )
    return sorted(entries, key=lambda e: (e.taken_at, e.id))


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc).isoformat(timespec="milliseconds")
