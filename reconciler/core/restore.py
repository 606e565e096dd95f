"""Undo what a Connect worker took from aborted records: the plan's RESTORE actions.

For each connector where a worker reading the config topic uncommitted holds something the
committed records do not (`LiveState.uncommitted`), the committed config and target state are
written back, first in the apply's transaction, the way Java's reader needs them:
docs/compatibility.md#records-a-worker-reads-before-they-are-committed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from reconciler.core.diff import added_fields, diff_config, removed_fields
from reconciler.core.live import ConnectTargetState, LiveConnector, LiveState, UncommittedView
from reconciler.core.normalize import to_connect_state
from reconciler.core.plan import Action, ActionKind, FieldChange
from reconciler.core.transitions import DECLARED_FOR

CONFIG, TARGET_STATE = "config", "target-state"
REASON = (
    "a Connect worker without exactly-once support acted on records of an interrupted write "
    "(read uncommitted, then aborted): the committed values are written back"
)
_WRITES_CONFIG = frozenset({ActionKind.CREATE, ActionKind.UPDATE_CONFIG, ActionKind.DELETE})
_WRITES_STATE = frozenset({ActionKind.STOP, ActionKind.PAUSE, ActionKind.RESUME, ActionKind.DELETE})


def create_writes_target_state(name: str, state: ConnectTargetState, live: LiveState) -> bool:
    """A create writes a target state first when it is not STARTED (KIP-980), or when the
    committed records keep one of a deleted connector (Connect would apply it to the new one)."""
    existing = live.connector(name)
    leftover = existing is not None and existing.target_state is not ConnectTargetState.STARTED
    return state is not ConnectTargetState.STARTED or leftover


def written_keys(action: Action, live: LiveState) -> frozenset[str]:
    """Which of a connector's config and target-state records `action` writes."""
    keys = set()
    if action.kind in _WRITES_CONFIG:
        keys.add(CONFIG)
    if action.kind in _WRITES_STATE:
        keys.add(TARGET_STATE)
    elif action.kind is ActionKind.CREATE:  # the planner always says which state it creates in
        state = to_connect_state(action.to_state) if action.to_state is not None else ConnectTargetState.STARTED
        if create_writes_target_state(action.connector, state, live):
            keys.add(TARGET_STATE)
    return frozenset(keys)


def restore_actions(
    actions: Sequence[Action], live: LiveState, sensitive: Mapping[str, Collection[str]]
) -> list[Action]:
    """One RESTORE per connector a worker reading uncommitted records holds otherwise, for the
    records `actions` leave alone. `sensitive`: extra keys to mask, per declared connector."""
    written: dict[str, set[str]] = {}
    for action in actions:
        written.setdefault(action.connector, set()).update(written_keys(action, live))
    restores = []
    for name, view in sorted(live.uncommitted.items()):
        restore = _restore(name, view, live, written.get(name, set()), sensitive.get(name, ()))
        if restore is not None:
            restores.append(restore)
    return restores


def _restore(
    name: str, view: UncommittedView, live: LiveState, written: Collection[str], sensitive: Collection[str]
) -> Action | None:
    current = live.connector(name)
    committed = current.config if current is not None else None
    keys: list[str] = []
    if TARGET_STATE not in written and view.target_state != view.committed_target_state:
        keys.append(TARGET_STATE)
    if CONFIG not in written and (view.config != committed or _without_its_tasks(view, current, written)):
        keys.append(CONFIG)
    if not keys:
        return None
    to_state = restored_state(view, exists=committed is not None)
    return Action(
        kind=ActionKind.RESTORE,
        connector=name,
        reason=REASON,
        changes=_changes(view.config, committed, sensitive) if CONFIG in keys else [],
        from_state=DECLARED_FOR[view.target_state] if view.target_state is not None else None,
        to_state=DECLARED_FOR[to_state] if to_state is not None and TARGET_STATE in keys else None,
        restore=[key for key in (TARGET_STATE, CONFIG) if key in keys],
    )


def _without_its_tasks(view: UncommittedView, current: LiveConnector | None, written: Collection[str]) -> bool:
    """The worker holds another task count for a connector that keeps running (e.g. an aborted
    zero-task commit of a stop): Java generates task configs only when it (re)starts the
    connector, which writing its config again does (`DistributedHerder.processConnectorConfigUpdates`)."""
    if current is None or current.config is None or TARGET_STATE in written:
        return False
    running = current.target_state is not ConnectTargetState.STOPPED
    return running and view.task_count != current.task_count


def restored_state(view: UncommittedView, *, exists: bool) -> ConnectTargetState | None:
    """The target state to write back; None: a tombstone (no connector, no committed record)."""
    if view.committed_target_state is not None:
        return view.committed_target_state
    return ConnectTargetState.STARTED if exists else None


def _changes(
    held: dict[str, str | None] | None, committed: dict[str, str | None] | None, sensitive: Collection[str]
) -> list[FieldChange]:
    if committed is None:
        return removed_fields(held or {}, sensitive)
    if held is None:
        return added_fields(committed, sensitive)
    return diff_config(committed, held, sensitive)
