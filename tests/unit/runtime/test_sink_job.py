"""A sink job's topics, group and consumer overrides, as Connect derives them from the config
(`runtime.sink.job`, `kafka.io.offset_stores.sink_group`)."""

from __future__ import annotations

import pytest

from reconciler.connectors.api import ConnectorError
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.runtime.sink.job import consumer_overrides, sink_topics


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"topics": "b, a,b"}, ["b", "a"]),
        ({"topics": "a,missing"}, ["a"]),
        ({"topics.regex": "a|b"}, ["a", "b"]),
        ({"topics.regex": "c.*"}, ["c1", "c2"]),
        ({"topics": "b", "topics.regex": "a"}, ["b", "a"]),
        ({}, []),
    ],
)
def test_sink_topics(config: dict[str, str | None], expected: list[str]) -> None:
    assert sink_topics(config, {"a": 1, "b": 2, "c1": 1, "c2": 1}) == expected


def test_bad_topics_regex_is_a_connector_error() -> None:
    with pytest.raises(ConnectorError, match="topics.regex"):
        sink_topics({"topics.regex": "("}, {"a": 1})


def test_sink_group_and_consumer_overrides_as_connect() -> None:
    config: dict[str, str | None] = {
        "consumer.override.group.id": "custom",
        "consumer.override.isolation.level": "read_uncommitted",
        "consumer.override.unset": None,
        "topics": "a",
    }
    assert sink_group("archive", {}) == "connect-archive"
    assert sink_group("archive", config) == "custom"
    assert consumer_overrides(config) == {"isolation.level": "read_uncommitted"}
