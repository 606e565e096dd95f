"""Manifest models: the desired state a user declares, as pydantic models.

These models are the source of truth for the manifest format: the JSON Schema in
`schemas/connector.schema.json` is generated from them (`reconciler.manifests.schema`).
Pure: no YAML, no files. Where a manifest came from is kept beside the model, in
`DesiredConnector.source`, so diagnostics can point at `file:line:col`.
"""

from __future__ import annotations

import enum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

from reconciler.core.kinds import Kind, class_kind
from reconciler.core.offsets_rules import ALTER_NEEDS_OFFSETS, RESET_TAKES_NO_OFFSETS

API_VERSION = "reconciler.io/v1"
KIND_CONNECTOR = "Connector"

# Connect itself accepts almost any name; we keep to names that are safe as Kafka record keys,
# consumer group ids (`connect-<name>`) and file names, and say so in the schema.
CONNECTOR_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,248}$"

# Config values as written in YAML. Connect configs are string→string; numbers and booleans
# are accepted for convenience and normalised to Connect's string form (core.normalize).
ConfigValue = str | int | float | bool | None
# Connect's OffsetUtils.validateFormat: partition/offset maps hold only primitives.
OffsetPrimitive = str | int | float | bool | None

RequestId = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^\S+$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class TargetState(enum.StrEnum):
    """Declared state; Connect calls RUNNING `STARTED` in its config topic."""

    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


class Metadata(_Strict):
    name: Annotated[str, StringConstraints(pattern=CONNECTOR_NAME_PATTERN)] = Field(
        description="Connector name, unique across all manifest files."
    )
    labels: dict[str, str] = Field(default_factory=dict)


class RestartRequest(_Strict):
    """A one-shot KIP-745 restart request, applied once per `id`."""

    id: RequestId = Field(description="Unique id of this request; a new id is a new request.")
    # strict: the schema says boolean, so "yes"/1 must not slip through here either.
    includeTasks: bool = Field(default=False, strict=True, description="Also restart the tasks.")
    onlyFailed: bool = Field(
        default=False, strict=True, description="Only restart instances that are FAILED."
    )


class TopicsResetRequest(_Strict):
    """A one-shot KIP-558 request to forget the connector's active topics, applied once per `id`
    (Connect's `PUT /connectors/{name}/topics/reset`)."""

    id: RequestId = Field(description="Unique id of this request; a new id is a new request.")


class AutoRestart(_Strict):
    """Restart FAILED instances automatically, with Strimzi's back-off (`spec.autoRestart`).

    Each attempt restarts the failed connector and tasks (`includeTasks`, `onlyFailed`). The
    n-th attempt waits `min(n*n + n, 60)` minutes after the previous one; the count resets once
    the connector has stayed healthy for longer than its current back-off.
    """

    # strict: the schema says boolean / integer, so "yes" or "3" must not slip through either.
    enabled: bool = Field(
        default=True, strict=True, description="Restart failed connectors and tasks automatically."
    )
    # At least 1: Strimzi restarts once even with 0 (its first attempt skips the check);
    # `enabled: false` says "never" without that surprise.
    maxRestarts: int | None = Field(
        default=None,
        ge=1,
        strict=True,
        description="Give up after this many restarts in a row (default: no limit); "
        "then only a `spec.restart` request restarts the connector.",
    )


class OffsetEntry(_Strict):
    """One element of Connect's `PATCH /connectors/{name}/offsets` body."""

    partition: dict[str, OffsetPrimitive] = Field(
        description="Source partition map, or {kafka_topic, kafka_partition} for sinks."
    )
    offset: dict[str, OffsetPrimitive] | None = Field(
        description="Offset map ({kafka_offset: N} for sinks); null removes the partition's offset."
    )


class OffsetsAction(enum.StrEnum):
    ALTER = "alter"
    RESET = "reset"


class OffsetsRequest(_Strict):
    """A one-shot KIP-875 offsets request, applied once per `id` while the connector is stopped."""

    id: RequestId = Field(description="Unique id of this request; a new id is a new request.")
    action: OffsetsAction
    offsets: list[OffsetEntry] | None = Field(
        default=None, description="For `alter`: the partitions to change (augment-only)."
    )

    @model_validator(mode="after")
    def _offsets_match_action(self) -> OffsetsRequest:
        # Same messages as core.offsets_rules (which the loader runs with exact positions).
        if self.action is OffsetsAction.ALTER and not self.offsets:
            raise ValueError(ALTER_NEEDS_OFFSETS)
        if self.action is OffsetsAction.RESET and self.offsets:
            raise ValueError(RESET_TAKES_NO_OFFSETS)
        return self


# Keys the reconciler derives from the manifest; writing them in `spec.config` would be ambiguous.
BOOKKEEPING_KEYS = {"name": "metadata.name", "connector.class": "spec.class", "tasks.max": "spec.tasksMax"}


class ConnectorSpec(_Strict):
    connector_class: str = Field(
        alias="class",
        min_length=1,
        description="A registered connector name (e.g. parquet-sink) or a 'module:Class' path.",
    )
    # strict: the schema says integer, so "2" or 2.0 must not slip through here either. At most
    # Java's Integer.MAX_VALUE: Connect's `tasks.max` is an INT, and a Java worker sharing the
    # topics could not parse a larger value.
    tasksMax: int = Field(default=1, ge=1, le=2**31 - 1, strict=True, description="Maximum number of tasks.")
    state: TargetState = TargetState.RUNNING
    config: dict[str, ConfigValue] = Field(default_factory=dict)
    sensitive: list[str] = Field(
        default_factory=list, description="Extra config keys to mask in every output."
    )
    restart: RestartRequest | None = None
    offsets: OffsetsRequest | None = None
    topicsReset: TopicsResetRequest | None = None
    autoRestart: AutoRestart | None = None

    @field_validator("config")
    @classmethod
    def _no_bookkeeping_keys(cls, config: dict[str, ConfigValue]) -> dict[str, ConfigValue]:
        for key, owner in BOOKKEEPING_KEYS.items():
            if key in config:
                raise ValueError(f"`{key}` is derived from `{owner}`; remove it from spec.config")
        return config


class ConnectorManifest(_Strict):
    apiVersion: Literal["reconciler.io/v1"]
    kind: Literal["Connector"]
    metadata: Metadata
    spec: ConnectorSpec


class SourceRef(BaseModel):
    """Where a document came from: shown in diagnostics as `file:line:col`."""

    model_config = ConfigDict(frozen=True)

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class DesiredConnector(BaseModel):
    """A validated manifest plus where it was declared.

    `kind`: the type the connector's Python plugin declares, when the loader could load it;
    None for a class this process cannot load (`core.kinds.class_kind` decides then).
    """

    model_config = ConfigDict(frozen=True)

    manifest: ConnectorManifest
    source: SourceRef | None = None
    kind: Kind | None = None
    # Config keys whose value came from a `${provider:…}` placeholder: sensitive by construction,
    # whatever their name (core.redact). The manifest keeps the placeholder text; this is how the
    # fact survives resolution.
    interpolated: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        return self.manifest.metadata.name

    @property
    def sensitive_keys(self) -> frozenset[str]:
        """`spec.sensitive` plus the interpolated keys: masked in every output."""
        return frozenset(self.manifest.spec.sensitive) | self.interpolated

    @property
    def spec(self) -> ConnectorSpec:
        return self.manifest.spec

    @property
    def connector_kind(self) -> Kind:
        spec = self.spec
        return self.kind or class_kind(spec.connector_class, spec.config)

    @property
    def is_sink(self) -> bool:
        """Decided by the class, as Connect decides (docs/compatibility.md)."""
        return self.connector_kind == Kind.SINK
