"""Reads without side effects (issue 10, point 5): only `apply`, `run` and `watch` create topics.

`status`, `plan`, `snapshot` and `offsets` on a group without its internal topics exit 1 and
say which topics are missing, for which group, and what to check; they create nothing. A group
only Connect has used (no `-reconciler` topic) reads fine, and is left as it was. `plan
--new-group` plans a group without any of its topics against an empty state (issue 27, item 6).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from polling import until

from reconciler.kafka.io.admin import topic_partitions
from reconciler.kafka.io.store import prepare
from reconciler.kafka.settings import KafkaSettings
from test_apply import cli, manifest, write
from offsets_support import create_topic

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest


def topics_of(settings: KafkaSettings) -> list[str]:
    return sorted(name for name in topic_partitions(settings) if name.startswith(settings.group_id))


def create_compacted(settings: KafkaSettings, *topics: tuple[str, int]) -> None:
    """As a Connect worker creates its topics; returns once the cluster's metadata shows them."""
    for name, partitions in topics:
        create_topic(settings, name, partitions, **{"cleanup.policy": "compact"})
    until(lambda: {name for name, _ in topics} <= set(topics_of(settings)), settings.timeout_s,
          what="the created topics in the metadata")


READS = {
    "status": ["status"],
    "status NAME": ["status", "x", "--format", "json"],
    "snapshot": ["snapshot"],
    "plan": ["plan", "MANIFESTS"],
    "offsets": ["offsets", "x"],
}


@pytest.mark.parametrize("command", list(READS))
def test_a_read_on_a_group_without_topics_exits_1_and_creates_nothing(
    command: str, capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    manifests = write(tmp_path / "c.yaml", manifest("x", topic="t", count="1"))
    args = [str(manifests) if arg == "MANIFESTS" else arg for arg in READS[command]]
    code, out, err = cli(capsys, kafka_settings, *args)
    group = kafka_settings.group_id
    assert (code, out) == (1, "")
    assert f"error: group {group} has no internal topics at {kafka_settings.bootstrap_servers}" in err
    assert f"{group}-configs (configs), {group}-status (status), {group}-offsets (offsets)" in err
    assert "check --group-id (a typo?) and --bootstrap-servers" in err
    assert "Only `reconciler apply`, `run` and `watch` create a group's topics" in err
    assert topics_of(kafka_settings) == []


def test_the_hint_names_the_groups_that_exist(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, kafka: KafkaUnderTest
) -> None:
    prepare(kafka_settings)  # a real group on the cluster…
    typo = kafka.settings(kafka_settings.group_id + "x")
    code, _, err = cli(capsys, typo, "status")  # …and a typo of it
    assert code == 1
    assert "groups with internal topics there:" in err and kafka_settings.group_id in err
    assert topics_of(typo) == []


def test_a_group_missing_some_topics_names_them(capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings) -> None:
    create_compacted(kafka_settings, (kafka_settings.topics.configs, 1))
    code, _, err = cli(capsys, kafka_settings, "snapshot")
    group = kafka_settings.group_id
    assert code == 1
    assert f"group {group} is missing internal topic(s)" in err
    assert f"{group}-status (status), {group}-offsets (offsets)" in err and "configs (configs)" not in err
    assert topics_of(kafka_settings) == [f"{group}-configs"]


def test_a_group_only_connect_used_is_read_without_creating_our_topic(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    topics = kafka_settings.topics
    create_compacted(kafka_settings, (topics.configs, 1), (topics.status, 5), (topics.offsets, 25))
    manifests = write(tmp_path / "c.yaml", manifest("x", topic="t", count="1"))
    for args in (["status"], ["snapshot"], ["plan", str(manifests)]):
        code, out, err = cli(capsys, kafka_settings, *args)
        assert code == 0, err
    assert out.rstrip().endswith("Plan: 1 to create, 0 to update, 0 to delete, 0 state changes, 0 restarts, 0 offsets requests.")
    assert topics.reconciler not in topics_of(kafka_settings)
    # The writers do create it.
    assert cli(capsys, kafka_settings, "apply", str(manifests))[0] == 0
    assert topics.reconciler in topics_of(kafka_settings)


# --- plan --new-group (issue 27, item 6) ------------------------------------------------------


def test_plan_new_group_plans_against_an_empty_state_and_creates_nothing(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    manifests = write(tmp_path / "c.yaml", manifest("x", topic="t", count="1"))
    code, out, err = cli(capsys, kafka_settings, "plan", str(manifests), "--new-group", "--detailed-exitcode")
    group = kafka_settings.group_id
    assert code == 2, err
    assert '+ connector "x" will be created' in out and "Plan: 1 to create" in out
    assert f"note: group {group} has no internal topics at {kafka_settings.bootstrap_servers} yet (--new-group)" in err
    assert "planned against an empty state" in err
    assert topics_of(kafka_settings) == []


def test_plan_new_group_on_a_group_that_exists_reads_it(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    manifests = write(tmp_path / "c.yaml", manifest("x", topic="t", count="1"))
    assert cli(capsys, kafka_settings, "apply", str(manifests))[0] == 0
    code, out, err = cli(capsys, kafka_settings, "plan", str(manifests), "--new-group", "--detailed-exitcode")
    assert (code, "note:" in err) == (0, False), err
    assert "No changes." in out


def test_plan_new_group_keeps_the_error_for_a_group_missing_some_topics(
    capsys: pytest.CaptureFixture[str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    create_compacted(kafka_settings, (kafka_settings.topics.configs, 1))
    manifests = write(tmp_path / "c.yaml", manifest("x", topic="t", count="1"))
    code, out, err = cli(capsys, kafka_settings, "plan", str(manifests), "--new-group")
    assert (code, out) == (1, "")
    assert f"group {kafka_settings.group_id} is missing internal topic(s)" in err
