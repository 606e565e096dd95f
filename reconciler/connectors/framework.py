"""The keys Kafka Connect itself defines for every connector, typed as Connect 4.3.1 does.

From `ConnectorConfig`, `SinkConnectorConfig` and `SourceConnectorConfig` (and the prefixes
their `enrich` and client-override code read), with the UI fields a 4.3.1 worker's
`PUT …/config/validate` shows (`tests/integration/java_connect/test_validate_vs_java.py` compares them).
These keys are never "unknown", whatever the plugin declares; their values are checked like a
plugin's own. A key of the other kind (`topics` on a source, `exactly.once.support` on a sink)
is reported, because the reconciler tells sinks from sources by `topics`/`topics.regex`
(`core.models.is_sink`).
"""

from __future__ import annotations

from reconciler.connectors.configdef import ConfigDef, Display, Type, topic_names
from reconciler.core.kinds import Kind

# Connect's groups (`ConnectorConfig.COMMON_GROUP`…), as `PUT …/config/validate` lists them.
COMMON_GROUP, TRANSFORMS, PREDICATES, ERRORS = "Common", "Transforms", "Predicates", "Error Handling"
TOPIC_CREATION, EXACTLY_ONCE, OFFSETS_TOPIC = "Topic Creation", "Exactly Once Support", "offsets.topic"

# Each key's `Display`: group, order in it, width, display name, importance, as Java defines them.
COMMON = (
    ConfigDef()
    .define("name", Type.STRING, "Globally unique name of the connector (from metadata.name).", default=None,
            display=Display(COMMON_GROUP, 1, "MEDIUM", "Connector name", "HIGH"))
    .define("connector.class", Type.STRING, "The connector's class (from spec.class).", default=None,
            display=Display(COMMON_GROUP, 2, "LONG", "Connector class", "HIGH"))
    .define("connector.plugin.version", Type.STRING, "Version of the connector plugin.", default=None,
            display=Display(COMMON_GROUP, 3, "MEDIUM", "Connector version", "MEDIUM"))
    .define("tasks.max", Type.INT, "Maximum number of tasks (from spec.tasksMax).", default=1, minimum=1,
            display=Display(COMMON_GROUP, 4, "SHORT", "Tasks max", "HIGH"))
    .define("tasks.max.enforce", Type.BOOLEAN, "(Deprecated) Fail when a connector makes too many tasks.",
            default=True, display=Display(COMMON_GROUP, 5, "SHORT", "Enforce tasks max", "LOW"))
    .define("key.converter", Type.CLASS, "Converter class for record keys.", default=None,
            display=Display(COMMON_GROUP, 6, "SHORT", "Key converter class", "LOW"))
    .define("key.converter.plugin.version", Type.STRING, "Version of the key converter.", default=None,
            display=Display(COMMON_GROUP, 7, "SHORT", "Key converter version", "LOW"))
    .define("value.converter", Type.CLASS, "Converter class for record values.", default=None,
            display=Display(COMMON_GROUP, 8, "SHORT", "Value converter class", "LOW"))
    .define("value.converter.plugin.version", Type.STRING, "Version of the value converter.", default=None,
            display=Display(COMMON_GROUP, 9, "SHORT", "Value converter version", "LOW"))
    .define("header.converter", Type.CLASS, "Converter class for record headers.", default=None,
            display=Display(COMMON_GROUP, 10, "SHORT", "Header converter class", "LOW"))
    .define("header.converter.plugin.version", Type.STRING, "Version of the header converter.", default=None,
            display=Display(COMMON_GROUP, 11, "SHORT", "Header converter version", "LOW"))
    .define("transforms", Type.LIST, "Aliases of the transformations applied to records.", default=[],
            display=Display(TRANSFORMS, 12, "LONG", "Transforms", "LOW"))
    .define("predicates", Type.LIST, "Aliases of the predicates used by transformations.", default=[],
            display=Display(PREDICATES, 13, "LONG", "Predicates", "LOW"))
    .define("config.action.reload", Type.STRING, "What to do when a config provider's value changes.",
            default="restart", choices=("none", "restart"),
            display=Display(COMMON_GROUP, 14, "MEDIUM", "Reload Action", "LOW"))
    .define("errors.retry.timeout", Type.LONG, "How long a failed operation is retried, in ms (-1: forever).",
            default=0, display=Display(ERRORS, 1, "MEDIUM", "Retry Timeout for Errors", "MEDIUM"))
    .define("errors.retry.delay.max.ms", Type.LONG, "Longest delay between retries, in ms.", default=60000,
            display=Display(ERRORS, 2, "MEDIUM", "Maximum Delay Between Retries for Errors", "MEDIUM"))
    .define("errors.tolerance", Type.STRING, "none: an error fails the task; all: problematic records are skipped.",
            default="none", choices=("none", "all"), display=Display(ERRORS, 3, "SHORT", "Error Tolerance", "MEDIUM"))
    .define("errors.log.enable", Type.BOOLEAN, "Log each error and the failed operation.", default=False,
            display=Display(ERRORS, 4, "SHORT", "Log Errors", "MEDIUM"))
    .define("errors.log.include.messages", Type.BOOLEAN, "Include the failed record in the log.", default=False,
            display=Display(ERRORS, 5, "SHORT", "Log Error Details", "MEDIUM"))
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
    .define("topics", Type.LIST, "Topics to consume, comma-separated.", default=[], validator=topic_names,
            display=Display(COMMON_GROUP, 4, "LONG", "Topics", "HIGH"))
    .define("topics.regex", Type.STRING, "Regular expression of the topics to consume.", default="",
            display=Display(COMMON_GROUP, 4, "LONG", "Topics regex", "HIGH"))
    .define("errors.deadletterqueue.topic.name", Type.STRING, "Dead letter queue topic (none when blank).",
            default="", validator=topic_names,
            display=Display(ERRORS, 6, "MEDIUM", "Dead Letter Queue Topic Name", "MEDIUM"))
    .define("errors.deadletterqueue.topic.replication.factor", Type.SHORT,
            "Replication factor of the dead letter queue topic when it is created.", default=3,
            display=Display(ERRORS, 7, "MEDIUM", "Dead Letter Queue Topic Replication Factor", "MEDIUM"))
    .define("errors.deadletterqueue.context.headers.enable", Type.BOOLEAN,
            "Add error context headers to dead letter queue records.", default=False,
            display=Display(ERRORS, 8, "MEDIUM", "Enable Error Context Headers", "MEDIUM"))
)

SOURCE_ONLY = (
    ConfigDef()
    .define("topic.creation.groups", Type.LIST, "Groups of settings for topics the connector creates.", default=[],
            display=Display(TOPIC_CREATION, 1, "LONG", "Topic Creation Groups", "LOW"))
    .define("exactly.once.support", Type.STRING, "requested or required (a preflight check).",
            default="requested", choices=("requested", "required"), ignore_case=True,
            display=Display(EXACTLY_ONCE, 2, "SHORT", "Exactly once support", "MEDIUM"))
    .define("transaction.boundary", Type.STRING, "poll, interval or connector: where transactions end.",
            default="poll", choices=("poll", "interval", "connector"), ignore_case=True,
            display=Display(EXACTLY_ONCE, 3, "SHORT", "Transaction Boundary", "MEDIUM"))
    .define("transaction.boundary.interval.ms", Type.LONG, "Commit interval with transaction.boundary=interval.",
            default=None, minimum=0, display=Display(EXACTLY_ONCE, 4, "SHORT", "Transaction boundary interval", "LOW"))
    .define("offsets.storage.topic", Type.STRING, "A separate offsets topic for this connector.", default=None,
            validator=topic_names, display=Display(OFFSETS_TOPIC, 1, "LONG", "Offsets topic", "LOW"))
    # KIP-158's `default` group (TopicCreationConfig's keys in it, its group named after it).
    .define("topic.creation.default.replication.factor", Type.SHORT,
            "Replication factor of each topic the connector creates (-1: the broker's default).",
            default=None, minimum=-1,
            display=Display("default", 3, "LONG", "Replication Factor for Topics in default", "LOW"))
    .define("topic.creation.default.partitions", Type.INT,
            "Partitions of each topic the connector writes to and that does not exist (-1: the broker's default).",
            default=None, minimum=-1,
            display=Display("default", 4, "LONG", "Partition Count for Topics in default", "LOW"))
    .define_prefix("topic.creation.", "settings of topics the connector creates (KIP-158)")
)

SINK = COMMON.merge(SINK_ONLY)
SOURCE = COMMON.merge(SOURCE_ONLY)
ANY = SINK.merge(SOURCE_ONLY)


def framework_def(kind: Kind) -> ConfigDef:
    """The keys Connect defines for a connector of this kind."""
    return SINK if kind == Kind.SINK else SOURCE


def other_kind(kind: Kind) -> Kind:
    return Kind.SOURCE if kind == Kind.SINK else Kind.SINK
