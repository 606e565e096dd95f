"""403 for every request that would change state: the manifests are the only way to change it.

KIP-304 keeps a static deployment's REST API for health checks and diagnostics. Connect's own
mutating routes are listed in the OpenAPI document, each answering 403, so a client reading
the document sees the contract; a middleware refuses every POST, PUT, PATCH and DELETE on any
path before routing (so a GET route's path answers 403, not 405, to a DELETE).
`PUT /connector-plugins/{plugin}/config/validate` is the one exception: it changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from reconciler.api.schemas import ErrorMessage

READ_ONLY_MESSAGE = (
    "This Connect REST API is read-only: connectors are changed only through their manifests "
    "(edit the manifest and let the reconciler apply it)"
)
MUTATING = ["POST", "PUT", "PATCH", "DELETE"]
VALIDATE = re.compile(r"/connector-plugins/[^/]+/config/validate/?")

# Kafka 4.3.1's mutating routes (ConnectorsResource, LoggingResource, ConnectorPluginsResource's
# validate aside), with what each would have done.
CONNECT_MUTATIONS: list[tuple[str, str, str]] = [
    ("POST", "/connectors", "create a connector"),
    ("PUT", "/connectors/{connector}/config", "create or reconfigure a connector"),
    ("PATCH", "/connectors/{connector}/config", "patch a connector's config"),
    ("DELETE", "/connectors/{connector}", "delete a connector"),
    ("POST", "/connectors/{connector}/restart", "restart a connector"),
    ("PUT", "/connectors/{connector}/pause", "pause a connector"),
    ("PUT", "/connectors/{connector}/resume", "resume a connector"),
    ("PUT", "/connectors/{connector}/stop", "stop a connector"),
    ("POST", "/connectors/{connector}/tasks/{task}/restart", "restart a task"),
    ("PATCH", "/connectors/{connector}/offsets", "alter a connector's offsets"),
    ("DELETE", "/connectors/{connector}/offsets", "reset a connector's offsets"),
    ("PUT", "/connectors/{connector}/topics/reset", "reset a connector's active topics"),
    ("PUT", "/admin/loggers/{logger}", "change a log level"),
]


def refused() -> JSONResponse:
    return JSONResponse({"error_code": 403, "message": READ_ONLY_MESSAGE}, status_code=403)


def _handler(path: str) -> Callable[..., Any]:
    """A handler declaring the path's parameters, so the document describes them."""
    if "{task}" in path:
        async def task_route(connector: str, task: str) -> Any:
            return refused()
        return task_route
    if "{connector}" in path:
        async def connector_route(connector: str) -> Any:
            return refused()
        return connector_route
    if "{logger}" in path:
        async def logger_route(logger: str) -> Any:
            return refused()
        return logger_route

    async def plain_route() -> Any:
        return refused()
    return plain_route


class ReadOnly:
    """ASGI middleware: 403 for every mutating request but a validation."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in MUTATING:
            if not (scope["method"] == "PUT" and VALIDATE.fullmatch(scope["path"])):
                await refused()(scope, receive, send)
                return
        await self.app(scope, receive, send)


def add_refusals(app: FastAPI) -> None:
    responses: dict[int | str, dict[str, Any]] = {403: {"model": ErrorMessage, "description": READ_ONLY_MESSAGE}}
    for method, path, what in CONNECT_MUTATIONS:
        app.add_api_route(
            path, _handler(path), methods=[method], responses=responses, status_code=403,
            summary=f"Refused (would {what}): read-only", response_model=ErrorMessage,
        )
    app.add_middleware(ReadOnly)
