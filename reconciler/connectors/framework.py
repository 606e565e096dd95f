"""The keys Kafka Connect itself defines for every connector, typed as Connect 4.3.1 does.

From `ConnectorConfig`, `SinkConnectorConfig` and `SourceConnectorConfig` (and the prefixes
their `enrich` and client-override code read). These keys are never "unknown", whatever
the plugin declares; their values are checked like a plugin's own. A key of the other kind
(`topics` on a source, `exactly.once.support` on a sink) is reported, because the reconciler
tells sinks from sources by `topics`/`topics.regex` (`core.models.is_sink`).
"""

from __future__ import annotations

from typing import Literal

from reconciler.connectors.configdef import ConfigDef, Type, topic_names

Kind = Literal["source", "sink"]

COMMON = (
    ConfigDef()
    .define("name", Type.STRING, "Globally unique name of the connector (from metadata.name).", default=None)
    .define("connector.class", Type.STRING, "The connector's class (from spec.class).", default=None)
    .define("connector.plugin.version", Type.STRING, "Version of the connector plugin.", default=None)
    .define("tasks.max", Type.INT, "Maximum number of tasks (from spec.tasksMax).", default=1, minimum=1)
    .define("tasks.max.enforce", Type.BOOLEAN, "(Deprecated) Fail when a connector makes too many tasks.",
            default=True)
    .define("key.converter", Type.CLASS, "Converter class for record keys.", default=None)
    .define("key.converter.plugin.version", Type.STRING, "Version of the key converter.", default=None)
    .define("value.converter", Type.CLASS, "Converter class for record values.", default=None)
    .define("value.converter.plugin.version", Type.STRING, "Version of the value converter.", default=None)
    .define("header.converter", Type.CLASS, "Converter class for record headers.", default=None)
    .define("header.converter.plugin.version", Type.STRING, "Version of the header converter.", default=None)
    .define("transforms", Type.LIST, "Aliases of the transformations applied to records.", default=[])
    .define("predicates", Type.LIST, "Aliases of the predicates used by transformations.", default=[])
    .define("config.action.reload", Type.STRING, "What to do when a config provider's value changes.",
            default="restart", choices=("none", "restart"))
    .define("errors.retry.timeout", Type.LONG, "How long a failed operation is retried, in ms (-1: forever).",
            default=0)
    .define("errors.retry.delay.max.ms", Type.LONG, "Longest delay between retries, in ms.", default=60000)
    .define("errors.tolerance", Type.STRING, "none: an error fails the task; all: problematic records are skipped.",
            default="none", choices=("none", "all"))
    .define("errors.log.enable", Type.BOOLEAN, "Log each error and the failed operation.", default=False)
    .define("errors.log.include.messages", Type.BOOLEAN, "Include the failed record in the log.", default=False)
    .define_prefix("key.converter.", "settings of the key converter")
    .define_prefix("value.converter.", "settings of the value converter")
    .define_prefix("header.converter.", "settings of the header converter")
    .define_prefix("transforms.", "settings of each transformation alias")
    .define_prefix("predicates.", "settings of each predicate alias")
    .define_prefix("errors.", "error handling")
    .define_prefix("producer.override.", "the connector's producer settings (KIP-458)")
    .define_prefix("consumer.override.", "the connector's consumer settings (KIP-458)")
    .define_prefix("admin.override.", "the connector's admin client settings (KIP-458)")
)

SINK_ONLY = (
    ConfigDef()
    .define("topics", Type.LIST, "Topics to consume, comma-separated.", default=[], validator=topic_names)
    .define("topics.regex", Type.STRING, "Regular expression of the topics to consume.", default="")
    .define("errors.deadletterqueue.topic.name", Type.STRING, "Dead letter queue topic (none when blank).",
            default="", validator=topic_names)
    .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT,
            "Replication factor of the dead letter queue topic when it is created.", default=3)
    .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN,
            "Add error context headers to dead letter queue records.", default=False)
)

SOURCE_ONLY = (
    ConfigDef()
    .define("topic.creation.groups", Type.LIST, "Groups of settings for topics the connector creates.", default=[])
    .define("topic.creation.default.partitions", Type.INT,
            "Partitions of each topic the connector writes to and that does not exist (-1: the broker's default).",
            default=None, minimum=-1)
    .define("topic.creation.default.replication.factor", Type.SHORT,
            "Replication factor of each topic the connector creates (-1: the broker's default).",
            default=None, minimum=-1)
    .define("exactly.once.support", Type.STRING, "requested or required (a preflight check).",
            default="requested", choices=("requested", "required"), ignore_case=True)
    .define("transaction.boundary", Type.STRING, "poll, interval or connector: where transactions end.",
            default="poll", choices=("poll", "interval", "connector"), ignore_case=True)
    .define("transaction.boundary.interval.ms", Type.LONG, "Commit interval with transaction.boundary=interval.",
            default=None, minimum=0)
    .define("offsets.storage.topic", Type.STRING, "A separate offsets topic for this connector.", default=None,
            validator=topic_names)
    .define_prefix("topic.creation.", "settings of topics the connector creates (KIP-158)")
)

SINK = COMMON.merge(SINK_ONLY)
SOURCE = COMMON.merge(SOURCE_ONLY)
ANY = SINK.merge(SOURCE_ONLY)


def framework_def(kind: Kind) -> ConfigDef:
    """The keys Connect defines for a connector of this kind."""
    return SINK if kind == "sink" else SOURCE


def other_kind(kind: Kind) -> Kind:
    return "source" if kind == "sink" else "sink"
