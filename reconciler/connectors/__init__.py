"""Connector plugins: the plugin API (`api`), lookup by name (`registry`) and the built-ins
`datagen`, `file-source`, `file-sink` and `parquet-sink`. No Kafka or Spark here: the runtime
drives these.
"""

from reconciler.connectors.api import (
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
    partition_from_key,
    partition_key,
    sink_schema,
)
from reconciler.connectors.registry import UnknownConnector, available_connectors, load_connector

__all__ = [
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
    "UnknownConnector",
    "available_connectors",
    "load_connector",
    "partition_from_key",
    "partition_key",
    "sink_schema",
]
