"""`parquet-sink`: topics → a Parquet dataset, exactly once across crashes.

One file per Kafka partition and offset range (`range_files`' layout, `.parquet`), columns
`offset`, `timestamp`, `key`, `value`; `topic` and `partition` come from the directory names.
With a key or value converter other than ByteArrayConverter the files hold typed columns
instead (`parquet_typed`), and records that do not decode follow `errors.tolerance` and the
dead letter queue (`errant`). Layout, config, exactly-once and rewinds:
docs/connectors.md#parquet-sink.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, ClassVar

from reconciler.connectors import range_files
from reconciler.connectors.api import ConnectorError, OffsetsRefused, TopicPartition
from reconciler.connectors.configdef import ConfigDef, ConnectorConfig, Type, topic_names
from reconciler.connectors.errant import reporter_for
from reconciler.connectors.range_files import (
    DEFAULT_FLUSH_RECORDS,
    Cut,
    OffsetRange,
    RangeFileSinkConnector,
    RangeFileSinkSettings,
    RangeFileSinkTask,
)
from reconciler.connectors.storage import Store, location_problem, with_storage_keys

if TYPE_CHECKING:
    import pyarrow as pa

COMPRESSIONS = ("snappy", "zstd", "gzip", "lz4", "brotli", "none")
SUFFIX = ".parquet"

CONFIG_DEF = with_storage_keys(
    ConfigDef()
    # Connect's own `topics` (SinkConnectorConfig), required here: the sink takes no `topics.regex`.
    .define("topics", Type.LIST, "Topics to archive, comma-separated.", validator=topic_names)
    .define("path", Type.STRING, "Dataset directory (created if missing): a path, file:///…, s3://bucket/prefix, "
            "gs://…, abfs://… or hdfs://namenode:port/….", validator=location_problem)
    .define("flush.records", Type.INT, "Write a file once a partition has buffered this many rows.",
            default=DEFAULT_FLUSH_RECORDS, minimum=1)
    .define("compression", Type.STRING, "Parquet compression codec.", default="snappy", choices=COMPRESSIONS)
)


@dataclass(frozen=True, kw_only=True)
class ParquetSinkSettings(RangeFileSinkSettings):
    config_def = CONFIG_DEF

    compression: str


# --- files ---------------------------------------------------------------------------------


def file_name(topic: str, partition: int, offsets: OffsetRange) -> str:
    return range_files.file_name(topic, partition, offsets, SUFFIX)


def write_table(out: BinaryIO, table: pa.Table, compression: str) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, out, compression=None if compression == "none" else compression)


def file_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema(
        [
            ("offset", pa.int64()),
            ("timestamp", pa.timestamp("ms", tz="UTC")),
            ("key", pa.binary()),
            ("value", pa.binary()),
        ]
    )


# --- the task -------------------------------------------------------------------------------


class ParquetSinkTask(RangeFileSinkTask["pa.RecordBatch"]):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = ParquetSinkSettings.parse(task_config)
        self.configure(self.settings, task_config, SUFFIX)
        from reconciler.connectors import parquet_typed

        self.typed = parquet_typed.converting(task_config)
        self.errant = reporter_for(self, task_config)

    def chunk(self, rows: pa.RecordBatch) -> pa.RecordBatch:
        """The rows in the files' schema (typed files: as they are, decoded per file)."""
        import pyarrow as pa

        if self.typed is not None:
            return rows
        schema = file_schema()
        return pa.RecordBatch.from_arrays([rows.column(f.name).cast(f.type) for f in schema], schema=schema)

    def write_file(self, out: BinaryIO, chunks: list[pa.RecordBatch]) -> None:
        import pyarrow as pa

        from reconciler.connectors import parquet_typed

        if self.typed is not None:
            table = parquet_typed.typed_file(chunks, self.typed, self.errant)
        else:
            table = pa.Table.from_batches(chunks, schema=file_schema())
        write_table(out, table, self.settings.compression)


# --- the connector --------------------------------------------------------------------------


class ParquetSinkConnector(RangeFileSinkConnector[ParquetSinkSettings]):
    config_def = CONFIG_DEF
    task_class = ParquetSinkTask
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})
    settings_class = ParquetSinkSettings
    suffixes = (SUFFIX,)

    def task_imports(self, config: ConnectorConfig) -> Sequence[str]:
        return ("pyarrow.parquet", "reconciler.connectors.parquet_typed")

    def check_cut(self, store: Store, directory: str, name: str, offsets: OffsetRange, at: int) -> None:
        """A file to cut must read as Parquet."""
        try:
            _read(store, f"{directory}/{name}", metadata_only=True)
        except (OSError, ValueError) as exc:
            raise OffsetsRefused(f"cannot read {store.location.uri(directory, name)} to cut it at {at}: "
                                 f"{exc}") from exc

    def cutter(self, settings: ParquetSinkSettings, tp: TopicPartition) -> Cut:
        return _cutter(*tp, settings.compression)


def _read(store: Store, rel: str, *, metadata_only: bool = False) -> pa.Table:
    import pyarrow as pa
    import pyarrow.parquet as pq

    source = pa.BufferReader(store.read(rel))
    return pq.read_metadata(source) if metadata_only else pq.read_table(source)


def rewind_partition(store: Store, topic: str, partition: int, offset: int | None, compression: str) -> None:
    """Make the files of one partition hold only offsets below `offset` (None: nothing)."""
    range_files.rewind_partition(store, topic, partition, offset, (SUFFIX,), _cutter(topic, partition, compression))


def _cutter(topic: str, partition: int, compression: str) -> Cut:
    def cut(store: Store, directory: str, name: str, offsets: OffsetRange, at: int) -> None:
        _write_head(store, directory, name, topic, partition, at, compression)

    return cut


def _write_head(
    store: Store, directory: str, name: str, topic: str, partition: int, offset: int, compression: str
) -> None:
    """Write the part of file `name` below `offset` as its own file (kept if written already)."""
    import pyarrow.compute as pc

    try:
        table = _read(store, f"{directory}/{name}")
    except OSError as exc:
        raise ConnectorError(f"cannot read {store.location.uri(directory, name)} to cut it at {offset}: {exc}") from exc
    head = table.filter(pc.less(table.column("offset"), offset))
    last = pc.max(head.column("offset")).as_py()
    start = pc.min(head.column("offset")).as_py()
    store.write_new(f"{directory}/{file_name(topic, partition, (start, last))}",
                    lambda out: write_table(out, head, compression))
