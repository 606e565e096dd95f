"""`reconciler apply`'s summary line: every record the apply committed, its offsets requests' too."""

from __future__ import annotations

from reconciler.app.apply import ApplyOutcome
from reconciler.cli.apply_cmd import result_lines
from reconciler.core.live import LiveState
from reconciler.core.models import OffsetsAction
from reconciler.core.plan import Action, ActionKind, OffsetsStepKind, Plan
from reconciler.offsets.model import OffsetsOutcome

OFFSETS_ONLY = Plan(actions=[Action(kind=ActionKind.OFFSETS, connector="src", request_id="rewind-2")])


def outcome(plan: Plan, written: int) -> ApplyOutcome:
    return ApplyOutcome(plan=plan, live=LiveState(), records_written=written, pending_offsets=list(plan.actions))


def waiting(written: int) -> OffsetsOutcome:
    return OffsetsOutcome(
        connector="src",
        request_id="rewind-2",
        action=OffsetsAction.RESET,
        status="waiting",
        message="the connector is stopped; …",
        steps=(OffsetsStepKind.STOP,),
        records_written=written,
    )


def test_an_offsets_request_on_a_running_connector_counts_its_stop_step() -> None:
    # The plan's transaction writes nothing for an offsets action; the stop step wrote the
    # zero-task commit, STOPPED and the request's progress record, in a transaction of its own.
    lines = result_lines(outcome(OFFSETS_ONLY, 0), [waiting(3)])
    assert lines[-1] == "Apply complete: 3 records written (0 for the plan's changes, 3 by offsets requests)"


def test_an_apply_that_wrote_nothing_says_so() -> None:
    # The next apply finds the connector stopped already: nothing more is written until a tick.
    assert result_lines(outcome(OFFSETS_ONLY, 0), [waiting(0)])[-1] == "Apply complete: 0 records written"


def test_without_offsets_requests_the_plans_records_alone() -> None:
    plan = Plan(actions=[Action(kind=ActionKind.CREATE, connector="a")])
    assert result_lines(outcome(plan, 1)) == ["Apply complete: 1 record written"]
