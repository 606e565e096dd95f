"""Field-level config diff: normalised (no perpetual diffs), sorted, secrets masked."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.core.diff import added_fields, diff_config, removed_fields
from reconciler.core.models import ConnectorManifest, DesiredConnector
from reconciler.core.normalize import connector_properties
from reconciler.core.plan import FieldChange
from reconciler.core.redact import MASK


def props(config: dict[str, Any], tasks_max: int = 1, sensitive: list[str] | None = None) -> dict[str, str | None]:
    manifest = ConnectorManifest.model_validate(
        {
            "apiVersion": "reconciler.io/v1",
            "kind": "Connector",
            "metadata": {"name": "c"},
            "spec": {"class": "datagen", "tasksMax": tasks_max, "config": config, "sensitive": sensitive or []},
        }
    )
    return connector_properties(DesiredConnector(manifest=manifest))


CONNECT_WRITTEN = {"name": "c", "connector.class": "datagen", "tasks.max": "1"}


@pytest.mark.parametrize(
    ("manifest_config", "live_config"),
    [
        pytest.param({"batch.size": 500}, {"batch.size": "500"}, id="int-vs-string"),
        pytest.param({"enabled": True, "strict": False}, {"enabled": "true", "strict": "false"}, id="bool-vs-string"),
        pytest.param({"ratio": 0.25}, {"ratio": "0.25"}, id="float-vs-string"),
        pytest.param({"opt": None}, {"opt": None}, id="null"),
        pytest.param({"topic": "orders"}, {"topic": " orders \n"}, id="whitespace-trimmed-like-ConfigDef"),
    ],
)
def test_equal_configs_never_diff(manifest_config: dict[str, Any], live_config: dict[str, str | None]) -> None:
    assert diff_config(props(manifest_config), {**CONNECT_WRITTEN, **live_config}, ()) == []


def test_live_record_without_name_and_default_tasks_max_is_equal() -> None:
    assert diff_config(props({"topic": "t"}), {"connector.class": "datagen", "topic": "t"}, ()) == []


def test_missing_tasks_max_in_live_differs_from_declared_two() -> None:
    changes = diff_config(props({}, tasks_max=2), {"connector.class": "datagen"}, ())
    assert changes == [FieldChange(op="change", key="tasks.max", old="1", new="2")]


def test_number_text_forms_are_a_real_change() -> None:
    # Java's INT parser rejects "500.0": hiding this diff would hide a real change.
    changes = diff_config(props({"batch.size": "500.0"}), {**CONNECT_WRITTEN, "batch.size": "500"}, ())
    assert [c.op for c in changes] == ["change"]


def test_add_change_remove_sorted_by_key() -> None:
    desired = props({"b.new": "1", "a.changed": "2", "z.same": "x"})
    live = {**CONNECT_WRITTEN, "a.changed": "1", "c.removed": "old", "z.same": "x"}
    assert diff_config(desired, live, ()) == [
        FieldChange(op="change", key="a.changed", old="1", new="2"),
        FieldChange(op="add", key="b.new", new="1"),
        FieldChange(op="remove", key="c.removed", old="old"),
    ]


def test_changed_secret_shows_changed_never_its_values() -> None:
    desired = props({"db.password": "new-secret"})
    changes = diff_config(desired, {**CONNECT_WRITTEN, "db.password": "old-secret"}, ())
    assert changes == [FieldChange(op="change", key="db.password", old=MASK, new=MASK, sensitive=True)]


def test_unchanged_secret_does_not_diff() -> None:
    assert diff_config(props({"api.token": "s"}), {**CONNECT_WRITTEN, "api.token": "s"}, ()) == []


@pytest.mark.parametrize(
    ("desired_config", "live_extra", "expected"),
    [
        ({"db.password": "s3cr3t"}, {}, FieldChange(op="add", key="db.password", new=MASK, sensitive=True)),
        ({}, {"aws.secret.access.key": "s3cr3t"},
         FieldChange(op="remove", key="aws.secret.access.key", old=MASK, sensitive=True)),
        ({"db.password": None}, {"db.password": "s3cr3t"},
         FieldChange(op="change", key="db.password", old=MASK, new=None, sensitive=True)),
    ],
)
def test_secret_add_remove_masked(
    desired_config: dict[str, Any], live_extra: dict[str, str], expected: FieldChange
) -> None:
    assert diff_config(props(desired_config), {**CONNECT_WRITTEN, **live_extra}, ()) == [expected]


def test_spec_sensitive_keys_are_masked() -> None:
    desired = props({"connection.url": "jdbc:pg://u:pw@h/db"}, sensitive=["connection.url"])
    changes = diff_config(desired, CONNECT_WRITTEN, ["connection.url"])
    assert changes == [FieldChange(op="add", key="connection.url", new=MASK, sensitive=True)]


def test_added_and_removed_fields_list_everything_masked() -> None:
    fields = {"topic": "t", "db.password": "pw", "name": "c"}
    assert added_fields(fields, ()) == [
        FieldChange(op="add", key="db.password", new=MASK, sensitive=True),
        FieldChange(op="add", key="name", new="c"),
        FieldChange(op="add", key="topic", new="t"),
    ]
    assert [(c.op, c.key, c.old) for c in removed_fields(fields, ())] == [
        ("remove", "db.password", MASK),
        ("remove", "name", "c"),
        ("remove", "topic", "t"),
    ]
