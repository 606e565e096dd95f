"""Kafka's topic-name rule (`core.topic_names`) and every config key that names a topic."""

from __future__ import annotations

import pytest

from reconciler.connectors.api import Connector, ConnectorConfig, SinkConnector, TaskConfig
from reconciler.connectors.checks import check_config
from reconciler.connectors.configdef import ConfigDef, ConfigKey, Type, topic_names
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.file_sink import FileSinkConnector
from reconciler.connectors.file_source import FileSourceConnector
from reconciler.connectors.parquet_sink import ParquetSinkConnector
from reconciler.core.topic_names import topic_name_problem

CHARACTERS = "contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("orders", None),
        ("Orders_v2.eu-west-1", None),
        ("." * 3, None),  # only `.` and `..` themselves are refused, as in Kafka
        ("a" * 249, None),
        ("", "the empty string is not allowed"),
        (".", "'.' is not allowed"),
        ("..", "'..' is not allowed"),
        ("a" * 250, "it is 250 characters long, longer than the max allowed length 249"),
        ("my topic!", f"'my topic!' {CHARACTERS}"),
        ("orders\n", f"'orders\\n' {CHARACTERS}"),  # `$` in a regex would have let the newline through
        ("ordérs", f"'ordérs' {CHARACTERS}"),
        ("a/b", f"'a/b' {CHARACTERS}"),
    ],
)
def test_kafkas_topic_name_rule(name: str, problem: str | None) -> None:
    assert topic_name_problem(name) == problem


def test_the_validator_checks_one_name_or_each_of_a_list() -> None:
    assert ConfigKey("t", Type.STRING, validator=topic_names).parse(" orders ") == ("orders", None)
    assert ConfigKey("t", Type.STRING, validator=topic_names).parse("my topic!") == (
        None, f"invalid topic name: 'my topic!' {CHARACTERS}")
    assert ConfigKey("t", Type.LIST, validator=topic_names).parse("a, ..") == (None, "invalid topic name: '..' is not allowed")
    assert ConfigKey("t", Type.LIST, validator=topic_names).parse("a, b") == (["a", "b"], None)


def test_a_plugins_own_key_gets_the_validator_through_define() -> None:
    definition = ConfigDef().define("target", Type.STRING, "Where to write.", validator=topic_names)
    assert [(p.key, p.message) for p in definition.validate({"target": "a b"})] == [
        ("target", f"invalid topic name: 'a b' {CHARACTERS}")]
    assert definition.parse({"target": "a b"}).problems == definition.validate({"target": "a b"})


@pytest.mark.parametrize(
    ("name", "cls", "config", "key"),
    [
        ("file-source", FileSourceConnector, {"path": "/in", "topic": "my topic!"}, "topic"),
        ("datagen", DatagenConnector, {"count": "1", "topic": "my topic!"}, "topic"),
        ("file-sink", FileSinkConnector, {"path": "/out", "topics": "a,my topic!"}, "topics"),
        ("parquet-sink", ParquetSinkConnector, {"path": "/out", "topics": "my topic!"}, "topics"),
        # Connect's own keys that name a topic, checked whatever the plugin declares.
        ("file-sink", FileSinkConnector, {"path": "/out", "topics": "a", "errors.deadletterqueue.topic.name": "my topic!"},
         "errors.deadletterqueue.topic.name"),
        ("datagen", DatagenConnector, {"count": "1", "topic": "t", "offsets.storage.topic": "my topic!"},
         "offsets.storage.topic"),
    ],
)
def test_every_key_that_names_a_topic_is_checked(name: str, cls: type[Connector], config: dict[str, str], key: str) -> None:
    assert [(p.key, p.message) for p in check_config(name, cls, config)] == [
        (key, f"invalid topic name: 'my topic!' {CHARACTERS}")]


class _Sink(SinkConnector):
    """Declares no keys: `topics` is Connect's, with Connect's check."""

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return []


def test_a_sink_that_leaves_topics_to_connect_gets_the_check_too() -> None:
    assert [(p.key, p.message) for p in check_config("x", _Sink, {"topics": "ok, ."})] == [
        ("topics", "invalid topic name: '.' is not allowed")]


def test_a_regex_of_topics_is_not_a_topic_name() -> None:
    assert check_config("x", _Sink, {"topics.regex": "orders-.*"}) == []
