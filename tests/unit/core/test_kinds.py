"""Source or sink, and who runs a connector: by its class, as Connect decides (core.kinds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from reconciler.connectors.api import SourceConnector, SourceTask, TaskConfig
from reconciler.connectors.registry import connector_kind, plugin_kind, runs_on_connect_worker
from reconciler.core.kinds import class_kind, runs_on_connect
from reconciler.core.models import ConnectorManifest, DesiredConnector
from reconciler.manifests.validate import clean_connector
from reconciler.core.models import SourceRef


class TopicsMirror(SourceConnector):
    """A Python source that names `topics` in its config, as MirrorSourceConnector does."""

    task_class = SourceTask  # type: ignore[type-abstract]

    def task_configs(self, config: Mapping[str, str | None], max_tasks: int) -> list[TaskConfig]:
        return []


SELF = f"{__name__}:TopicsMirror"
TOPICS = {"topics": "orders"}


@pytest.mark.parametrize(
    ("class_name", "config", "kind"),
    [
        # Apache Kafka's own, by class name and by alias: MirrorMaker's set `topics` and are sources.
        ("org.apache.kafka.connect.mirror.MirrorSourceConnector", TOPICS, "source"),
        ("org.apache.kafka.connect.mirror.MirrorCheckpointConnector", TOPICS, "source"),
        ("MirrorHeartbeat", TOPICS, "source"),
        ("org.apache.kafka.connect.file.FileStreamSinkConnector", {}, "sink"),
        ("FileStreamSource", {}, "source"),
        # The simple name says it, in any case.
        ("io.confluent.connect.jdbc.JdbcSinkConnector", {}, "sink"),
        ("io.confluent.connect.s3.S3SinkConnector", {}, "sink"),
        ("com.acme.KafkaTopicsSource", TOPICS, "source"),
        ("parquet-sink", {}, "sink"),
        ("mypkg.exporters:ArchiveSink", {}, "sink"),
        # Otherwise Connect's config rule for sinks.
        ("io.debezium.connector.mysql.MySqlConnector", {}, "source"),
        ("com.acme.Exporter", {"topics.regex": "o.*"}, "sink"),
        # Another vendor's class that shares a simple name with one of Kafka's: not the table's.
        ("com.acme.MirrorCheckpointConnector", TOPICS, "sink"),
    ],
)
def test_class_kind_when_the_class_cannot_be_loaded(class_name: str, config: dict[str, str], kind: str) -> None:
    assert class_kind(class_name, config) == kind


def test_a_python_plugin_declares_its_kind_whatever_its_config() -> None:
    assert plugin_kind(SELF) == "source"
    assert connector_kind(SELF, TOPICS) == "source"  # the config rule would say sink
    assert plugin_kind("parquet-sink") == "sink" and plugin_kind("datagen") == "source"
    assert plugin_kind("org.apache.kafka.connect.file.FileStreamSinkConnector") is None
    assert plugin_kind("no.such.module:Nope") is None  # not loadable here: the rules decide


def test_the_loader_records_the_plugin_kind() -> None:
    doc: dict[str, Any] = {
        "apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": "m"},
        "spec": {"class": SELF, "config": dict(TOPICS)},
    }
    loaded = clean_connector(doc, SourceRef(file="m.yaml", line=1, column=1), {})
    assert loaded is not None and loaded.kind == "source" and not loaded.is_sink
    bare = DesiredConnector(manifest=ConnectorManifest.model_validate(doc))
    assert bare.kind is None and bare.is_sink  # without the loader, only the rules are left


@pytest.mark.parametrize(
    ("class_name", "connect"),
    [
        ("org.apache.kafka.connect.file.FileStreamSourceConnector", True),
        ("FileStreamSource", True),  # a Java alias
        ("datagen", False),  # registered
        ("reconciler.connectors.datagen:DatagenConnector", False),  # module:Class
        ("no-such-thing", False),  # no Java class is named so: ours, failing as an unknown class
        ("", False),
    ],
)
def test_java_class_names_are_left_to_connect_workers(class_name: str, connect: bool) -> None:
    assert runs_on_connect_worker(class_name) is connect
    assert runs_on_connect(class_name, {"datagen"}) is connect
