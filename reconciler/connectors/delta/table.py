"""delta-sink's driver side (delta-rs): the table's offsets, its schema, one commit per batch.

Offsets are Delta `txn` actions, as kafka-delta-ingest keeps them: one app id per connector and
Kafka partition (`app_id`), its version the partition's next offset (Connect's committed
offset; kafka-delta-ingest's is the last offset written). A batch's data files and every
partition's txn go in one commit (`create_write_transaction`), so readers see all of a batch
or none of it. Before it, `fence` refuses partitions another writer moved, and the batch's
schema is checked against the table's: new columns are added (`delta.evolve.schema`), a column
whose type changed fails the commit naming it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

import pyarrow as pa
from deltalake import CommitProperties, DeltaTable, Field, Schema, Transaction
from deltalake.exceptions import DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, RemoveAction

from reconciler.connectors.api import ConnectorError, TableCommitFailed, TopicPartition, Written
from reconciler.connectors.delta.config import DeltaSinkSettings, storage_options
from reconciler.connectors.delta.files import DataFile, delta_schema, first_line, read_committable, unified


def app_id(connector: str, topic: str, partition: int) -> str:
    """The txn app id of one Kafka partition of one connector."""
    return f"{connector}-{topic}-{partition}"


def open_table(settings: DeltaSinkSettings) -> DeltaTable | None:
    """The table, or None when there is none at the URI yet."""
    try:
        return DeltaTable(settings.uri, storage_options=storage_options(settings, os.environ))
    except TableNotFoundError:
        return None
    except (DeltaError, OSError) as exc:
        raise ConnectorError(f"cannot read the Delta table at {settings.table_uri}: {first_line(exc)} "
                             "(check delta.table.uri and the store keys: s3.*, gcs.*, azblob.*)") from exc


def table_offsets(settings: DeltaSinkSettings, connector: str,
                  partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
    table = open_table(settings)
    if table is None:
        return {}
    return _versions(table, connector, partitions)


def _versions(table: DeltaTable, connector: str, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
    found = {}
    for topic, partition in partitions:
        version = table.transaction_version(app_id(connector, topic, partition))
        if version is not None and version >= 0:  # -1: an offset removed by a KIP-875 reset
            found[(topic, partition)] = version
    return found


def commit(settings: DeltaSinkSettings, connector: str, written: Sequence[Written]) -> None:
    """One commit of every range's files and each partition's next offset."""
    files: list[DataFile] = []
    schemas = []
    for w in written:
        found, schema = read_committable(w.committable)
        files += found
        schemas.append(schema)
    batch = unified(schemas)
    table = open_table(settings) or _create(settings, delta_schema(batch))
    fence(table, connector, written, settings.table_uri)
    schema = _evolved(table, batch, settings)
    actions: list[AddAction | RemoveAction] = [AddAction(f.path, f.size, f.partition_values, f.modification_time, True,
                         json.dumps({"numRecords": f.records})) for f in files]
    txns = [Transaction(app_id(connector, w.topic, w.partition), w.offset) for w in written]
    try:
        table.create_write_transaction(actions, mode="append", schema=schema,
                                       partition_by=table.metadata().partition_columns or None,
                                       commit_properties=CommitProperties(app_transactions=txns))
    except (DeltaError, OSError) as exc:
        raise ConnectorError(f"committing to the Delta table at {settings.table_uri} failed: {first_line(exc)}") from exc


def set_offsets(settings: DeltaSinkSettings, connector: str, offsets: Mapping[TopicPartition, int | None]) -> None:
    """A commit of txn actions only (a KIP-875 alter or reset: -1 removes an offset); no table
    yet: nothing to move."""
    table = open_table(settings)
    if table is None:
        return
    txns = [Transaction(app_id(connector, topic, partition), -1 if offset is None else offset)
            for (topic, partition), offset in offsets.items()]
    try:
        table.create_write_transaction([], mode="append", schema=table.schema(),
                                       partition_by=table.metadata().partition_columns or None,
                                       commit_properties=CommitProperties(app_transactions=txns))
    except (DeltaError, OSError) as exc:
        raise ConnectorError(f"moving the offsets in the Delta table at {settings.table_uri} failed: "
                             f"{first_line(exc)}") from exc


def fence(table: DeltaTable, connector: str, written: Sequence[Written], uri: str) -> None:
    """Refuse partitions the table holds past where their range started: another writer
    committed those records since the batch read the table's offsets."""
    now = _versions(table, connector, [w.tp for w in written])
    moved = [w for w in written if w.start is not None and now.get(w.tp, -1) > w.start]
    if moved:
        first = moved[0]
        raise TableCommitFailed(
            f"the Delta table at {uri} holds {first.topic}[{first.partition}] up to offset {now[first.tp]}, past "
            f"{first.start} where this batch started: another writer committed it (two reconcilers on one table?)",
            [w.tp for w in moved])


def _create(settings: DeltaSinkSettings, schema: pa.Schema) -> DeltaTable:
    if not settings.auto_create:
        raise ConnectorError(f"there is no Delta table at {settings.table_uri} and delta.auto.create is false")
    try:
        return DeltaTable.create(settings.uri, schema=schema, mode="ignore", partition_by=list(settings.partition_by) or None,
                                 storage_options=storage_options(settings, os.environ))
    except (DeltaError, OSError) as exc:
        raise ConnectorError(f"cannot create the Delta table at {settings.table_uri}: {first_line(exc)}") from exc


def _evolved(table: DeltaTable, batch: pa.Schema, settings: DeltaSinkSettings) -> Schema:
    """The table's schema, with the batch's new columns added when `delta.evolve.schema`. A
    column null in every record of the batch takes the table's type, a new one is a string."""
    current = {f.name: f for f in table.schema().fields}
    typed = pa.schema([f for f in batch if not (pa.types.is_null(f.type) and f.name in current)])
    incoming = Schema.from_arrow(delta_schema(typed)).fields
    for field in incoming:
        known = current.get(field.name)
        if known is not None and known.type != field.type:
            raise ConnectorError(f"column `{field.name}` of the Delta table at {settings.table_uri} is "
                                 f"{_type_name(known)}, the records' is {_type_name(field)}: an incompatible change")
    new = [Field(f.name, f.type, nullable=True) for f in incoming if f.name not in current]
    if new and not settings.evolve_schema:
        raise ConnectorError(f"the records have column `{new[0].name}`, which the Delta table at {settings.table_uri} "
                             "has not, and delta.evolve.schema is false")
    if new:
        table.alter.add_columns(new)
        table.update_incremental()
    return table.schema()


def _type_name(field: Field) -> str:
    kind = field.type
    return str(getattr(kind, "type", None) or kind)
