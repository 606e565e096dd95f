"""What every route shares: Connect's JSON and error bodies, and the snapshot a request reads."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from fastapi.responses import JSONResponse

from reconciler.api import schemas
from reconciler.api.metrics import Metrics
from reconciler.api.state import ApiState, Board
from reconciler.render import connect_rest as shapes
from reconciler.core.live import LiveConnector, LiveState
from reconciler.kafka.settings import KafkaSettings

NOT_READ_YET = "The worker has not read the cluster's state yet; try again after its first reconcile"


class ConnectJSON(JSONResponse):
    """Compact JSON as Jackson writes it; a lone surrogate (Java strings may hold one) is escaped."""

    def render(self, content: Any) -> bytes:
        try:
            return json.dumps(content, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        except UnicodeEncodeError:
            return json.dumps(content, separators=(",", ":")).encode("ascii")


def error(status: int, message: str) -> ConnectJSON:
    """Connect's `ErrorMessage` body."""
    return ConnectJSON({"error_code": status, "message": message}, status_code=status)


def errors(status: int, *more: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI `responses` of a route that may answer these Connect errors."""
    return {code: {"model": schemas.ErrorMessage} for code in (status, *more)}


class NotAnswerable(Exception):
    """Raised inside a route: answer with this Connect error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True, kw_only=True)
class Context:
    """The application's parts, at `app.state.context`."""

    board: Board
    metrics: Metrics
    settings: KafkaSettings
    stale_after_s: float
    server_version: tuple[str, str]  # (version, commit) for `GET /`


@dataclass(frozen=True)
class View:
    """One request's view: the snapshot taken when it started, and the app's parts."""

    state: ApiState
    app: Context

    def live(self) -> LiveState:
        if self.state.live is None:
            raise NotAnswerable(503, NOT_READ_YET)
        return self.state.live

    def existing(self, name: str) -> LiveConnector:
        """The connector, or Java's 404 when it has no config."""
        found = self.live().connector(name)
        if found is None or not found.exists:
            raise NotAnswerable(404, shapes.connector_not_found_message(name))
        return found

    def sensitive(self, name: str) -> frozenset[str]:
        """The keys to mask besides those `core.redact` calls secret by name: the manifests'
        (`spec.sensitive`, values from placeholders) and those recorded at apply."""
        recorded = self.state.live.sensitive.get(name, ()) if self.state.live is not None else ()
        return self.state.sensitive.get(name, frozenset()) | frozenset(recorded)

    def all_sensitive(self) -> dict[str, frozenset[str]]:
        live = self.live()
        return {name: self.sensitive(name) for name in set(self.state.sensitive) | set(live.sensitive)}


def context(request: Request) -> View:
    app: Context = request.app.state.context
    return View(app.board.state, app)
