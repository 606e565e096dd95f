"""`key.converter` / `value.converter` and their settings, read into a typed `Converter` and
checked before deploy for a plugin that converts (`connectors.converters.settings`)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from reconciler.connectors.api import ConnectorConfig, InvalidConnectorConfig, SinkConnector, SinkTask, TaskConfig
from reconciler.connectors.checks import check_config
from reconciler.connectors.configdef import ConfigDef, Type
from reconciler.connectors.converters.settings import BYTES, JSON, STRING, Converter, converter, read_converter
from reconciler.manifests.schema_plugins import _clause

BASE = {"name": "c", "connector.class": "typed-sink", "tasks.max": "1", "topics": "t", "path": "/out"}


class TypedSink(SinkConnector):
    """A sink that reads its values with Connect's converters (its keys stay bytes)."""

    config_def = ConfigDef().define("path", Type.STRING, "Where.")
    converters = frozenset({"value"})
    task_class = SinkTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return [dict(config)]  # type: ignore[arg-type]


def problems(extra: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(p.key, p.message) for p in check_config("typed-sink", TypedSink, {**BASE, **extra})]


@pytest.mark.parametrize(("config", "expected"), [
    ({}, Converter("bytes")),
    ({"value.converter": BYTES}, Converter("bytes")),
    ({"value.converter": JSON}, Converter("json")),
    ({"value.converter": f" {JSON} ", "value.converter.schemas.enable": "FALSE",
      "value.converter.decimal.format": "numeric", "value.converter.replace.null.with.default": "false"},
     Converter("json", schemas_enable=False, decimal_format="NUMERIC", replace_null_with_default=False)),
    ({"value.converter": STRING}, Converter("string")),
    ({"value.converter": STRING, "value.converter.converter.encoding": "iso-8859-1"}, Converter("string", encoding="latin-1")),
])
def test_a_converter_and_its_settings_are_read(config: dict[str, str], expected: Converter) -> None:
    assert read_converter(config, "value") == (expected, [])
    assert converter(config, "value") == expected


def test_the_key_converter_is_read_apart_from_the_value_converter() -> None:
    config = {"key.converter": STRING, "value.converter": JSON, "value.converter.schemas.enable": "false"}
    assert converter(config, "key") == Converter("string")
    assert converter(config, "value").schemas_enable is False


def test_a_plugin_that_converts_takes_the_three_classes() -> None:
    for name in (JSON, STRING, BYTES):
        assert problems({"value.converter": name}) == []


@pytest.mark.parametrize(("extra", "key", "words"), [
    ({"value.converter": "io.confluent.connect.avro.AvroConverter"}, "value.converter", "not a converter"),
    ({"value.converter": JSON, "value.converter.decimal.format": "HEX"}, "value.converter.decimal.format", "HEX"),
    ({"value.converter": JSON, "value.converter.schemas.enable": "maybe"}, "value.converter.schemas.enable", ""),
    ({"value.converter": STRING, "value.converter.converter.encoding": "EBCDIC"},
     "value.converter.converter.encoding", "not a supported charset"),
    # The plugin converts its values only: a key converter that converts is not applied.
    ({"key.converter": JSON}, "key.converter", "is not applied"),
])
def test_what_it_cannot_use_is_refused_naming_the_key(extra: dict[str, str], key: str, words: str) -> None:
    found = problems(extra)
    assert [k for k, _ in found] == [key] and words in found[0][1]


def test_a_task_refuses_a_bad_converter() -> None:
    with pytest.raises(InvalidConnectorConfig, match="not a converter"):
        converter({"value.converter": "x.Y"}, "value")


def test_the_json_schema_lists_the_classes_the_plugin_takes() -> None:
    config = _clause("typed-sink", TypedSink)["then"]["properties"]["spec"]["properties"]["config"]
    value, key = config["properties"]["value.converter"], config["properties"]["key.converter"]
    assert JSON in value["description"] and JSON not in key["description"]
