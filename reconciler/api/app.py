"""The FastAPI application: Connect's read-only routes, ours, health and metrics.

Every route takes the board's snapshot once and answers from it (`state.py`), so a request
never sees half a tick and never waits for the loop. Only `/offsets` reads Kafka itself, as
Connect's does (offsets are not part of the loop's snapshot), in FastAPI's thread pool.

Answers are Connect's, down to the error bodies (`{"error_code":…,"message":…}`) and the
404 messages; every POST, PUT, PATCH or DELETE except `…/config/validate` is refused with
403 (see `refusals.py`).
"""

from __future__ import annotations

import json
import time
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from reconciler.api import health, plugins, schemas
from reconciler.api.metrics import CONTENT_TYPE, Metrics
from reconciler.api.refusals import add_refusals
from reconciler.api.state import ApiState, Board
from reconciler.core import connect_rest as shapes
from reconciler.core.live import LiveConnector
from reconciler.errors import ReconcilerError
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


class NotAnswerable(Exception):
    """Raised inside a route: answer with this Connect error."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _errors(status: int, *more: int) -> dict[int | str, dict[str, Any]]:
    return {code: {"model": schemas.ErrorMessage} for code in (status, *more)}


def create_app(board: Board, metrics: Metrics, settings: KafkaSettings, *, stale_after_s: float,
               server_version: tuple[str, str]) -> FastAPI:
    """The application over `board`; `server_version` is (version, commit) for `GET /`."""
    app = FastAPI(
        title="connect-reconciler", version=server_version[0], default_response_class=ConnectJSON,
        description="Kafka Connect's REST API, read-only (KIP-304): the manifests are the only way to change state.",
        docs_url=None, redoc_url=None,
    )
    _handlers(app)

    def snapshot() -> tuple[ApiState, Any]:
        state = board.state
        if state.live is None:
            raise NotAnswerable(503, NOT_READ_YET)
        return state, state.live

    def existing(name: str) -> tuple[ApiState, LiveConnector]:
        state, live = snapshot()
        found = live.connector(name)
        if found is None or not found.exists:
            raise NotAnswerable(404, shapes.connector_not_found_message(name))
        return state, found

    @app.get("/", response_model=schemas.ServerInfo, summary="This worker's version and its Kafka cluster")
    async def server_info() -> Any:
        version, commit = server_version
        return {"version": version, "commit": commit, "kafka_cluster_id": board.state.broker.cluster_id}

    @app.get("/connectors", response_model=list[str] | dict[str, schemas.Expanded], responses=_errors(503),
             summary="The connectors; `expand=status` and/or `expand=info` for more")
    async def list_connectors(expand: Annotated[list[str] | None, Query()] = None) -> Any:
        state, live = snapshot()
        if expand is None:
            return ConnectJSON(shapes.connector_names(live))
        return ConnectJSON(shapes.expanded(live, expand, state.sensitive))

    @app.get("/connectors/{connector}", response_model=schemas.ConnectorInfo, responses=_errors(404, 503))
    async def connector_info(connector: str) -> Any:
        state, found = existing(connector)
        return ConnectJSON(shapes.connector_info(found, state.sensitive.get(found.name, ())))

    @app.get("/connectors/{connector}/config", response_model=schemas.Config, responses=_errors(404, 503))
    async def connector_config(connector: str) -> Any:
        state, found = existing(connector)
        return ConnectJSON(shapes.shown_config(found.config or {}, state.sensitive.get(found.name, ())))

    @app.get("/connectors/{connector}/status", response_model=schemas.ConnectorStateInfo, responses=_errors(404, 503))
    async def connector_status(connector: str) -> Any:
        _, live = snapshot()
        found = live.connector(connector)
        body = None if found is None else shapes.connector_status(found)
        if body is None:
            raise NotAnswerable(404, shapes.no_status_message(connector))
        return ConnectJSON(body)

    @app.get("/connectors/{connector}/tasks", response_model=list[schemas.TaskInfo], responses=_errors(404, 503))
    async def task_configs(connector: str) -> Any:
        state, found = existing(connector)
        return ConnectJSON(shapes.task_infos(found, state.sensitive.get(found.name, ())))

    @app.get("/connectors/{connector}/tasks/{task}/status", response_model=schemas.TaskState, responses=_errors(404, 503))
    async def task_status(connector: str, task: int) -> Any:
        _, live = snapshot()
        body = shapes.task_status(live.connector(connector), task)
        if body is None:
            raise NotAnswerable(404, shapes.no_task_status_message(connector, task))
        return ConnectJSON(body)

    @app.get("/connectors/{connector}/offsets", response_model=schemas.ConnectorOffsets, responses=_errors(404, 503))
    def connector_offsets(connector: str) -> Any:  # a plain def: reads Kafka, in the thread pool
        from reconciler.offsets.state import current_body

        _, found = existing(connector)
        try:
            return ConnectJSON({"offsets": current_body(settings, found.name, found.config or {})})
        except ReconcilerError as exc:
            raise NotAnswerable(503, f"Reading the offsets of connector {connector} failed: {exc.message}") from exc

    @app.get("/connectors/{connector}/topics", response_model=dict[str, schemas.ActiveTopics], responses=_errors(503),
             summary="KIP-558 active topics, for any name (as Java)")
    async def active_topics(connector: str) -> Any:
        _, live = snapshot()
        return ConnectJSON(shapes.active_topics(live, connector))

    @app.get("/connectors/{connector}/batch", response_model=schemas.LastBatchDoc, responses=_errors(404, 503),
             summary="Ours: when the runtime last ran the connector's tasks, and how that went")
    async def last_batch(connector: str) -> Any:
        _, live = snapshot()
        body = shapes.last_batch(live, connector)
        if body is None:
            raise NotAnswerable(404, f"No batch of connector {connector} has run yet")
        return ConnectJSON(body)

    @app.get("/connector-plugins", response_model=list[schemas.PluginInfo], responses=_errors(400))
    def connector_plugins(connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> Any:
        return ConnectJSON(plugins.plugin_infos())

    @app.put("/connector-plugins/{plugin}/config/validate", response_model=schemas.ConfigInfos,
             responses=_errors(400, 404, 500), summary="Validates a config; changes nothing")
    def validate_config(plugin: str, body: dict[str, str | int | float | bool | None]) -> Any:
        try:
            return ConnectJSON(plugins.validate(plugin, plugins.config_from_body(body)))
        except plugins.BadRequest as exc:
            raise NotAnswerable(400, exc.message) from exc
        except plugins.UnknownPlugin as exc:
            raise NotAnswerable(404, exc.message) from exc

    @app.get("/healthz", response_model=schemas.Liveness, summary="The process is alive")
    async def healthz() -> Any:
        return ConnectJSON(health.liveness(board.state, time.time()))

    @app.get("/readyz", response_model=schemas.Readiness, responses={503: {"model": schemas.Readiness}},
             summary="The last reconcile succeeded, the manifests are valid, the broker answered")
    async def readyz() -> Any:
        status, body = health.readiness(board.state, time.time(), stale_after_s)
        return ConnectJSON(body, status_code=status)

    @app.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}},
             summary="Prometheus metrics, in Connect's names as Strimzi exposes them")
    def prometheus_metrics() -> Response:
        return Response(metrics.render(), media_type=CONTENT_TYPE)

    add_refusals(app)
    return app


def _handlers(app: FastAPI) -> None:
    @app.exception_handler(NotAnswerable)
    async def not_answerable(request: Request, exc: NotAnswerable) -> Response:
        return error(exc.status, exc.message)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        # Jersey's texts, as Connect answers an unknown path or method.
        phrase = {404: "Not Found", 405: "Method Not Allowed"}.get(exc.status_code, str(exc.detail))
        response = error(exc.status_code, f"HTTP {exc.status_code} {phrase}")
        response.headers.update(exc.headers or {})
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> Response:
        problems = exc.errors()
        if any(p.get("loc", ("",))[0] == "path" for p in problems):
            return error(404, "HTTP 404 Not Found")  # e.g. a task id that is not a number, as Jersey
        detail = "; ".join(f"{'.'.join(map(str, p.get('loc', ())))}: {p.get('msg')}" for p in problems)
        return error(400, f"Bad request: {detail}")
