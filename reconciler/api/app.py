"""The FastAPI application: Connect's read-only routes (`connect_routes`), ours, health and metrics.

Every route takes the board's snapshot once and answers from it (`state.py`), so a request
never sees half a tick and never waits for the loop. Answers are Connect's, down to the error
bodies (`{"error_code":…,"message":…}`) and the 404 messages; every POST, PUT, PATCH or DELETE
except `…/config/validate` is refused with 403 (`refusals.py`).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from reconciler.api import health, schemas
from reconciler.api.connect_routes import router as connect_router
from reconciler.api.http import ConnectJSON, Context, NotAnswerable, context, error, errors
from reconciler.api.metrics import CONTENT_TYPE, Metrics
from reconciler.api.refusals import add_refusals
from reconciler.api.state import Board
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.store import read_view
from reconciler.kafka.settings import KafkaSettings
from reconciler.render import connect_rest as shapes
from reconciler.render.offsets_history import history
from reconciler.render.status_view import listed, status_json, status_view

ours = APIRouter()


def create_app(board: Board, metrics: Metrics, settings: KafkaSettings, *, stale_after_s: float,
               server_version: tuple[str, str]) -> FastAPI:
    """The application over `board`."""
    app = FastAPI(
        title="connect-reconciler", version=server_version[0], default_response_class=ConnectJSON,
        description="Kafka Connect's REST API, read-only (KIP-304): the manifests are the only way to change state.",
        docs_url=None, redoc_url=None,
    )
    app.state.context = Context(
        board=board, metrics=metrics, settings=settings, stale_after_s=stale_after_s, server_version=server_version
    )
    _handlers(app)
    app.include_router(connect_router)
    app.include_router(ours)
    add_refusals(app)
    return app


@ours.get("/connectors/{connector}/batch", response_model=schemas.LastBatchDoc, responses=errors(404, 503),
          summary="Ours: when the runtime last ran the connector's tasks, and how that went")
async def last_batch(connector: str, request: Request) -> Any:
    live = context(request).live()
    body = shapes.last_batch(live, connector)
    if body is None:
        raise NotAnswerable(404, f"No batch of connector {connector} has run yet")
    return ConnectJSON(body)


@ours.get("/status", response_model=schemas.StatusTable, responses=errors(503),
          summary="Ours: what `reconciler status` prints, its rows and notes")
async def status_table(request: Request) -> Any:
    live = context(request).live()
    return ConnectJSON(status_json(status_view(live, listed(live), details=False)))


@ours.get("/connectors/{connector}/offsets/history", response_model=schemas.OffsetsHistory,
          responses=errors(404, 503), summary="Ours: `reconciler offsets NAME --history`, the rollback snapshots")
def offsets_history(connector: str, request: Request) -> Any:
    view = context(request)
    found = view.existing(connector)
    try:  # the snapshots are not in the loop's view: read as `/offsets` reads, from Kafka
        state = read_view(view.app.settings)
    except ReconcilerError as exc:
        raise NotAnswerable(503, f"Reading the offsets history of connector {connector} failed: {exc.message}") from exc
    return ConnectJSON({"history": [dataclasses.asdict(e) for e in history(state, found.name)]})


@ours.get("/healthz", response_model=schemas.Liveness, summary="The process is alive")
async def healthz(request: Request) -> Any:
    return ConnectJSON(health.liveness(context(request).state, time.time()))


# `strict` is a query parameter: a value that is not a boolean is Connect-style 400, as every bad request here.
@ours.get("/readyz", response_model=schemas.Readiness, responses={503: {"model": schemas.Readiness}, **errors(400)},
          summary="The last reconcile succeeded and the broker answered (invalid manifests: degraded, "
          "still 200 unless strict=true)")
async def readyz(request: Request, strict: bool = False) -> Any:
    view = context(request)
    status, body = health.readiness(view.state, time.time(), view.app.stale_after_s, strict=strict)
    return ConnectJSON(body, status_code=status)


@ours.get("/metrics", response_class=Response, responses={200: {"content": {CONTENT_TYPE: {}}}},
          summary="Prometheus metrics, in Connect's names as Strimzi exposes them")
def prometheus_metrics(request: Request) -> Response:
    return Response(context(request).app.metrics.render(), media_type=CONTENT_TYPE)


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
