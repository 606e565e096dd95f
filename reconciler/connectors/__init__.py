"""Connector plugins: the plugin API (`api`, with the data tasks move in `batches`), typed config
definitions (`configdef`) and the settings read from them (`settings`), the keys Connect defines for every connector (`framework`), checks
before deploy (`checks`), lookup by name (`registry`), Connect's error handling for sink records
(`errant`: `errors.tolerance`, the dead letter queue) and the built-ins `datagen`,
`file-source` (their offsets are positions: `positions`), `file-sink`, `parquet-sink` (both on
`range_files`; typed files: `parquet_typed`) and `jdbc-sink` (its own package, `jdbc`).

May import `core`, the leaves, `kafka`'s pure client-property names (`kafka.io.client_names`,
for the checks of `producer.override.*` keys) and formats (`kafka.formats.dead_letter`); no
Kafka client or Spark: the runtime drives these (and gives a sink task its DLQ producer).
"""

from reconciler.connectors.api import (
    ConfigDef,
    ConfigProblem,
    Connector,
    ConnectorError,
    InvalidConnectorConfig,
    OffsetsRefused,
    PartitionKey,
    SinkConnector,
    SinkRecord,
    SinkTask,
    SourceBatch,
    SourceConnector,
    SourceRecord,
    SourceTask,
    TopicPartition,
    Type,
    partition_from_key,
    partition_key,
    sink_schema,
)
from reconciler.connectors.registry import UnknownConnector, available_connectors, load_connector

__all__ = [
    "ConfigDef",
    "ConfigProblem",
    "Connector",
    "ConnectorError",
    "InvalidConnectorConfig",
    "OffsetsRefused",
    "PartitionKey",
    "SinkConnector",
    "SinkRecord",
    "SinkTask",
    "SourceBatch",
    "SourceConnector",
    "SourceRecord",
    "SourceTask",
    "TopicPartition",
    "Type",
    "UnknownConnector",
    "available_connectors",
    "load_connector",
    "partition_from_key",
    "partition_key",
    "sink_schema",
]
