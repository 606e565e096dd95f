"""Current offsets in the plan, so a reviewer sees each partition move from → to.

The planner is pure and leaves `Action.current_offsets` empty; when the plan is made against
Kafka, `with_current_offsets` reads each offsets request's connector's offsets (its sink group,
or its source partitions) and fills them in. A request resumed after a crash shows the offsets
of its rollback snapshot instead: those are the "from" of the request, whatever it already did.

A sink alter to an offset its partition does not hold (past the log end, or below the log start
retention moved) is written as given, as Connect writes it; the task's consumer then resets it
by `auto.offset.reset` (docs/runtime.md#offset-ranges): with Connect's `earliest`, the whole
partition is read again. The plan warns about each such entry, so the reviewer sees it first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from reconciler.connectors.registry import connector_kind
from reconciler.core import diagnostics
from reconciler.core.diagnostics import Diagnostic
from reconciler.core.kinds import Kind
from reconciler.core.models import DesiredConnector, OffsetEntry, OffsetsAction
from reconciler.core.normalize import connector_properties
from reconciler.core.offsets_rules import parse_sink_offset, parse_sink_partition
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.kafka.io.admin import topic_partitions
from reconciler.kafka.io.config_providers import resolved_properties
from reconciler.kafka.io.consume import LogBounds, log_bounds
from reconciler.kafka.io.overrides import CONSUMER, client_settings
from reconciler.kafka.io.store import TopicsMode, read_view
from reconciler.kafka.settings import KafkaSettings
from reconciler.offsets.model import current_entries
from reconciler.offsets.state import current_body


def with_current_offsets(settings: KafkaSettings, plan: Plan, desired: Sequence[DesiredConnector]) -> Plan:
    """The plan with `current_offsets` set on its offsets actions (no I/O when it has none)."""
    offsets_actions = [a for a in plan.actions if a.kind is ActionKind.OFFSETS]
    if not offsets_actions:
        return plan
    by_name = {connector.name: connector for connector in desired}
    resumed = any(a.request_status == "in-progress" for a in offsets_actions)
    state = read_view(settings, topics=TopicsMode.PREPARED, task_configs=False) if resumed else None
    actions = []
    for action in plan.actions:
        connector = by_name.get(action.connector)
        if action.kind is ActionKind.OFFSETS and connector is not None and connector.spec.offsets is not None:
            snapshot = state.snapshot(action.connector, action.request_id or "") if state is not None else None
            body = snapshot if snapshot is not None else current_body(settings, connector.name, connector_properties(connector))
            action = _with(action, current_entries(body, connector.spec.offsets))
        actions.append(action)
    outside = [
        warning
        for action in offsets_actions
        if action.offsets_action is OffsetsAction.ALTER and (connector := by_name.get(action.connector)) is not None
        for warning in outside_the_log(settings, connector, action.offsets)
    ]
    return plan.model_copy(update={"actions": actions, "diagnostics": [*plan.diagnostics, *outside]})


def outside_the_log(settings: KafkaSettings, connector: DesiredConnector, entries: Sequence[OffsetEntry]) -> list[Diagnostic]:
    """A warning per sink alter entry whose offset its (existing) partition does not hold."""
    config = resolved_properties(connector_properties(connector))
    if connector_kind(config.get("connector.class") or "", config) != Kind.SINK:
        return []
    targets = {i: (parse_sink_partition(e.partition), parse_sink_offset(e.offset)) for i, e in enumerate(entries)}
    # Where the task's consumers read (`consumer.override.*`), as the runtime lists them.
    consumers = client_settings(settings, config, CONSUMER)
    existing = topic_partitions(consumers)
    topics = sorted({tp[0] for tp, offset in targets.values() if offset is not None and tp[0] in existing})
    bounds = log_bounds(consumers, topics) if topics else {}
    policy = config.get("consumer.override.auto.offset.reset") or "earliest"
    return [
        _outside(connector, index, tp, offset, bounds[tp], policy)
        for index, (tp, offset) in targets.items()
        if offset is not None and tp in bounds and not bounds[tp].start <= offset <= bounds[tp].end
    ]


def _outside(connector: DesiredConnector, index: int, tp: tuple[str, int], offset: int, bounds: LogBounds,
             policy: str) -> Diagnostic:
    side = f"past its end ({bounds.end})" if offset > bounds.end else f"below its log start ({bounds.start})"
    then = _RESET_TO.get(policy.strip().lower(), f"by auto.offset.reset {policy!r}")
    return diagnostics.warning(
        f"offset {offset} for {tp[0]}[{tp[1]}] is {side}: the task's consumer will reset it ({then})",
        source=connector.source,
        field_path=f"spec.offsets.offsets[{index}]",
        connector=connector.name,
        hint=f"the log holds offsets {bounds.start} to {bounds.end} now; `reconciler offsets {connector.name}` "
        "shows the committed ones",
    )


# What each `auto.offset.reset` does with an offset outside the log (Connect's default: earliest).
_RESET_TO: Mapping[str, str] = {
    "earliest": "auto.offset.reset earliest: the whole partition is read again from its log start",
    "latest": "auto.offset.reset latest: only records written after the next batch starts are read",
    "none": "auto.offset.reset none: the task fails",
}


def _with(action: Action, current: list[OffsetEntry]) -> Action:
    return action.model_copy(update={"current_offsets": current})
