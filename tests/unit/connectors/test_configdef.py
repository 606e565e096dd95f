"""ConfigDef (typed plugin config keys), Connect's own keys, and the checks `validate` runs with them."""

from __future__ import annotations


import pytest

from reconciler.connectors.api import ConfigProblem, ConnectorConfig, SinkConnector, SourceConnector, TaskConfig
from reconciler.connectors.checks import check_config
from reconciler.connectors.configdef import REQUIRED, ConfigDef, ConfigKey, Type
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.framework import ANY, SINK, SOURCE
from reconciler.connectors.parquet_sink import ParquetSinkConnector

# --- parsing one value, as Java's ConfigDef.parseType -------------------------------------------


@pytest.mark.parametrize(
    ("key", "text", "value", "problem"),
    [
        (ConfigKey("n", Type.INT), " 42 ", 42, None),
        (ConfigKey("n", Type.INT), "+7", 7, None),
        (ConfigKey("n", Type.INT), "4.0", None, "must be an integer; got '4.0'"),
        (ConfigKey("n", Type.INT), "1_000", None, "must be an integer; got '1_000'"),  # Python's int() takes it, Java not
        (ConfigKey("n", Type.INT), "2147483648", None, "must be an integer from -2147483648 to 2147483647; got '2147483648'"),
        (ConfigKey("n", Type.SHORT), "40000", None, "must be an integer from -32768 to 32767; got '40000'"),
        (ConfigKey("n", Type.LONG), "2147483648", 2147483648, None),
        (ConfigKey("n", Type.INT, minimum=1), "0", None, "must be at least 1; got 0"),
        (ConfigKey("n", Type.INT, maximum=9), "10", None, "must be at most 9; got 10"),
        (ConfigKey("x", Type.DOUBLE), "1.5e3", 1500.0, None),
        (ConfigKey("x", Type.DOUBLE), "abc", None, "must be a number; got 'abc'"),
        (ConfigKey("x", Type.DOUBLE, minimum=0.5), "0.25", None, "must be at least 0.5; got 0.25"),
        (ConfigKey("b", Type.BOOLEAN), "TRUE", True, None),
        (ConfigKey("b", Type.BOOLEAN), " false ", False, None),
        (ConfigKey("b", Type.BOOLEAN), "yes", None, "must be true or false; got 'yes'"),
        (ConfigKey("l", Type.LIST), " a , b,,c ", ["a", "b", "c"], None),
        (ConfigKey("s", Type.STRING), "  padded  ", "padded", None),
        (ConfigKey("s", Type.STRING, choices=("a", "b")), "c", None, "must be one of a, b; got 'c'"),
        (ConfigKey("s", Type.STRING, choices=("a", "b")), "A", None, "must be one of a, b; got 'A'"),
        (ConfigKey("s", Type.STRING, choices=("poll", "interval"), ignore_case=True), "POLL", "POLL", None),
    ],
)
def test_a_value_parses_as_java_parses_it(key: ConfigKey, text: str, value: object, problem: str | None) -> None:
    assert key.parse(text) == (value, problem)


DEF = (
    ConfigDef()
    .define("topic", Type.STRING, "where to")
    .define("count", Type.LONG, "how many", minimum=0)
    .define("batch", Type.INT, "per batch", default=10, minimum=1)
    .define("mode", Type.STRING, "how", default="fast", choices=("fast", "slow"))
    .define_prefix("extra.", "anything under extra.")
)


@pytest.mark.parametrize(
    ("config", "values", "problems"),
    [
        ({"topic": "t", "count": "5"}, {"topic": "t", "count": 5, "batch": 10, "mode": "fast"}, []),
        ({"topic": " ", "count": None}, {"topic": None, "count": None, "batch": 10, "mode": "fast"},
         [ConfigProblem("topic", "is required"), ConfigProblem("count", "is required (an integer)")]),
        ({"topic": "t", "count": "-1", "batch": "x", "mode": "medium"},
         {"topic": "t", "count": None, "batch": 10, "mode": "fast"},
         [ConfigProblem("count", "must be at least 0; got -1"), ConfigProblem("batch", "must be an integer; got 'x'"),
          ConfigProblem("mode", "must be one of fast, slow; got 'medium'")]),
    ],
)
def test_parse_gives_every_value_or_its_default_and_every_problem(
    config: ConnectorConfig, values: dict[str, object], problems: list[ConfigProblem]
) -> None:
    parsed = DEF.parse(config)
    assert (dict(parsed.values), parsed.problems) == (values, problems)
    assert DEF.validate(config) == problems


def test_typed_getters() -> None:
    parsed = DEF.parse({"topic": "t", "count": "7", "mode": "slow"})
    assert (parsed.string("topic"), parsed.integer("count"), parsed.integer("batch"), parsed.string("mode")) == ("t", 7, 10, "slow")
    assert parsed.optional_string("count") is None and parsed.strings("topic") == []


def test_a_definition_is_immutable_and_refuses_a_key_twice() -> None:
    extended = DEF.define("more", Type.BOOLEAN, default=False)
    assert "more" in extended.keys and "more" not in DEF.keys
    with pytest.raises(ValueError, match="defined twice"):
        DEF.define("topic", Type.STRING)
    merged = ConfigDef().define("topic", Type.INT).merge(DEF)
    assert merged.keys["topic"].type is Type.INT  # the receiver's definition wins
    assert list(merged.keys) == ["topic", "count", "batch", "mode"]


def test_unknown_keys_and_prefixes() -> None:
    assert DEF.unknown(["topic", "extra.whatever", "topik", "extra"]) == ["topik", "extra"]


def test_describe_is_plain_data() -> None:
    assert DEF.describe()[1] == {"name": "count", "type": "long", "required": True, "minimum": 0, "doc": "how many"}
    assert DEF.describe()[3]["default"] == "fast" and DEF.describe()[3]["choices"] == ["fast", "slow"]
    assert ConfigKey("x", Type.STRING).default is REQUIRED


# --- Connect's own keys (ConnectorConfig, SinkConnectorConfig, SourceConnectorConfig of 4.3.1) ---


@pytest.mark.parametrize(
    "key",
    [
        "name", "connector.class", "tasks.max", "tasks.max.enforce", "connector.plugin.version",
        "key.converter", "key.converter.schemas.enable", "value.converter", "value.converter.plugin.version",
        "header.converter", "transforms", "transforms.mask.type", "predicates", "predicates.p.pattern",
        "errors.tolerance", "errors.retry.timeout", "errors.log.enable", "errors.anything.new",
        "config.action.reload", "producer.override.linger.ms", "consumer.override.group.id", "admin.override.acks",
    ],
)
def test_connect_keys_for_every_connector(key: str) -> None:
    assert SINK.knows(key) and SOURCE.knows(key)


@pytest.mark.parametrize("key", ["topics", "topics.regex"])
def test_connect_keys_of_sinks(key: str) -> None:
    assert SINK.knows(key) and not SOURCE.knows(key) and ANY.knows(key)


def test_dead_letter_queue_keys_are_typed_for_sinks() -> None:
    assert SINK.keys["errors.deadletterqueue.topic.replication.factor"].type is Type.SHORT
    assert SOURCE.knows("errors.deadletterqueue.topic.name")  # under `errors.*`: never unknown


@pytest.mark.parametrize(
    "key",
    ["exactly.once.support", "transaction.boundary", "transaction.boundary.interval.ms", "offsets.storage.topic",
     "topic.creation.groups", "topic.creation.default.partitions"],
)
def test_connect_keys_of_sources(key: str) -> None:
    assert SOURCE.knows(key) and not SINK.knows(key) and ANY.knows(key)


# --- check_config: what `validate` reports for one connector ------------------------------------


def checked(cls: type, config: dict[str, str], name: str = "plugin") -> list[tuple[str, str, str | None, bool]]:
    props = {"name": "c", "connector.class": name, "tasks.max": "1", **config}
    return [(p.key, p.message, p.hint, p.unknown) for p in check_config(name, cls, props)]


def test_a_valid_config_has_no_problem() -> None:
    assert checked(DatagenConnector, {"topic": "t", "count": "5", "errors.tolerance": "all"}, "datagen") == []


def test_an_unknown_key_gets_a_did_you_mean() -> None:
    assert checked(DatagenConnector, {"topic": "t", "count": "5", "topik": "x", "zzz": "1"}, "datagen") == [
        ("topik", "unknown key: neither `datagen` nor Kafka Connect defines it", "did you mean `topic`?", True),
        ("zzz", "unknown key: neither `datagen` nor Kafka Connect defines it",
         "`reconciler plugins datagen` lists the keys it takes", True),
    ]


def test_a_key_of_the_other_kind_is_reported() -> None:
    assert checked(DatagenConnector, {"topic": "t", "count": "5", "topics": "t"}, "datagen") == [
        ("topics", "applies to sink connectors only; `datagen` is a source connector", None, True)
    ]
    assert checked(ParquetSinkConnector, {"topics": "t", "path": "/p", "exactly.once.support": "required"}, "parquet-sink") == [
        ("exactly.once.support", "applies to source connectors only; `parquet-sink` is a sink connector", None, True)
    ]


def test_connect_keys_are_checked_too() -> None:
    assert checked(DatagenConnector, {"topic": "t", "count": "5", "errors.retry.timeout": "soon"}, "datagen") == [
        ("errors.retry.timeout", "must be an integer; got 'soon'", None, False)
    ]


def test_a_plugins_own_definition_of_a_connect_key_wins() -> None:
    # file-source defines errors.tolerance itself: one problem, the plugin's.
    from reconciler.connectors.file_source import FileSourceConnector

    got = checked(FileSourceConnector, {"path": "/in", "topic": "t", "errors.tolerance": "some"}, "file-source")
    assert got == [("errors.tolerance", "must be one of none, all; got 'some'", None, False)]


def test_client_overrides_must_be_client_settings() -> None:
    got = checked(DatagenConnector, {"topic": "t", "count": "5", "producer.override.ssl.truststore.location": "/x.jks",
                                     "producer.override.sasl.jaas.config": "not jaas"}, "datagen")
    assert [(key, unknown) for key, _, _, unknown in got] == [
        ("producer.override.ssl.truststore.location", True), ("producer.override.sasl.jaas.config", False)]
    assert "ssl.ca.location" in (got[0][2] or "")


class _Sink(SinkConnector):
    """A plugin that declares no keys: only Connect's keys and its own validate() are checked."""

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return [ConfigProblem("mine", "is wrong")] if config.get("mine") == "bad" else []

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return []


class _Crashing(SourceConnector):
    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        raise KeyError("boom")

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return []


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"topics": "t", "anything": "goes"}, []),
        ({"topics": "t", "mine": "bad"}, [("mine", "is wrong", None, False)]),
        ({}, [("topics", "a sink connector must set `topics` or `topics.regex`", None, False)]),
        ({"topics": "t", "topics.regex": "t.*"}, [("topics.regex", "cannot be set together with `topics`", "keep one of the two", False)]),
        ({"topics.regex": "t(["}, [("topics.regex", "is not a valid regular expression: unterminated character set at position 2", None, False)]),
        # A plugin that declares no keys may take any, as in Connect (docs/compatibility.md).
        ({"topics": "t", "offsets.storage.topic": "o"}, []),
        # Connect's SinkConnectorConfig: the dead letter queue is not a topic the sink consumes.
        ({"topics": "a, dlq", "errors.deadletterqueue.topic.name": " dlq "},
         [("topics", "includes the dead letter queue topic 'dlq': the sink would consume the records it sends there",
           None, False)]),
        ({"topics.regex": "orders.*", "errors.deadletterqueue.topic.name": "orders-dlq"},
         [("topics.regex", "matches the dead letter queue topic 'orders-dlq': the sink would consume the records it "
           "sends there", None, False)]),
        ({"topics": "a,dlq2", "errors.deadletterqueue.topic.name": "dlq"}, []),
        ({"topics.regex": "orders", "errors.deadletterqueue.topic.name": "orders-dlq"}, []),  # matches() is whole
    ],
)
def test_a_plugin_without_declared_keys(config: dict[str, str], expected: list[tuple[str, str, str | None, bool]]) -> None:
    assert checked(_Sink, config) == expected


def test_a_plugin_whose_validate_raises_is_reported_not_raised() -> None:
    assert checked(_Crashing, {}) == [("connector.class", "the plugin's validate() raised KeyError: 'boom'", None, False)]


def test_built_in_settings_read_through_their_definitions(tmp_path: object) -> None:
    from reconciler.connectors.datagen import DatagenSettings

    settings = DatagenSettings.parse({"topic": "t", "count": "9", "shards": "3"})
    assert (settings.topic, settings.count, settings.shards, settings.batch_size, settings.record_bytes) == ("t", 9, 3, 100_000, 100)


