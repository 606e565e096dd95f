"""Status: a group's connectors and tasks as `reconciler status` shows them. Reading the live
state is this use case's part; the rows, notes and Connect's status documents are the read
model in `render.status_view`, which the REST API serves too (`GET /status`).
"""

from __future__ import annotations

from reconciler.core.live import LiveConnector, LiveState
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from reconciler.render.connect_rest import connector_not_found_message, shown_status


def read_status(settings: KafkaSettings) -> LiveState:
    """The group's live state, read-only (a group without its topics is an error)."""
    return read_live_state(settings)


def one(live: LiveState, name: str) -> LiveConnector:
    """The named connector; "Connector NAME not found" when it has neither config nor status."""
    connector = live.connector(name)
    if connector is None or shown_status(connector) is None:
        raise ReconcilerError(connector_not_found_message(name))
    return connector
