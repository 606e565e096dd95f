"""Live state: what Connect's internal topics (and the reconciler's own topic) currently hold.

Built by `reconciler.kafka.reader` from the topics, or loaded from a JSON snapshot
(`reconciler snapshot > live.json`, `plan --live-state live.json`). Pure data.
"""

from __future__ import annotations

import enum
import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

SNAPSHOT_VERSION = 1


class ConnectTargetState(str, enum.Enum):
    """Connect's `TargetState` enum as stored in `target-state-<name>` records."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"


class InstanceState(str, enum.Enum):
    """Connect's `AbstractStatus.State` as written to the status topic."""

    UNASSIGNED = "UNASSIGNED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    FAILED = "FAILED"
    RESTARTING = "RESTARTING"
    STOPPED = "STOPPED"


class InstanceStatus(BaseModel):
    """The value of a `status-connector-…` / `status-task-…` record."""

    model_config = ConfigDict(frozen=True)

    state: InstanceState
    trace: str | None = None
    worker_id: str = ""
    generation: int = 0


class LiveConnector(BaseModel):
    """One connector as the config and status topics describe it."""

    model_config = ConfigDict(frozen=True)

    name: str
    # `connector-<name>` properties; None when only a target state / status exists.
    config: dict[str, str | None] | None = None
    # Absent target-state record means STARTED (Connect's default).
    target_state: ConnectTargetState = ConnectTargetState.STARTED
    # Task count from the last `commit-<name>`; None when no commit was seen.
    task_count: int | None = None
    # Committed task configs, index = task id; empty when inconsistent.
    task_configs: list[dict[str, str | None]] = Field(default_factory=list)
    inconsistent: bool = False
    connector_status: InstanceStatus | None = None
    task_statuses: dict[int, InstanceStatus] = Field(default_factory=dict)

    @property
    def exists(self) -> bool:
        return self.config is not None

    @property
    def failed(self) -> bool:
        status = self.connector_status
        return status is not None and status.state is InstanceState.FAILED


class AutoRestartStatus(BaseModel):
    """`spec.autoRestart` bookkeeping of one connector, as Strimzi's `AutoRestartStatus` keeps it.

    `count`: automatic restarts in a row so far; `last_restart_ms`: when the latest was made;
    `next_restart_ms`: the earliest next attempt while the connector keeps failing, None once
    `maxRestarts` is reached. Kept in Kafka, so a restarted reconciler continues the count.
    """

    model_config = ConfigDict(frozen=True)

    count: int
    last_restart_ms: int
    next_restart_ms: int | None = None


class AppliedRequests(BaseModel):
    """Ids of one-shot requests the reconciler has applied, per connector (kept in Kafka)."""

    model_config = ConfigDict(frozen=True)

    restart: list[str] = Field(default_factory=list)
    offsets: list[str] = Field(default_factory=list)


class LiveState(BaseModel):
    """Everything the plan engine needs to know about the cluster."""

    model_config = ConfigDict(frozen=True)

    version: int = SNAPSHOT_VERSION
    group_id: str | None = None
    connectors: dict[str, LiveConnector] = Field(default_factory=dict)
    # Connectors this reconciler created (ownership records); only these may be pruned.
    owned: list[str] = Field(default_factory=list)
    applied: dict[str, AppliedRequests] = Field(default_factory=dict)
    # Offsets requests that were started but not finished (crash between steps): name → id.
    offsets_in_progress: dict[str, str] = Field(default_factory=dict)
    # `spec.autoRestart` history per connector (a status, like statuses: not in `fingerprint`).
    auto_restarts: dict[str, AutoRestartStatus] = Field(default_factory=dict)

    def connector(self, name: str) -> LiveConnector | None:
        return self.connectors.get(name)

    def is_applied(self, connector: str, kind: str, request_id: str) -> bool:
        applied = self.applied.get(connector)
        if applied is None:
            return False
        return request_id in (applied.restart if kind == "restart" else applied.offsets)

    def fingerprint(self) -> str:
        """A digest of what plans depend on, to refuse stale saved plans.

        Statuses are left out on purpose: tasks report RUNNING/PAUSED continuously, and a
        saved plan should only go stale when configs, target states, ownership or applied
        requests moved.
        """
        doc = {
            "connectors": {
                name: [c.config, c.target_state.value, c.task_count]
                for name, c in sorted(self.connectors.items())
            },
            "owned": sorted(self.owned),
            "applied": {k: v.model_dump() for k, v in sorted(self.applied.items())},
            "offsets_in_progress": dict(sorted(self.offsets_in_progress.items())),
        }
        raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
        return hashlib.sha256(raw).hexdigest()


def load_snapshot(text: str) -> LiveState:
    """Parse a snapshot document (raises pydantic.ValidationError on a malformed one)."""
    try:
        return LiveState.model_validate_json(text)
    except ValueError as exc:
        # pydantic's JSON parser refuses `\ud800`-style escapes of lone surrogates, which Java
        # (and so the topics, and `dump_snapshot`) can hold; the stdlib parser keeps them.
        try:
            data = json.loads(text)
        except ValueError:
            raise exc from None
        return LiveState.model_validate(data)


def dump_snapshot(state: LiveState) -> str:
    try:
        return state.model_dump_json(indent=2) + "\n"
    except ValueError:
        # A lone surrogate (a Java string can hold one; the reader keeps it) is not UTF-8:
        # the stdlib writes it as a `\ud800` escape, which `load_snapshot` reads back.
        return json.dumps(state.model_dump(mode="json"), indent=2) + "\n"
