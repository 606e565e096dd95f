"""Kafka Connect's read routes (Kafka 4.3.1's `RootResource`, `ConnectorsResource`,
`ConnectorPluginsResource`), answered from the snapshot with `render.connect_rest`'s bodies.

Only `/offsets` reads Kafka itself, as Java's does (offsets are not in the loop's snapshot): a
plain `def`, so FastAPI runs it in its thread pool. `/topics` answers for any name, as Java's.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request

from reconciler.api import plugin_catalog, schemas
from reconciler.api.http import ConnectJSON, NotAnswerable, context, errors
from reconciler.errors import ReconcilerError
from reconciler.offsets.state import current_body
from reconciler.render import connect_rest as shapes

router = APIRouter()


@router.get("/", response_model=schemas.ServerInfo, summary="This worker's version and its Kafka cluster")
async def server_info(request: Request) -> Any:
    view = context(request)
    version, commit = view.app.server_version
    return ConnectJSON({"version": version, "commit": commit, "kafka_cluster_id": view.state.broker.cluster_id})


@router.get("/connectors", response_model=list[str] | dict[str, schemas.Expanded], responses=errors(503),
            summary="The connectors; `expand=status` and/or `expand=info` for more")
async def list_connectors(request: Request, expand: Annotated[list[str] | None, Query()] = None) -> Any:
    view = context(request)
    if expand is None:
        return ConnectJSON(shapes.connector_names(view.live()))
    return ConnectJSON(shapes.expanded(view.live(), expand, view.all_sensitive()))


@router.get("/connectors/{connector}", response_model=schemas.ConnectorInfo, responses=errors(404, 503))
async def connector_info(connector: str, request: Request) -> Any:
    view = context(request)
    found = view.existing(connector)
    return ConnectJSON(shapes.connector_info(found, view.sensitive(connector)))


@router.get("/connectors/{connector}/config", response_model=schemas.Config, responses=errors(404, 503))
async def connector_config(connector: str, request: Request) -> Any:
    view = context(request)
    found = view.existing(connector)
    return ConnectJSON(shapes.shown_config(found.config or {}, view.sensitive(connector)))


@router.get("/connectors/{connector}/status", response_model=schemas.ConnectorStateInfo, responses=errors(404, 503))
async def connector_status(connector: str, request: Request) -> Any:
    live = context(request).live()
    found = live.connector(connector)
    body = None if found is None else shapes.connector_status(found)
    if body is None:
        raise NotAnswerable(404, shapes.no_status_message(connector))
    return ConnectJSON(shapes.with_our_fields(body, live))


@router.get("/connectors/{connector}/tasks", response_model=list[schemas.TaskInfo], responses=errors(404, 503))
async def task_configs(connector: str, request: Request) -> Any:
    view = context(request)
    return ConnectJSON(shapes.task_infos(view.existing(connector), view.sensitive(connector)))


@router.get("/connectors/{connector}/tasks/{task}/status", response_model=schemas.TaskState,
            responses=errors(404, 503))
async def task_status(connector: str, task: int, request: Request) -> Any:
    body = shapes.task_status(context(request).live().connector(connector), task)
    if body is None:
        raise NotAnswerable(404, shapes.no_task_status_message(connector, task))
    return ConnectJSON(body)


@router.get("/connectors/{connector}/offsets", response_model=schemas.ConnectorOffsets, responses=errors(404, 503))
def connector_offsets(connector: str, request: Request) -> Any:
    view = context(request)
    found = view.existing(connector)
    try:
        return ConnectJSON({"offsets": current_body(view.app.settings, found.name, found.config or {})})
    except ReconcilerError as exc:
        raise NotAnswerable(503, f"Reading the offsets of connector {connector} failed: {exc.message}") from exc


@router.get("/connectors/{connector}/topics", response_model=dict[str, schemas.ActiveTopics], responses=errors(503),
            summary="KIP-558 active topics, for any name (as Java)")
async def active_topics(connector: str, request: Request) -> Any:
    return ConnectJSON(shapes.active_topics(context(request).live(), connector))


@router.get("/connector-plugins", response_model=list[schemas.PluginInfo], responses=errors(400))
def connector_plugins(connectors_only: Annotated[bool, Query(alias="connectorsOnly")] = True) -> Any:
    return ConnectJSON(plugin_catalog.plugin_infos())  # we have connectors only: both answers are the same


@router.put("/connector-plugins/{plugin}/config/validate", response_model=schemas.ConfigInfos,
            responses=errors(400, 404, 500), summary="Validates a config; changes nothing")
def validate_config(plugin: str, body: dict[str, str | int | float | bool | None]) -> Any:
    try:
        return ConnectJSON(plugin_catalog.validate(plugin, plugin_catalog.config_from_body(body)))
    except plugin_catalog.BadRequest as exc:
        raise NotAnswerable(400, exc.message) from exc
    except plugin_catalog.UnknownPlugin as exc:
        raise NotAnswerable(404, exc.message) from exc
