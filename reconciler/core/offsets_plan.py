"""The plan's offsets actions (KIP-875): stop → snapshot → alter/reset → return → record.

One OFFSETS action per pending request, carrying the steps the executor will take
(`offsets.executor`) and the connector's state change (its RETURN step), plus the warnings a
reviewer should see about a request. Pure; the planner (`core.planner`) calls it per connector.
"""

from __future__ import annotations

from reconciler.core.diagnostics import Diagnostic, Severity
from reconciler.core.live import LiveConnector, LiveState, RequestKind
from reconciler.core.models import DesiredConnector, OffsetsAction, OffsetsRequest, TargetState
from reconciler.core.normalize import config_value
from reconciler.core.plan import Action, ActionKind, OffsetsStep, OffsetsStepKind
from reconciler.core.transitions import DECLARED_FOR, offsets_modifiable


def offsets_action(
    desired: DesiredConnector, request: OffsetsRequest, current: LiveConnector | None, in_progress: bool
) -> Action:
    """One OFFSETS action; it also carries the connector's state change (its RETURN step)."""
    sink = desired.is_sink
    # A connector created in this plan is created STOPPED (`planner._plan_connector`).
    from_state = TargetState.STOPPED if current is None else DECLARED_FOR[current.target_state]
    reason = f"resuming interrupted offsets request {request.id}" if in_progress else f"offsets request {request.id}"
    return Action(
        kind=ActionKind.OFFSETS,
        connector=desired.name,
        reason=reason,
        from_state=from_state,
        to_state=desired.spec.state,
        request_id=request.id,
        offsets_action=request.action,
        offsets=list(request.offsets or []),
        steps=_offsets_steps(desired, request, current, sink, in_progress),
        is_sink=sink,
        request_status="in-progress" if in_progress else "pending",
    )


def _offsets_steps(
    desired: DesiredConnector, request: OffsetsRequest, current: LiveConnector | None, sink: bool, in_progress: bool
) -> list[OffsetsStep]:
    name, declared = desired.name, desired.spec.state
    steps: list[OffsetsStep] = []
    if not offsets_modifiable(current):
        stop = "stop the connector: commit zero tasks, write target state STOPPED, wait for its tasks to stop"
        steps.append(_step(OffsetsStepKind.STOP, stop))
    if in_progress:
        snapshot = "keep the offsets snapshot recorded when the request started (record one if none was)"
    elif sink:
        snapshot = f"record the current offsets of consumer group connect-{name} (kept for rollback)"
    else:
        snapshot = "record the connector's current source offsets (kept for rollback)"
    steps.append(_step(OffsetsStepKind.SNAPSHOT, snapshot))
    steps.append(_change_step(name, request, sink))
    if declared is not TargetState.STOPPED:
        steps.append(_step(OffsetsStepKind.RETURN, f"return to the declared state: {declared.value}"))
    steps.append(_step(OffsetsStepKind.RECORD, f"record offsets request {request.id} as applied"))
    return steps


def _change_step(name: str, request: OffsetsRequest, sink: bool) -> OffsetsStep:
    if request.action is OffsetsAction.ALTER:
        count = len(request.offsets or [])
        return _step(OffsetsStepKind.ALTER, f"alter the offsets of {count} partition(s)")
    if sink:
        return _step(OffsetsStepKind.RESET, f"reset all offsets: delete consumer group connect-{name}")
    return _step(OffsetsStepKind.RESET, "reset all offsets: write a tombstone for every known source partition")


def _step(kind: OffsetsStepKind, description: str) -> OffsetsStep:
    return OffsetsStep(kind=kind, description=description)


def sink_topic_warnings(desired: DesiredConnector, request: OffsetsRequest) -> list[Diagnostic]:
    """A sink partition on a topic the sink does not read is legal in Connect, but likely a typo.

    Only checked against an explicit `topics` list; `topics.regex` is left alone.
    """
    spec = desired.spec
    topics_value = config_value(spec.config.get("topics"))
    if not desired.is_sink or topics_value is None or not request.offsets:
        return []
    topics = {t.strip() for t in topics_value.split(",") if t.strip()}
    warnings: list[Diagnostic] = []
    for index, entry in enumerate(request.offsets):
        topic = entry.partition.get("kafka_topic")
        if topic is not None and str(topic) not in topics:
            warnings.append(
                Diagnostic(
                    severity=Severity.WARNING,
                    summary=f"partition names topic {str(topic)!r}, which this sink does not read "
                    f"(topics: {topics_value})",
                    source=desired.source,
                    field_path=f"spec.offsets.offsets[{index}].partition.kafka_topic",
                    connector=desired.name,
                    hint="check the topic name; Connect accepts offsets for any topic",
                )
            )
    return warnings


def interrupted_offsets_warnings(desired: DesiredConnector, live: LiveState) -> list[Diagnostic]:
    """An offsets request that was started and not finished, and that the manifest no longer asks for."""
    name = desired.name
    started = live.offsets_in_progress.get(name)
    declared = desired.spec.offsets
    if started is None or live.is_applied(name, RequestKind.OFFSETS, started):
        return []
    if declared is not None and declared.id == started:
        return []  # resumed by this plan
    now = f"superseded by request {declared.id}" if declared is not None else "no longer declared"
    return [
        Diagnostic(
            severity=Severity.WARNING,
            summary=f"offsets request {started} was interrupted before it finished and is {now}",
            source=desired.source,
            field_path="spec.offsets",
            connector=name,
            hint=f"to finish it, declare spec.offsets with id {started} again; its offsets snapshot is kept",
        )
    ]
