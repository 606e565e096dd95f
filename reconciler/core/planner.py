"""The plan engine: pair desired and live connectors by name, diff them, and order the actions.

A pure stage (gitops-engine): manifests and live state in, a `Plan` value out. It decides with
Connect's rules (`core.transitions`); reasons are written for reviewers only.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from reconciler.core.diagnostics import Diagnostic, Severity, warning
from reconciler.core.diff import added_fields, diff_config, removed_fields
from reconciler.core.live import LiveConnector, LiveState, RequestKind
from reconciler.core.models import (
    DesiredConnector,
    OffsetsRequest,
    RestartRequest,
    TargetState,
    TopicsResetRequest,
)
from reconciler.core.normalize import Properties, connector_properties
from reconciler.core.offsets_plan import interrupted_offsets_warnings, offsets_action, sink_topic_warnings
from reconciler.core.plan import Action, ActionKind, PendingRequest, Plan, PlanOptions
from reconciler.core.placeholders import keys_with_variables
from reconciler.core.redact import has_placeholder, is_seal, slow_digest
from reconciler.core.restore import restore_actions
from reconciler.core.transitions import DECLARED_FOR, plan_state, restart_targets

NO_OPTIONS = PlanOptions()


@dataclass
class _Collected:
    actions: list[Action] = field(default_factory=list)
    requests_done: list[PendingRequest] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)


@dataclass(frozen=True)
class _Pending:
    """The one-shot requests of one connector that still have to run (ids not yet applied)."""

    restart: RestartRequest | None
    offsets: OffsetsRequest | None
    topics_reset: TopicsResetRequest | None


def build_plan(
    desired: Sequence[DesiredConnector],
    live: LiveState,
    options: PlanOptions = NO_OPTIONS,
    *,
    fingerprints: bool = True,
) -> Plan:
    """The ordered plan that brings `live` to `desired` (deletes only with `options.prune`).

    With no manifest at all, `prune` would delete every owned connector: a mounted directory
    swapped for an empty one looks exactly like that. The plan refuses (an error diagnostic, no
    delete) unless `allow_empty` says it is meant, as Argo CD's `allowEmpty`.

    `fingerprints=False` leaves the digests a saved plan is checked with empty: a plan that is
    only shown never needs them, and they are a third of planning 10,000 connectors.
    """
    by_name = _index_by_name(desired)
    out = _Collected()
    ordered = [(name, by_name[name], connector_properties(by_name[name])) for name in sorted(by_name)]
    for _, connector, props in ordered:
        _plan_connector(connector, props, live, out)
    prune = options.prune
    refuse_empty = prune and not by_name and not options.allow_empty
    orphans, unmanaged = _plan_orphans(by_name.keys(), live, prune and not refuse_empty, out)
    if refuse_empty and orphans:
        out.diagnostics.append(_empty_prune_refused(orphans))
    if live.uncommitted:
        sensitive: dict[str, frozenset[str]] = {name: frozenset(keys) for name, keys in live.sensitive.items()}
        sensitive.update({name: _sensitive(connector, live) for name, connector in by_name.items()})
        out.actions.extend(restore_actions(out.actions, live, sensitive))
    out.actions.sort(key=Action.sort_key)
    return Plan(
        group_id=live.group_id,
        prune=options.prune,
        allow_empty=options.allow_empty,
        manifest_paths=list(options.manifest_paths),
        desired_fingerprint=_fingerprint(ordered) if fingerprints else "",
        live_fingerprint=live.fingerprint() if fingerprints else "",
        actions=out.actions,
        unmanaged=unmanaged,
        orphans=orphans,
        requests_done=out.requests_done,
        diagnostics=out.diagnostics,
    )


def _index_by_name(desired: Sequence[DesiredConnector]) -> dict[str, DesiredConnector]:
    by_name: dict[str, DesiredConnector] = {}
    for connector in desired:
        if connector.name in by_name:
            # The manifest loader reports duplicates with both locations; reaching here is a bug.
            raise ValueError(f"connector {connector.name!r} is declared twice")
        by_name[connector.name] = connector
    return by_name


def _plan_connector(desired: DesiredConnector, props: Properties, live: LiveState, out: _Collected) -> None:
    name = desired.name
    current = live.connector(name)
    if current is not None and not current.exists:
        current = None  # a target state or status without a config is not a connector
    pending = _pending_requests(desired, live, out)
    if current is None:
        # KIP-980: created directly in its state; STOPPED first when offsets must be set.
        initial = TargetState.STOPPED if pending.offsets is not None else desired.spec.state
        out.actions.append(_create_action(desired, props, initial))
    else:
        _plan_config(desired, props, current, _sensitive(desired, live), out)
        out.diagnostics.extend(literal_secret_warnings(desired, props, current))
        if pending.offsets is None:
            _plan_state(desired, current, pending.restart is not None, out)
    if pending.offsets is not None:
        in_progress = live.offsets_in_progress.get(name) == pending.offsets.id
        out.actions.append(offsets_action(desired, pending.offsets, current, in_progress))
        out.diagnostics.extend(sink_topic_warnings(desired, pending.offsets))
    out.diagnostics.extend(interrupted_offsets_warnings(desired, live))
    if pending.restart is not None:
        out.actions.append(_restart_action(desired, pending.restart, current))
    if pending.topics_reset is not None:
        out.actions.append(_topics_reset_action(desired, pending.topics_reset, live))


def _pending_requests(desired: DesiredConnector, live: LiveState, out: _Collected) -> _Pending:
    """Drop requests whose id is recorded as applied, listing them as done for the reviewer."""
    spec, name = desired.spec, desired.name
    restart, offsets, topics_reset = spec.restart, spec.offsets, spec.topicsReset
    if restart is not None and live.is_applied(name, RequestKind.RESTART, restart.id):
        out.requests_done.append(_done(name, RequestKind.RESTART, restart.id))
        restart = None
    if offsets is not None and live.is_applied(name, RequestKind.OFFSETS, offsets.id):
        out.requests_done.append(_done(name, RequestKind.OFFSETS, offsets.id))
        offsets = None
    if topics_reset is not None and live.is_applied(name, RequestKind.TOPICS_RESET, topics_reset.id):
        out.requests_done.append(_done(name, RequestKind.TOPICS_RESET, topics_reset.id))
        topics_reset = None
    return _Pending(restart, offsets, topics_reset)


def _done(name: str, kind: RequestKind, request_id: str) -> PendingRequest:
    return PendingRequest(connector=name, kind=kind, request_id=request_id, status="applied")


def _create_action(desired: DesiredConnector, props: Properties, initial: TargetState) -> Action:
    spec = desired.spec
    reason = ""
    if initial is not spec.state:
        reason = "created stopped so its offsets can be set before it first runs"
    return Action(
        kind=ActionKind.CREATE,
        connector=desired.name,
        reason=reason,
        changes=added_fields(props, desired.sensitive_keys),
        to_state=initial,
        tasks_max=spec.tasksMax,
        connector_class=spec.connector_class,
    )


def _sensitive(desired: DesiredConnector, live: LiveState) -> frozenset[str]:
    """The keys to mask in a diff: declared now, or when the live value was written (a key that
    stops being sensitive in this change still hides its old value)."""
    return desired.sensitive_keys.union(live.sensitive.get(desired.name, ()))


def _plan_config(
    desired: DesiredConnector, props: Properties, current: LiveConnector, sensitive: frozenset[str], out: _Collected
) -> None:
    assert current.config is not None
    spec = desired.spec
    changes = diff_config(props, current.config, sensitive)
    if changes:
        out.actions.append(
            Action(
                kind=ActionKind.UPDATE_CONFIG,
                connector=desired.name,
                changes=changes,
                tasks_max=spec.tasksMax,
                connector_class=spec.connector_class,
            )
        )


def literal_secret_warnings(desired: DesiredConnector, props: Properties, current: LiveConnector) -> list[Diagnostic]:
    """Keys the manifest gives as a placeholder whose value in the config topic is a literal (a
    resolved secret an older version wrote, or one written by hand): one line per connector,
    naming the keys, never a value. Applying writes the placeholder (a masked update), and the
    runtime's next start rewrites the task configs (docs/secrets.md#migration). A sealed value
    (a snapshot's) cannot be told apart: it is left to the diff."""
    placeholders = keys_with_variables(props)
    stored = [current.config or {}, *current.task_configs]
    keys = sorted(
        key
        for key in placeholders
        if any((value := config.get(key)) and not has_placeholder(value) and not is_seal(value) for config in stored)
    )
    if not keys:
        return []
    listed = ", ".join(f"`{key}`" for key in keys)
    return [
        warning(
            f"the config topic holds a literal value where the manifest has a placeholder: {listed}",
            source=desired.source,
            field_path="spec.config",
            connector=desired.name,
            hint="apply writes the placeholders; rotate those secrets if others could read the topic (docs/secrets.md#migration)",
        )
    ]


def _plan_state(desired: DesiredConnector, current: LiveConnector, restart_pending: bool, out: _Collected) -> None:
    transition = plan_state(
        desired.name,
        desired.spec.state,
        current.target_state,
        failed=current.failed,
        restart_pending=restart_pending,
        source=desired.source,
    )
    out.diagnostics.extend(transition.diagnostics)
    if transition.action is not None:
        out.actions.append(
            Action(
                kind=transition.action,
                connector=desired.name,
                reason=transition.reason,
                from_state=transition.from_state,
                to_state=transition.to_state,
            )
        )


# --- restart (KIP-745) ----------------------------------------------------------------------------


def _restart_action(desired: DesiredConnector, request: RestartRequest, current: LiveConnector | None) -> Action:
    return Action(
        kind=ActionKind.RESTART,
        connector=desired.name,
        reason=_restart_reason(request, current, desired.spec.state),
        request_id=request.id,
        include_tasks=request.includeTasks,
        only_failed=request.onlyFailed,
        request_status="pending",
    )


def _restart_reason(request: RestartRequest, current: LiveConnector | None, declared: TargetState) -> str:
    if current is None:
        return (
            "the connector is created in this plan, so there is nothing to restart yet; "
            "the id is recorded so the request never runs later"
        )
    if declared is TargetState.STOPPED:
        return "the connector is declared stopped: Connect restarts into the target state, so nothing starts"
    status = current.connector_status
    if status is None:
        return "no status is recorded for the connector yet; Connect skips a restart it has no status for"
    tasks_now = {task: s.state for task, s in current.task_statuses.items()}
    restart_connector, tasks = restart_targets(request.includeTasks, request.onlyFailed, status.state, tasks_now)
    what = (["the connector"] if restart_connector else []) + (
        [f"task(s) {', '.join(map(str, tasks))}"] if tasks else []
    )
    if not what:
        return "per current statuses nothing is FAILED, so nothing restarts; the id is still recorded"
    return f"per current statuses this restarts {' and '.join(what)}"


# --- active topics reset (KIP-558) ----------------------------------------------------------------


def _topics_reset_action(desired: DesiredConnector, request: TopicsResetRequest, live: LiveState) -> Action:
    """Forget the connector's active topics as they are now (Java's `resetConnectorActiveTopics`):
    its tasks record the topics they use again at their next batch."""
    topics = list(live.active_topics.get(desired.name, ()))
    reason = "" if topics else "no active topic is recorded for the connector; the id is still recorded"
    return Action(
        kind=ActionKind.TOPICS_RESET,
        connector=desired.name,
        reason=reason,
        request_id=request.id,
        topics=topics,
        request_status="pending",
    )


# --- orphans and the fingerprint ------------------------------------------------------------------


def _plan_orphans(
    declared: Collection[str], live: LiveState, prune: bool, out: _Collected
) -> tuple[list[str], list[str]]:
    """Live connectors no manifest declares: owned ones are pruned (opt-in), others left alone."""
    owned = set(live.owned)
    orphans: list[str] = []
    unmanaged: list[str] = []
    for name in sorted(live.connectors):
        current = live.connectors[name]
        if name in declared or current.config is None:
            continue
        if name not in owned:
            unmanaged.append(name)
        elif prune:
            out.actions.append(_delete_action(current, live.sensitive.get(name, ())))
        else:
            orphans.append(name)
    return orphans, unmanaged


def _empty_prune_refused(orphans: Sequence[str]) -> Diagnostic:
    count = f"all {len(orphans)} connector(s)" if len(orphans) > 1 else "the connector"
    return Diagnostic(
        severity=Severity.ERROR,
        summary=f"--prune with no manifests would delete {count} this reconciler created "
        f"({', '.join(orphans)}); refusing",
        hint="check the manifest paths (an empty or unmounted directory?); "
        "to delete them all on purpose, add --allow-empty",
    )


def _delete_action(current: LiveConnector, sensitive: Collection[str]) -> Action:
    assert current.config is not None
    return Action(
        kind=ActionKind.DELETE,
        connector=current.name,
        reason="in no manifest and created by this reconciler (--prune)",
        changes=removed_fields(current.config, sensitive),
        from_state=DECLARED_FOR[current.target_state],
    )


def with_fingerprints(plan: Plan, desired: Collection[DesiredConnector], live: LiveState) -> Plan:
    """`plan`, made with `fingerprints=False`, with the digests `build_plan` would have given it."""
    return plan.model_copy(update={"desired_fingerprint": desired_fingerprint(desired), "live_fingerprint": live.fingerprint()})


def desired_fingerprint(desired: Collection[DesiredConnector]) -> str:
    """A digest of everything the manifests ask for, secrets included: a slow one
    (`redact.slow_digest`), as a plan file is shared and must not be cheap to guess secrets against."""
    return _fingerprint(sorted(((c.name, c, connector_properties(c)) for c in desired), key=lambda t: t[0]))


def _fingerprint(ordered: Sequence[tuple[str, DesiredConnector, Properties]]) -> str:
    """`ordered`: (name, connector, its properties), sorted by name."""
    doc = [
        [
            name,
            props,
            connector.spec.state.value,
            connector.spec.tasksMax,
            _request_doc(connector.spec.restart),
            _request_doc(connector.spec.offsets),
            *_optional_request_doc(connector.spec.topicsReset),
        ]
        for name, connector, props in ordered
    ]
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return slow_digest(raw, b"connect-reconciler manifests")


def _request_doc(request: BaseModel | None) -> object:
    return None if request is None else request.model_dump(mode="json")


def _optional_request_doc(request: BaseModel | None) -> list[object]:
    """A request added after saved plans existed: digested only when declared, so the
    fingerprints of manifests without it stay as they were."""
    return [] if request is None else [_request_doc(request)]
