"""Connect keys the runtime would silently not apply to a Python connector's records are refused
(`reconciler.connectors.unapplied`); those it honours, or that change nothing, are not."""

from __future__ import annotations

import pytest

from reconciler.connectors.checks import check_config
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.file_sink import FileSinkConnector
from reconciler.connectors.file_source import FileSourceConnector
from reconciler.core.models import ConnectorManifest
from reconciler.manifests.plugin_checks import plugin_findings

FILTER = "org.apache.kafka.connect.transforms.Filter"
SINK = {"name": "c", "connector.class": "file-sink", "tasks.max": "1", "topics": "t", "path": "/out"}


def problems(extra: dict[str, str]) -> list[tuple[str, str]]:
    return [(p.key, p.message) for p in check_config("file-sink", FileSinkConnector, {**SINK, **extra})]


@pytest.mark.parametrize(
    "extra",
    [
        {"transforms": "dropall", "transforms.dropall.type": FILTER},
        {"transforms": "mask", "transforms.mask.type": "org.apache.kafka.connect.transforms.MaskField$Value"},
        {"predicates": "isFoo", "predicates.isFoo.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches"},
        {"value.converter": "org.apache.kafka.connect.json.JsonConverter"},
        {"key.converter": "io.confluent.connect.avro.AvroConverter"},
        {"header.converter": "org.apache.kafka.connect.json.JsonConverter"},
    ],
)
def test_a_setting_the_runtime_would_not_apply_is_an_error(extra: dict[str, str]) -> None:
    key = next(k for k in extra if "." not in k or k.endswith(".converter"))
    assert [k for k, _ in problems(extra)] == [key]
    assert problems(extra)[0][1].startswith("is not applied: the reconciler's runtime")


@pytest.mark.parametrize(
    "extra",
    [
        {"transforms": " ", "predicates": ""},  # blank: none, as Connect's default
        {"transforms.unused.type": FILTER},  # an alias no `transforms` lists: Connect ignores it too
        {"value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"},
        {"key.converter": " org.apache.kafka.connect.storage.StringConverter ", "key.converter.encoding": "UTF-8"},
        {"header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"},
        {"value.converter.schemas.enable": "false"},  # settings of a converter that is not set
        # Connect's error handling covers only the converter and transformation stages, which
        # the runtime does not have: nothing for these to act on.
        {"errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq", "errors.retry.timeout": "1000",
         "errors.log.enable": "true"},
    ],
)
def test_settings_that_change_nothing_are_accepted(extra: dict[str, str]) -> None:
    assert problems(extra) == []


def test_the_hint_says_what_to_do_instead() -> None:
    (problem,) = check_config("file-sink", FileSinkConnector, {**SINK, "transforms": "dropall"})
    assert problem.hint is not None and "in the plugin itself" in problem.hint and "Java connector class" in problem.hint


def test_sources_are_checked_too() -> None:
    config = {"name": "c", "connector.class": "datagen", "tasks.max": "1", "topic": "t", "count": "5",
              "transforms": "mask"}
    assert [p.key for p in check_config("datagen", DatagenConnector, config)] == ["transforms"]


def test_a_plugins_own_definition_of_the_key_wins() -> None:
    # file-source gives errors.tolerance its own meaning; a plugin may do so with these keys too.
    own = FileSourceConnector.config_def
    assert own is not None
    plugin = type("OwnTransforms", (FileSourceConnector,), {"config_def": own.define("transforms", own.keys["glob"].type)})
    config = {"name": "c", "connector.class": "x", "tasks.max": "1", "path": "/in", "topic": "t", "transforms": "a"}
    assert check_config("x", plugin, config) == []


def manifest(cls: str, config: dict[str, str]) -> ConnectorManifest:
    return ConnectorManifest.model_validate({
        "apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": "c"},
        "spec": {"class": cls, "config": config},
    })


def test_a_java_connector_keeps_its_transforms() -> None:
    """A Java Connect worker runs a Java class, and applies its transforms and converters."""
    config = {"topics": "t", "file": "/out", "transforms": "dropall", "transforms.dropall.type": FILTER,
              "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    assert plugin_findings(manifest("org.apache.kafka.connect.file.FileStreamSinkConnector", config)) == []


def test_a_python_connector_finding_points_at_the_value() -> None:
    (finding,) = plugin_findings(manifest("file-sink", {"topics": "t", "path": "/o", "transforms": "dropall"}))
    assert finding.path == ("spec", "config", "transforms")


def test_a_placeholder_cannot_be_judged() -> None:
    """A Connect worker resolves `${file:…}`; until then the value is unknown, so not refused."""
    config = {"topics": "t", "path": "/o", "transforms": "${file:/etc/t.properties:transforms}"}
    assert plugin_findings(manifest("file-sink", config)) == []
