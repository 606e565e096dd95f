"""KIP-158 settings of a source connector: what the runtime creates, what `validate` refuses."""

from __future__ import annotations

import pytest

from reconciler.connectors.checks import check_config
from reconciler.connectors.datagen import DatagenConnector
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.topic_creation import TopicCreation, from_config


def test_both_default_keys_ask_for_topic_creation() -> None:
    config = {
        "topic.creation.default.partitions": "3",
        "topic.creation.default.replication.factor": " -1 ",
        "topic.creation.default.cleanup.policy": "compact",
        "topic.creation.default.include": ".*",  # a group's pattern, not a topic config
        "topic": "t",
    }
    assert from_config(config) == TopicCreation(3, -1, {"cleanup.policy": "compact"})


@pytest.mark.parametrize(
    "config",
    [{}, {"topic.creation.default.partitions": "3"}, {"topic.creation.default.replication.factor": "1"}],
)
def test_without_both_keys_nothing_is_created(config: dict[str, str]) -> None:
    assert from_config(config) is None


def test_a_bad_number_is_an_error() -> None:
    with pytest.raises(ReconcilerError, match="must be integers"):
        from_config({"topic.creation.default.partitions": "x", "topic.creation.default.replication.factor": "1"})


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"topic.creation.default.partitions": "2", "topic.creation.default.replication.factor": "-1"}, []),
        ({"topic.creation.default.partitions": "0", "topic.creation.default.replication.factor": "1"},
         [("topic.creation.default.partitions", "must be a positive number, or -1 for the broker's default")]),
        ({"topic.creation.default.partitions": "-2", "topic.creation.default.replication.factor": "1"},
         [("topic.creation.default.partitions", "must be at least -1; got -2")]),
        ({"topic.creation.default.partitions": "2"},
         [("topic.creation.default.replication.factor", "is required with the other topic.creation.default setting")]),
        ({"topic.creation.groups": "compacted"}, [("topic.creation.groups", "is not supported: only the `default` group is")]),
        ({"topic.creation.default.partitions": "2", "topic.creation.default.replication.factor": "1",
          "topic.creation.default.retention.ms": "1000"}, []),
    ],
)
def test_validate_checks_them(extra: dict[str, str], expected: list[tuple[str, str]]) -> None:
    config = {"name": "c", "connector.class": "datagen", "tasks.max": "1", "topic": "t", "count": "1", **extra}
    assert [(p.key, p.message) for p in check_config("datagen", DatagenConnector, config)] == expected
