"""The OpenAPI document's models: Connect's REST entities (Kafka 4.3.1's `rest.entities`) and ours.

They only describe the bodies for `/openapi.json` (and the schemathesis test that holds every
answer to them); the routes build the bodies with `render.connect_rest` and return them as they
are, without a validation pass per request.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Config = dict[str, str | None]


class Entity(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorMessage(Entity):
    error_code: int
    message: str


class ServerInfo(Entity):
    version: str
    commit: str
    kafka_cluster_id: str | None


class ConnectorState(Entity):
    state: str
    worker_id: str
    version: str | None
    trace: str | None = Field(default=None, description="present only when not empty")


class TaskState(ConnectorState):
    id: int


class AutoRestart(Entity):
    """Ours, not Connect's: `spec.autoRestart` history, named after Strimzi's `AutoRestartStatus`
    (present only for a connector that has some)."""

    count: int
    lastRestartTimestamp: str
    nextRestartTimestamp: str | None


class ConnectorStateInfo(Entity):
    name: str
    connector: ConnectorState
    tasks: list[TaskState]
    type: Literal["source", "sink", "unknown"]
    autoRestart: AutoRestart | None = None


class ConnectorTaskId(Entity):
    connector: str
    task: int


class ConnectorInfo(Entity):
    name: str
    config: Config
    tasks: list[ConnectorTaskId]
    type: Literal["source", "sink", "unknown"]


class TaskInfo(Entity):
    id: ConnectorTaskId
    config: Config


class Expanded(Entity):
    status: ConnectorStateInfo | None = None
    info: ConnectorInfo | None = None


class ActiveTopics(Entity):
    topics: list[str]


class ConnectorOffset(Entity):
    partition: dict[str, Any]
    offset: dict[str, Any] | None


class ConnectorOffsets(Entity):
    offsets: list[ConnectorOffset]


class PluginInfo(Entity):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    class_: str = Field(alias="class")
    type: str
    version: str | None = None


class ConfigKeyInfo(Entity):
    name: str
    type: str
    required: bool
    default_value: str | None
    importance: str
    documentation: str
    group: str | None
    order_in_group: int
    width: str
    display_name: str
    dependents: list[str]


class ConfigValueInfo(Entity):
    name: str
    value: str | None
    recommended_values: list[str]
    errors: list[str]
    visible: bool


class ConfigInfo(Entity):
    definition: ConfigKeyInfo | None
    value: ConfigValueInfo | None


class ConfigInfos(Entity):
    name: str
    error_count: int
    groups: list[str]
    configs: list[ConfigInfo]


# --- ours ------------------------------------------------------------------------------------------


class TaskBatchDoc(Entity):
    id: int
    records: int
    bytes: int
    failed: bool


class LastBatchDoc(Entity):
    """When the runtime last ran the connector's tasks (not a Connect entity)."""

    name: str
    finished_at_ms: int
    outcome: Literal["succeeded", "failed"]
    records: int
    worker_id: str
    tasks: list[TaskBatchDoc]


class Check(Entity):
    ok: bool
    detail: str


class Readiness(Entity):
    status: Literal["ready", "degraded", "not ready"]
    checks: dict[str, Check]
    manifest_problems: list[str] | None = None


class Liveness(Entity):
    status: Literal["alive"]
    uptime_s: float
    worker_id: str


class StatusRow(Entity):
    """One row of `reconciler status`'s table (ours, not a Connect entity)."""

    name: str
    type: str
    target: str
    state: str | None = Field(description="null: applied, no status yet")
    tasks_running: int
    tasks_total: int
    failed_tasks: list[int]
    last_batch: str | None
    auto_restarts: AutoRestart | None


class StatusTable(Entity):
    """`GET /status`: what `reconciler status` prints, rows and notes (ours)."""

    connectors: list[StatusRow]
    notes: list[str]


class OffsetsSnapshotDoc(Entity):
    id: str
    taken_at: str
    status: str
    applied_at: str | None
    offsets: list[ConnectorOffset]


class OffsetsHistory(Entity):
    """`GET /connectors/{name}/offsets/history`: `reconciler offsets NAME --history` (ours)."""

    history: list[OffsetsSnapshotDoc]
