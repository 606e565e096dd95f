"""`file-sink`: topics → text files, one line per record, exactly once across crashes.

The counterpart of Kafka Connect's `FileStreamSinkConnector`, on `range_files`' offset-named
files (`.txt`, or `.jsonl` with `format: json`). Layout, config, the errors a value that is not
one line gives, and rewinds: docs/connectors.md#file-sink.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from reconciler.connectors import range_files
from reconciler.connectors.api import (
    ConfigDef,
    ConnectorError,
    OffsetsRefused,
    TopicPartition,
    Type,
    topic_names,
)
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

FORMATS = ("text", "json")
SUFFIXES = {"text": ".txt", "json": ".jsonl"}

CONFIG_DEF = with_storage_keys(
    ConfigDef()
    # Connect's own `topics` (SinkConnectorConfig), required here: the sink takes no `topics.regex`.
    .define("topics", Type.LIST, "Topics to write out, comma-separated.", validator=topic_names)
    .define("path", Type.STRING, "Output directory (created if missing): a path, file:///…, s3://bucket/prefix, "
            "gs://…, abfs://… or hdfs://namenode:port/….", validator=location_problem)
    .define("format", Type.STRING, "text: each value as it is (UTF-8, one line); json: each record as a JSON object.",
            default="text", choices=FORMATS)
    .define("flush.records", Type.INT, "Write a file once a partition has buffered this many records.",
            default=DEFAULT_FLUSH_RECORDS, minimum=1)
)


@dataclass(frozen=True, kw_only=True)
class FileSinkSettings(RangeFileSinkSettings):
    config_def = CONFIG_DEF

    format: str


class UnwritableRecord(ConnectorError):
    """A record that cannot be written as one line of UTF-8 text."""


# --- lines ----------------------------------------------------------------------------------


def text_lines(rows: pa.RecordBatch) -> bytes:
    """Each value and a newline, checked to be UTF-8 without a newline of its own (Arrow
    kernels over the whole batch: no Python object per record)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = pc.fill_null(rows.column("value"), pa.scalar(b"", pa.binary()))
    try:
        values.cast(pa.string())
    except pa.ArrowInvalid:
        raise _first_bad(rows, values, lambda v: not _is_utf8(v), "is not UTF-8 text") from None
    if pc.any(pc.match_substring(values, "\n")).as_py():
        raise _first_bad(rows, values, lambda v: b"\n" in v, "holds a newline, so it would not be one line",
                         hint="use `format: json`, which escapes it")
    lines = pc.binary_join_element_wise(values, pa.scalar(b"", pa.binary()), pa.scalar(b"\n", pa.binary()))
    return _concatenated(lines)


def json_lines(rows: pa.RecordBatch) -> bytes:
    """Each record as a JSON object on its own line (one Python object per record)."""
    columns = [rows.column(name).to_pylist() for name in ("topic", "partition", "offset", "timestamp", "key", "value")]
    out = []
    for topic, partition, offset, timestamp, key, value in zip(*columns, strict=True):
        record = {
            "topic": topic, "partition": partition, "offset": offset, "timestamp": timestamp,
            "key": _text(key, topic, partition, offset, "key"),
            "value": _text(value, topic, partition, offset, "value"),
        }
        out.append(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode())
    out.append(b"")
    return b"\n".join(out)


def _text(raw: bytes | None, topic: str, partition: int, offset: int, what: str) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnwritableRecord(f"the {what} of {topic}-{partition}@{offset} is not UTF-8 text: {exc}") from None


def _is_utf8(value: bytes) -> bool:
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _first_bad(
    rows: pa.RecordBatch, values: pa.Array, bad: Callable[[bytes], bool], problem: str, hint: str | None = None
) -> UnwritableRecord:
    """The error for the first value `bad` says is bad (only run once a batch has one)."""
    for index, value in enumerate(values.to_pylist()):
        if bad(value):
            topic, partition = rows.column("topic")[index].as_py(), rows.column("partition")[index].as_py()
            offset = rows.column("offset")[index].as_py()
            return UnwritableRecord(f"the value of {topic}-{partition}@{offset} {problem}", hint=hint)
    raise AssertionError("no bad value found")


def _concatenated(array: pa.Array) -> bytes:
    """The bytes of a binary array's values, end to end, read from its buffers directly."""
    import pyarrow as pa

    if len(array) == 0:
        return b""
    _validity, offsets, data = array.buffers()
    kind, width = ("<q", 8) if pa.types.is_large_binary(array.type) else ("<i", 4)
    first, last = (struct.unpack_from(kind, offsets, width * (array.offset + i))[0] for i in (0, len(array)))
    return b"" if data is None else data[first:last].to_pybytes()


# --- the task -------------------------------------------------------------------------------


class FileSinkTask(RangeFileSinkTask[bytes]):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.settings = FileSinkSettings.parse(task_config)
        self.configure(self.settings, task_config, SUFFIXES[self.settings.format], tuple(SUFFIXES.values()))
        self.lines = text_lines if self.settings.format == "text" else json_lines

    def chunk(self, rows: pa.RecordBatch) -> bytes:
        return self.lines(rows)

    def write_file(self, out: BinaryIO, chunks: list[bytes]) -> None:
        out.writelines(chunks)


# --- rewinds --------------------------------------------------------------------------------


def head_lines(store: Store, rel: str, offsets: OffsetRange, at: int) -> tuple[list[bytes], int]:
    """The lines of a file holding offsets below `at` (at > the file's first offset), and the
    last such offset.

    `.jsonl` lines say their offset. `.txt` lines do not, so they are mapped to offsets only
    when the file has one line per offset of its range; else OffsetsRefused.
    """
    name = PurePosixPath(rel).name
    try:
        lines = store.read(rel).split(b"\n")[:-1]
        if PurePosixPath(rel).suffix == SUFFIXES["json"]:
            kept = [(line, offset) for line in lines if (offset := json.loads(line)["offset"]) < at]
            return [line for line, _ in kept], max(offset for _, offset in kept)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConnectorError(f"cannot read {store.location.uri(rel)} to cut it at offset {at}: {exc}") from exc
    start, end = offsets
    if len(lines) != end - start + 1:
        raise OffsetsRefused(
            f"{name} holds {len(lines)} records at offsets {start}-{end} (the gaps are transaction "
            f"markers), and its text lines do not say which offset each is: it cannot be cut at {at}. "
            f"Rewind this partition to {start} or {end + 1} instead"
        )
    return lines[: at - start], at - 1


# --- the connector --------------------------------------------------------------------------


class FileSinkConnector(RangeFileSinkConnector[FileSinkSettings]):
    task_class = FileSinkTask
    config_def = CONFIG_DEF
    settings_class = FileSinkSettings
    suffixes = tuple(SUFFIXES.values())

    def check_cut(self, store: Store, directory: str, name: str, offsets: OffsetRange, at: int) -> None:
        head_lines(store, f"{directory}/{name}", offsets, at)

    def cutter(self, settings: FileSinkSettings, tp: TopicPartition) -> Cut:
        def cut(store: Store, directory: str, name: str, offsets: OffsetRange, at: int) -> None:
            lines, last = head_lines(store, f"{directory}/{name}", offsets, at)
            head = range_files.file_name(*tp, (offsets[0], last), PurePosixPath(name).suffix)
            content = b"".join(line + b"\n" for line in lines)
            store.write_new(f"{directory}/{head}", lambda out: out.write(content))

        return cut
