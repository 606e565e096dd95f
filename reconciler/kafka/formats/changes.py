"""The writer's pure half: a plan becomes the records Connect itself would write for it.

Each action maps to what a Connect leader writes for the matching REST call, plus our
bookkeeping in `<group>-reconciler` (docs/product-rules.md#what-apply-writes, action by
action); offsets actions are returned by `pending_offsets` for the offsets machinery. The list
is in plan order, removals first (docs/compatibility.md#removals-first).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from reconciler.core.live import ConnectTargetState, LiveState, RequestKind
from reconciler.core.models import DesiredConnector, TargetState
from reconciler.core.normalize import connector_properties, to_connect_state
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.core.restore import CONFIG, TARGET_STATE, create_writes_target_state, restored_state
from reconciler.kafka.formats import own_records as own
from reconciler.kafka.formats import records as rec
from reconciler.kafka.formats.records import Record, TopicRole
from reconciler.kafka.formats.topic_status import topic_status_record

# Ownership records name the plan that created the connector (a prefix is enough to find it).
PLAN_PREFIX_LENGTH = 16


class _Context:
    def __init__(self, plan: Plan, desired: Mapping[str, DesiredConnector], live: LiveState, now_ms: int) -> None:
        self.plan = plan
        self.desired = desired
        self.live = live
        self.now_ms = now_ms

    def properties(self, name: str) -> dict[str, str | None]:
        """The manifest's Connect properties, sorted by key so the bytes are deterministic."""
        wanted = self.desired.get(name)
        if wanted is None:
            raise ValueError(f"the plan changes connector {name!r} but no manifest declares it")
        return dict(sorted(connector_properties(wanted).items()))

    def declared_state(self, action: Action) -> ConnectTargetState:
        state = action.to_state
        if state is None:
            wanted = self.desired.get(action.connector)
            state = wanted.spec.state if wanted is not None else TargetState.RUNNING
        return to_connect_state(state)


def plan_to_records(
    plan: Plan, desired: Mapping[str, DesiredConnector], live: LiveState, *, now_ms: int
) -> list[Record]:
    """Every record one apply writes, in plan order with removals first (offsets actions
    excluded; see module doc)."""
    context = _Context(plan, desired, live, now_ms)
    records = sensitivity_records(plan, desired, live)
    first: list[Record] = []
    rest: list[Record] = []
    seen: set[str] = set()
    for action in plan.actions:
        group = _BUILDERS[action.kind](action, context)
        # A removal goes first unless the plan acts on that connector before it.
        removal_first = action.connector not in seen and any(map(_removes_connector, group))
        (first if removal_first else rest).extend(group)
        seen.add(action.connector)
    return records + first + rest


def _removes_connector(record: Record) -> bool:
    return record.value is None and record.topic_role is TopicRole.CONFIGS and record.key.startswith(_CONNECTOR_KEY)


_CONNECTOR_KEY = rec.CONNECTOR_PREFIX.encode()


def sensitivity_records(plan: Plan, desired: Mapping[str, DesiredConnector], live: LiveState) -> list[Record]:
    """`sensitive/N` where the recorded keys differ from the manifests' (see module doc)."""
    deleted = {a.connector for a in plan.actions if a.kind is ActionKind.DELETE}
    wanted = {name: sorted(connector.sensitive_keys) for name, connector in desired.items()}
    wanted.update({name: [] for name in deleted})
    return [
        own.sensitive_record(name, keys)
        for name, keys in sorted(wanted.items())
        if keys != live.sensitive.get(name, [])
    ]


def pending_offsets(plan: Plan) -> list[Action]:
    """The offsets actions `plan_to_records` leaves out: still pending after this apply."""
    return [action for action in plan.actions if action.kind is ActionKind.OFFSETS]


def _create(action: Action, ctx: _Context) -> list[Record]:
    name = action.connector
    state = ctx.declared_state(action)
    records = []
    if create_writes_target_state(name, state, ctx.live):
        # KIP-980: the state goes first, so the connector never runs before it is paused/stopped;
        # also a STARTED one over a target state left by a deleted connector (Connect keeps it
        # until tombstoned, and would apply it to the new connector).
        records.append(rec.target_state_record(name, state))
    records.append(rec.connector_config_record(name, ctx.properties(name)))
    records.append(own.owner_record(name, ctx.plan.desired_fingerprint[:PLAN_PREFIX_LENGTH]))
    return records


def _restore(action: Action, ctx: _Context) -> list[Record]:
    """The committed target state and config written back (`core.restore`)."""
    name = action.connector
    current = ctx.live.connector(name)
    committed = current.config if current is not None else None
    view = ctx.live.uncommitted.get(name)
    if view is None:
        raise ValueError(f"the plan restores connector {name!r} but the live state shows nothing to restore")
    state = restored_state(view, exists=committed is not None)
    records = []
    if committed is None:  # the order of a delete
        if CONFIG in action.restore:
            records.append(rec.connector_tombstone(name))
        if TARGET_STATE in action.restore:
            records.append(rec.target_state_tombstone(name) if state is None else rec.target_state_record(name, state))
    else:  # the order of KIP-980; a committed state is never restored as a tombstone (see core.restore)
        if TARGET_STATE in action.restore:
            records.append(rec.target_state_record(name, state or ConnectTargetState.STARTED))
        if CONFIG in action.restore:
            records.append(rec.connector_config_record(name, committed))
    return records


def _update(action: Action, ctx: _Context) -> list[Record]:
    return [rec.connector_config_record(action.connector, ctx.properties(action.connector))]


def _pause(action: Action, ctx: _Context) -> list[Record]:
    return [rec.target_state_record(action.connector, ConnectTargetState.PAUSED)]


def _resume(action: Action, ctx: _Context) -> list[Record]:
    return [rec.target_state_record(action.connector, ConnectTargetState.STARTED)]


def _stop(action: Action, ctx: _Context) -> list[Record]:
    # Tasks first: a crash in between leaves "running with zero tasks", never "stopped with tasks".
    return [
        rec.commit_record(action.connector, 0),
        rec.target_state_record(action.connector, ConnectTargetState.STOPPED),
    ]


def _restart(action: Action, ctx: _Context) -> list[Record]:
    if action.request_id is None:
        raise ValueError(f"restart action for {action.connector!r} has no request id")
    return [
        rec.restart_record(
            action.connector,
            include_tasks=bool(action.include_tasks),
            only_failed=bool(action.only_failed),
        ),
        own.applied_record(RequestKind.RESTART, action.connector, action.request_id, ctx.now_ms),
    ]


def _topics_reset(action: Action, ctx: _Context) -> list[Record]:
    """Java's `resetConnectorActiveTopics`: a tombstone for each active-topic record of the
    connector. The plan lists them from the live state this apply writes over (a saved plan whose
    list has moved is refused as stale), so what was shown is what is forgotten."""
    if action.request_id is None:
        raise ValueError(f"topics-reset action for {action.connector!r} has no request id")
    forgotten = [topic_status_record(topic, action.connector, 0, None) for topic in action.topics]
    return forgotten + [own.applied_record(RequestKind.TOPICS_RESET, action.connector, action.request_id, ctx.now_ms)]


def _delete(action: Action, ctx: _Context) -> list[Record]:
    return [
        rec.connector_tombstone(action.connector),
        rec.target_state_tombstone(action.connector),
        own.owner_tombstone(action.connector),
    ]


def _offsets(action: Action, ctx: _Context) -> list[Record]:
    return []  # executed by the offsets machinery; see `pending_offsets`


_BUILDERS: dict[ActionKind, Callable[[Action, _Context], list[Record]]] = {
    ActionKind.RESTORE: _restore,
    ActionKind.CREATE: _create,
    ActionKind.UPDATE_CONFIG: _update,
    ActionKind.STOP: _stop,
    ActionKind.OFFSETS: _offsets,
    ActionKind.PAUSE: _pause,
    ActionKind.RESUME: _resume,
    ActionKind.RESTART: _restart,
    ActionKind.TOPICS_RESET: _topics_reset,
    ActionKind.DELETE: _delete,
}
