"""`Action` is one flat model (its JSON is pinned); `ACTION_FIELDS` says which fields each kind
carries, and a field of another kind is refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from reconciler.core.models import TargetState
from reconciler.core.plan import ACTION_FIELDS, Action, ActionKind, Plan
from reconciler.render.json import load_plan_json, render_json


def test_every_kind_has_its_fields() -> None:
    assert set(ACTION_FIELDS) == set(ActionKind)
    assert all(fields <= set(Action.model_fields) for fields in ACTION_FIELDS.values())


def test_a_field_of_another_kind_is_refused() -> None:
    with pytest.raises(ValidationError, match="a create action has no include_tasks"):
        Action(kind=ActionKind.CREATE, connector="c", include_tasks=True)
    with pytest.raises(ValidationError, match="a pause action has no request_id, tasks_max"):
        Action(kind=ActionKind.PAUSE, connector="c", tasks_max=2, request_id="r1")


def test_defaults_of_other_kinds_pass_and_a_saved_plan_reads_back() -> None:
    """The JSON holds every field of every action, at its default where the kind has none."""
    plan = Plan(actions=[Action(kind=ActionKind.STOP, connector="c", to_state=TargetState.STOPPED, include_tasks=None)])
    assert load_plan_json(render_json(plan)) == plan
