"""Source or sink, and who runs a connector: both decided by its class, as Connect decides.

Connect learns a connector's type from its plugin class (`AbstractHerder.connectorType` →
`ConnectorType.from(Class)`), never from its config: MirrorSourceConnector sets `topics` and is
a source. Our Python plugins declare their type (`Connector.kind`); the registry looks it up
(`reconciler.connectors.registry.plugin_kind`). For a class this process cannot load, most
often a Java class that a Kafka Connect worker runs, `class_kind` is the best rule there is
(docs/compatibility.md, "Write side: deliberate differences"):

1. Apache Kafka's own connectors, by class name or alias, from a table;
2. the class's simple name, without a `Connector` suffix, ends with `Sink` or `Source`
   (JdbcSinkConnector, S3SinkConnector, FileStreamSource, parquet-sink…), in any case;
3. otherwise Connect's config rule for sinks: `topics` or `topics.regex` makes a sink.

Who runs it: a Python connector (a registered name or a `module:Class` path) runs on our Spark
runtime; any other class that is a valid Java class name or alias is left to the Kafka Connect
workers of the group, and `reconciler run` neither starts it nor writes its statuses.

Pure: names and configs in, answers out.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Mapping
from typing import Final


class Kind(enum.StrEnum):
    """A connector's type, as Connect's `ConnectorType` (lower case, as its REST API writes it)."""

    SOURCE = "source"
    SINK = "sink"


# Apache Kafka's connectors whose names do not say their type, keyed by their alias: Connect
# accepts the class name, its simple name, or its simple name without `Connector`.
_APACHE_KINDS: Final[Mapping[str, Kind]] = {
    "MirrorSource": Kind.SOURCE,
    "MirrorCheckpoint": Kind.SOURCE,
    "MirrorHeartbeat": Kind.SOURCE,
    "FileStreamSource": Kind.SOURCE,
    "FileStreamSink": Kind.SINK,
}
_APACHE_PACKAGES: Final = ("org.apache.kafka.connect.mirror.", "org.apache.kafka.connect.file.")
# A Java binary class name or alias (what `connector.class` may hold for a Connect worker).
_JAVA_CLASS_NAME: Final = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*")
_CONNECTOR_SUFFIX: Final = "connector"


def _alias(class_name: str) -> str:
    """`org.acme.JdbcSinkConnector`, `JdbcSinkConnector`, `mod:JdbcSink` → `JdbcSink`."""
    simple = re.split(r"[.:]", class_name.strip())[-1]
    if simple.lower().endswith(_CONNECTOR_SUFFIX) and len(simple) > len(_CONNECTOR_SUFFIX):
        simple = simple[: -len(_CONNECTOR_SUFFIX)]
    return simple.rstrip("-_")


def _apache_kind(class_name: str) -> Kind | None:
    name = class_name.strip()
    alias = _alias(name)
    if "." in name and not name.startswith(_APACHE_PACKAGES):
        return None  # another vendor's class that happens to share a simple name
    return _APACHE_KINDS.get(alias)


def kind_by_config(config: Mapping[str, object]) -> Kind:
    """Connect's rule for sinks (`SinkConnectorConfig.validate`): they name their topics."""
    return Kind.SINK if "topics" in config or "topics.regex" in config else Kind.SOURCE


def class_kind(class_name: str, config: Mapping[str, object]) -> Kind:
    """The type of a connector whose class cannot be loaded here (see the module doc)."""
    known = _apache_kind(class_name)
    if known is not None:
        return known
    alias = _alias(class_name).lower()
    if alias.endswith("sink"):
        return Kind.SINK
    if alias.endswith("source"):
        return Kind.SOURCE
    return kind_by_config(config)


def is_python_reference(class_name: str, registered: Collection[str]) -> bool:
    """A registered plugin name or a `module:Class` path: a connector our runtime runs."""
    name = class_name.strip()
    return name in registered or ":" in name


def runs_on_connect(class_name: str, registered: Collection[str]) -> bool:
    """Left to a Kafka Connect worker: not a Python connector, and a valid Java class name or
    alias. Anything else (e.g. `no-such-thing`) is ours, and fails loudly as an unknown class."""
    name = class_name.strip()
    return not is_python_reference(name, registered) and _JAVA_CLASS_NAME.fullmatch(name) is not None


def looks_like_alias(class_name: str) -> bool:
    """A Java class name without a package: an alias, or a mistyped Python connector name."""
    return "." not in class_name.strip()
