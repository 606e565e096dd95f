"""A connector's offsets as `reconciler offsets NAME` shows them: the current ones (Connect's
`GET /connectors/{name}/offsets` body) and the history of rollback snapshots its offsets requests
took (the read model in `render.offsets_history`, which the REST API serves too). Read-only: a
group without its topics is an error.
"""

from __future__ import annotations

from typing import Any

from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import read_view
from reconciler.kafka.replay.topics import StoreView
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import not_found_message
from reconciler.offsets.state import current_body
from reconciler.render.offsets_history import OffsetsSnapshot, history


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

