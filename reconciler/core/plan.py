"""The plan: a typed, versioned, serialisable value.

The planner (`core.planner`) makes it; renderers (`reconciler.render`) display it; the Kafka
writer turns it into records. Values shown to people are already masked here: the plan never
holds a secret in clear text. The writer re-derives configs from the manifests instead (and a
saved plan is only applied when re-planning gives the same plan, see `Plan.desired_fingerprint`).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reconciler.core.diagnostics import Diagnostic
from reconciler.core.live import RequestKind
from reconciler.core.models import OffsetEntry, OffsetsAction, TargetState

# 2: manifest paths absolute or relative to the plan file (1: relative to the working directory).
PLAN_FORMAT_VERSION = "2"


class ActionKind(enum.StrEnum):
    RESTORE = "restore"
    CREATE = "create"
    UPDATE_CONFIG = "update-config"
    STOP = "stop"
    OFFSETS = "offsets"
    PAUSE = "pause"
    RESUME = "resume"
    RESTART = "restart"
    TOPICS_RESET = "topics-reset"
    DELETE = "delete"


# Deterministic execution order (docs/product-rules.md#plan-order): creates first, stop before offsets, restarts after
# the state they restart into is recorded, deletes last. Within a phase: by connector name.
# A Connect worker without exactly-once support acts on each record as it is written, before
# the transaction commits (docs/compatibility.md), so every prefix must be safe: a connector
# is paused or stopped before its new config is written and resumed after it, so it never runs
# a config in a state it was not declared for (as KIP-980 writes a target state before a new
# connector's config).
# A restore goes first: it undoes, for a Connect worker reading uncommitted records, what an
# interrupted write left it holding (core.restore), before anything else is written.
PHASE: dict[ActionKind, int] = {
    ActionKind.RESTORE: -1,
    ActionKind.CREATE: 0,
    ActionKind.STOP: 1,
    ActionKind.PAUSE: 1,
    ActionKind.UPDATE_CONFIG: 2,
    ActionKind.OFFSETS: 3,
    ActionKind.RESUME: 4,
    ActionKind.RESTART: 5,
    ActionKind.TOPICS_RESET: 5,
    ActionKind.DELETE: 6,
}

SYMBOL: dict[ActionKind, str] = {
    ActionKind.RESTORE: "~",
    ActionKind.CREATE: "+",
    ActionKind.UPDATE_CONFIG: "~",
    ActionKind.STOP: "~",
    ActionKind.OFFSETS: "~",
    ActionKind.PAUSE: "~",
    ActionKind.RESUME: "~",
    ActionKind.RESTART: "~",
    ActionKind.TOPICS_RESET: "~",
    ActionKind.DELETE: "-",
}


class FieldOp(enum.StrEnum):
    """What happens to one config field."""

    ADD = "add"
    CHANGE = "change"
    REMOVE = "remove"


class FieldChange(BaseModel):
    """One config field that differs (kopf's DiffItem). Values are masked when `sensitive`."""

    model_config = ConfigDict(frozen=True)

    op: FieldOp
    key: str
    old: str | None = None
    new: str | None = None
    sensitive: bool = False


class OffsetsStepKind(enum.StrEnum):
    """The steps of an offsets request: what the plan shows, what the executor reports doing,
    and what its progress record names (every step but RECORD; docs/state-machine.md#alter-and-reset)."""

    STOP = "stop"  # zero-task commit + STOPPED target state, and wait for tasks to stop
    SNAPSHOT = "snapshot"  # record current offsets for rollback
    ALTER = "alter"
    RESET = "reset"
    RETURN = "return"  # back to the declared target state
    RECORD = "record"  # mark the request id applied


class OffsetsStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: OffsetsStepKind
    description: str


# The fields each kind of action carries, beside `kind`, `connector` and `reason`. `Action` is
# one flat model rather than a union of one model per kind: the plan's JSON (`render.json`,
# read back by `apply plan.json`) keeps every field of every action, and tests pin it. This
# table is the union's tags instead, and `Action` refuses a field its kind does not carry.
ACTION_FIELDS: dict[ActionKind, frozenset[str]] = {
    ActionKind.RESTORE: frozenset({"changes", "from_state", "to_state", "restore"}),
    ActionKind.CREATE: frozenset({"changes", "to_state", "tasks_max", "connector_class"}),
    ActionKind.UPDATE_CONFIG: frozenset({"changes", "tasks_max", "connector_class"}),
    ActionKind.STOP: frozenset({"from_state", "to_state"}),
    ActionKind.PAUSE: frozenset({"from_state", "to_state"}),
    ActionKind.RESUME: frozenset({"from_state", "to_state"}),
    ActionKind.OFFSETS: frozenset({
        "from_state", "to_state", "request_id", "offsets_action", "offsets", "steps", "is_sink", "request_status",
        "current_offsets",
    }),
    ActionKind.RESTART: frozenset({"request_id", "include_tasks", "only_failed", "request_status"}),
    ActionKind.TOPICS_RESET: frozenset({"request_id", "topics", "request_status"}),
    ActionKind.DELETE: frozenset({"changes", "from_state"}),
}
_EVERY_KIND = frozenset({"kind", "connector", "reason"})


class Action(BaseModel):
    """One change to one connector, of one `kind`; only the fields `ACTION_FIELDS` gives that kind
    may be set (the others keep their defaults)."""

    model_config = ConfigDict(frozen=True)

    kind: ActionKind
    connector: str
    # Human-readable reason; for display only, never used for decisions (Terraform's rule).
    reason: str = ""
    # create / update-config / delete: the (masked) fields.
    changes: list[FieldChange] = Field(default_factory=list)
    # create / pause / resume / stop / offsets(return): target states.
    from_state: TargetState | None = None
    to_state: TargetState | None = None
    tasks_max: int | None = None
    connector_class: str | None = None
    # restart / offsets / topics-reset: the one-shot request.
    request_id: str | None = None
    include_tasks: bool | None = None
    only_failed: bool | None = None
    offsets_action: OffsetsAction | None = None
    offsets: list[OffsetEntry] = Field(default_factory=list)
    steps: list[OffsetsStep] = Field(default_factory=list)
    is_sink: bool | None = None
    # restart / offsets / topics-reset: "pending" for a new request, "in-progress" when an interrupted offsets
    # request is resumed (its first steps may already have run).
    request_status: Literal["pending", "in-progress"] | None = None
    # offsets: the partitions' current offsets when the live state knows them (shown from → to).
    # The planner leaves it empty today: current offsets are read at apply time (SNAPSHOT step).
    current_offsets: list[OffsetEntry] = Field(default_factory=list)
    # restore: the records written back with their committed values (core.restore).
    restore: list[Literal["target-state", "config"]] = Field(default_factory=list)
    # topics-reset: the connector's active topics (KIP-558) the reset forgets, sorted.
    topics: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _fields_of_its_kind(self) -> Action:
        allowed = ACTION_FIELDS[self.kind] | _EVERY_KIND
        stray = sorted(
            name for name in self.model_fields_set - allowed
            if getattr(self, name) != type(self).model_fields[name].get_default(call_default_factory=True)
        )
        if stray:
            raise ValueError(f"a {self.kind.value} action has no {', '.join(stray)}")
        return self

    @property
    def symbol(self) -> str:
        return SYMBOL[self.kind]

    def sort_key(self) -> tuple[int, str]:
        return (PHASE[self.kind], self.connector)


class PendingRequest(BaseModel):
    """A request shown as already done (applied id) — so reviewers see why nothing happens.

    Resumed (in-progress) offsets requests are actions (`Action.request_status`), not listed here.
    """

    model_config = ConfigDict(frozen=True)

    connector: str
    kind: RequestKind
    request_id: str
    status: Literal["applied", "in-progress"]


class Summary(BaseModel):
    model_config = ConfigDict(frozen=True)

    create: int = 0
    update: int = 0
    delete: int = 0
    state: int = 0
    restart: int = 0
    offsets: int = 0
    topics_reset: int = 0

    @property
    def total(self) -> int:
        return self.create + self.update + self.delete + self.state + self.restart + self.offsets + self.topics_reset


@dataclass(frozen=True, kw_only=True)
class PlanOptions:
    """What a plan is asked for besides the manifests and the live state (`--prune`,
    `--allow-empty`, where the manifests were read); the plan carries them (`Plan.options`)."""

    prune: bool = False
    allow_empty: bool = False  # --prune may delete every owned connector when no manifest declares any
    manifest_paths: tuple[str, ...] = ()


class Plan(BaseModel):
    model_config = ConfigDict(frozen=True)

    format_version: str = PLAN_FORMAT_VERSION
    group_id: str | None = None
    prune: bool = False
    # --allow-empty: --prune may delete every owned connector when no manifest declares any.
    allow_empty: bool = False
    # Paths the manifests were loaded from (for `apply plan.json`): absolute, or relative to the
    # directory of the plan file they are saved in (`plan --out`).
    manifest_paths: list[str] = Field(default_factory=list)
    # Digests used to refuse stale saved plans (see module doc).
    desired_fingerprint: str = ""
    live_fingerprint: str = ""
    actions: list[Action] = Field(default_factory=list)
    # Connectors live but in no manifest and not owned by us: listed, never touched.
    unmanaged: list[str] = Field(default_factory=list)
    # Owned orphans that would be deleted with --prune (listed when prune is off).
    orphans: list[str] = Field(default_factory=list)
    requests_done: list[PendingRequest] = Field(default_factory=list)
    diagnostics: list[Diagnostic] = Field(default_factory=list)

    @property
    def has_changes(self) -> bool:
        return bool(self.actions)

    @property
    def options(self) -> PlanOptions:
        return PlanOptions(prune=self.prune, allow_empty=self.allow_empty, manifest_paths=tuple(self.manifest_paths))

    def summary(self) -> Summary:
        counts = {"create": 0, "update": 0, "delete": 0, "state": 0, "restart": 0, "offsets": 0, "topics_reset": 0}
        bucket = {
            ActionKind.RESTORE: "update",
            ActionKind.CREATE: "create",
            ActionKind.UPDATE_CONFIG: "update",
            ActionKind.DELETE: "delete",
            ActionKind.STOP: "state",
            ActionKind.PAUSE: "state",
            ActionKind.RESUME: "state",
            ActionKind.RESTART: "restart",
            ActionKind.OFFSETS: "offsets",
            ActionKind.TOPICS_RESET: "topics_reset",
        }
        for action in self.actions:
            counts[bucket[action.kind]] += 1
        return Summary(**counts)
