"""Current offsets in the plan, so a reviewer sees each partition move from → to.

The planner is pure and leaves `Action.current_offsets` empty; when the plan is made against
Kafka, `with_current_offsets` reads each offsets request's connector's offsets (its sink group,
or its source partitions) and fills them in. A request resumed after a crash shows the offsets
of its rollback snapshot instead: those are the "from" of the request, whatever it already did.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.core.models import DesiredConnector, OffsetEntry
from reconciler.core.normalize import connector_properties
from reconciler.core.plan import Action, ActionKind, Plan
from reconciler.kafka.settings import KafkaSettings
from reconciler.kafka.io.store import read_view
from reconciler.offsets.model import current_entries
from reconciler.offsets.state import current_body


def with_current_offsets(settings: KafkaSettings, plan: Plan, desired: Sequence[DesiredConnector]) -> Plan:
    """The plan with `current_offsets` set on its offsets actions (no I/O when it has none)."""
    offsets_actions = [a for a in plan.actions if a.kind is ActionKind.OFFSETS]
    if not offsets_actions:
        return plan
    by_name = {connector.name: connector for connector in desired}
    resumed = any(a.request_status == "in-progress" for a in offsets_actions)
    state = read_view(settings, topics="prepared", task_configs=False) if resumed else None
    actions = []
    for action in plan.actions:
        connector = by_name.get(action.connector)
        if action.kind is ActionKind.OFFSETS and connector is not None and connector.spec.offsets is not None:
            snapshot = state.snapshot(action.connector, action.request_id or "") if state is not None else None
            body = snapshot if snapshot is not None else current_body(settings, connector.name, connector_properties(connector))
            action = _with(action, current_entries(body, connector.spec.offsets))
        actions.append(action)
    return plan.model_copy(update={"actions": actions})


def _with(action: Action, current: list[OffsetEntry]) -> Action:
    return action.model_copy(update={"current_offsets": current})
