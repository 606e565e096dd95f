"""A connector's offsets history as `reconciler offsets NAME` and the REST API's
`GET /connectors/{name}/offsets/history` show it: the rollback snapshots its offsets requests
took (id, when, whether applied, the offsets then). Pure: a `StoreView` in, snapshots out.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

from reconciler.kafka.replay.topics import StoreView


@dataclass(frozen=True, kw_only=True)
class OffsetsSnapshot:
    """One snapshot taken before an offsets request ran (its fields in the JSON's order)."""

    id: str
    taken_at: str  # ISO 8601, UTC, milliseconds
    status: str  # applied, in progress (after step N), not applied
    applied_at: str | None
    offsets: list[dict[str, Any]]


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
