"""`file-source`: a directory of JSON-lines or CSV files → one topic, each line exactly once.

Every file is a source partition `{"filename": "<path relative to the directory>"}` with
offset `{"position": <byte offset after the last consumed line>, "line": <its line number>}`.
Only complete lines (ending in `\\n`) are consumed, so a line being written is produced on a
later run; appended lines and new files are found by listing the directory on every poll.
`path` may be a storage URI (`s3://bucket/prefix`, …: `connectors.storage`); its offsets have
the same shape, `filename` being the object's key relative to the prefix and `position` a byte
offset in the object. An object is replaced whole, never appended to: a replacement that
starts with the old bytes is read on from the position, a shorter one fails as a truncated
file does (docs/connectors.md#storage).
A poll depends only on the committed offsets and the files, so a re-run after a crash yields
the same records (plus any lines appended meanwhile).

Values: `jsonl` lines are produced as they are (after checking they parse as JSON); `csv`
rows become JSON objects `{"<header column>": "<text>", …}` (all values strings; the first
line is the header; quoted fields spanning lines are not supported). Blank lines are skipped.
A bad line fails the task naming `file:line`, unless `errors.tolerance=all` skips it.
Keys are `b"<filename>:<line>"` (`key=location`, the default) or none (`key=none`).
With `value.converter` (`key.converter`) JsonConverter, each value (key) is written as Java's
FileStreamSource's STRING record is: `{"schema":{"type":"string","optional":false},"payload":"<line>"}`
with `schemas.enable` (the default), the JSON string `"<line>"` without; StringConverter writes
the text in its charset (`converters.encode.text_encoder`, which datagen shares).

Files and directories whose names start with `.` are ignored (editor and temp files).
Tasks share files by a stable hash of the file name, so a file always belongs to one task.
A file that shrank below its committed position (truncated or replaced) fails the task: its
offsets no longer describe it, and guessing would lose or duplicate lines.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import ClassVar

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    ConnectorError,
    OffsetsRefused,
    PartitionKey,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceTask,
    TaskConfig,
    partition_from_key,
    partition_key,
    share_configs,
    task_share,
)
from reconciler.connectors.configdef import ConfigDef, Type, topic_names
from reconciler.connectors.converters.encode import text_encoder
from reconciler.connectors.converters.settings import converter
from reconciler.connectors.file_lines import JSON_ENCODER, all_json, check_json, csv_rows, read_complete_lines
from reconciler.connectors.positions import check_position, is_long, position_of
from reconciler.connectors.settings import ConnectorSettings
from reconciler.connectors.storage import Store, location_problem, open_store, with_storage_keys

DEFAULT_BATCH_SIZE = 10_000

CONFIG_DEF = with_storage_keys(
    ConfigDef()
    .define("path", Type.STRING, "Directory the files are read from (recursively, as `glob` says): a path, "
            "file:///…, s3://bucket/prefix, gs://…, abfs://… or hdfs://namenode:port/….", validator=location_problem)
    .define("topic", Type.STRING, "Topic the lines are produced to.", validator=topic_names)
    .define("format", Type.STRING, "jsonl: each line as it is; csv: rows as JSON objects.", default="jsonl",
            choices=("jsonl", "csv"))
    .define("glob", Type.STRING, "Which files under `path` to read, relative to it.", default="*")
    .define("batch.size", Type.INT, "Lines per task per batch, at most.", default=DEFAULT_BATCH_SIZE, minimum=1)
    .define("errors.tolerance", Type.STRING, "none: a bad line fails the task; all: it is skipped.",
            default="none", choices=("none", "all"))
    .define("key", Type.STRING, "location: keys are `<file>:<line>`; none: no keys.", default="location",
            choices=("location", "none"))
)


class BadRecord(ConnectorError):
    """A line that cannot become a record (invalid JSON, wrong CSV column count, bad UTF-8)."""


@dataclass(frozen=True, kw_only=True)
class FileSourceSettings(ConnectorSettings):
    config_def = CONFIG_DEF

    path: str
    topic: str
    format: str
    glob: str
    batch_size: int
    errors_tolerance: str
    key: str

    @property
    def skip_errors(self) -> bool:
        return self.errors_tolerance == "all"

    @property
    def location_keys(self) -> bool:
        return self.key == "location"

    def more_problems(self, found: list[ConfigProblem]) -> list[ConfigProblem]:
        if self.glob.startswith("/") or ".." in PurePosixPath(self.glob).parts:
            return [ConfigProblem("glob", f"must be relative to `path`, inside it; got {self.glob!r}")]
        return []


def file_partition(filename: str) -> dict[str, str]:
    return {"filename": filename}


def owner_task(filename: str, task_count: int) -> int:
    """The task that reads `filename`: stable across runs and processes (unlike `hash`)."""
    return zlib.crc32(filename.encode("utf-8")) % task_count


def list_files(store: Store, pattern: str) -> list[str]:
    """Matching files as sorted relative POSIX paths, dot-names excluded."""
    if not store.location.object_store and not store.is_dir():  # a prefix, on an object store, is never missing
        raise ConnectorError(f"file-source directory {store.location.text!r} does not exist")
    names = []
    for relative in store.walk():
        parts = PurePosixPath(relative).parts
        if glob_matches(pattern, relative) and not any(part.startswith(".") for part in parts):
            names.append(relative)
    return sorted(names)


class FileSourceTask(SourceTask):
    def __init__(self, task_config: Mapping[str, str]) -> None:
        super().__init__(task_config)
        self.settings = FileSourceSettings.parse(task_config)
        self.store = open_store(self.settings.path, task_config)
        self.index, self.count = task_share(task_config)
        self.write_key, self.write_value = (text_encoder(converter(task_config, role)) for role in ("key", "value"))

    def poll_batch(
        self, committed: Mapping[PartitionKey, SourceOffset], max_records: int
    ) -> SourceBatch:
        budget = min(max_records, self.settings.batch_size)
        keys: list[bytes | None] = []
        values: list[bytes | None] = []
        offsets: dict[PartitionKey, SourceOffset] = {}
        for filename in list_files(self.store, self.settings.glob):
            if budget <= 0:
                break
            if owner_task(filename, self.count) != self.index:
                continue
            key = partition_key(file_partition(filename))
            progress = self._read_file(filename, committed.get(key), budget, keys, values)
            if progress is not None:
                offsets[key], lines_read = progress
                budget -= lines_read
        return SourceBatch([self.settings.topic] * len(values), keys, values, offsets)

    def _read_file(
        self,
        filename: str,
        offset: SourceOffset | None,
        budget: int,
        keys: list[bytes | None],
        values: list[bytes | None],
    ) -> tuple[dict[str, int], int] | None:
        """Append the file's next records; return its new offset and how many lines were read,
        or None when it has no new complete line.
        """
        position, line = position_of(offset), position_of(offset, "line")
        size = self.store.size(filename) or 0
        if size < position:
            raise ConnectorError(
                f"{filename} is shorter ({size} bytes) than its committed position "
                f"{position}: it was truncated or replaced; reset or alter this connector's offsets"
            )
        header: list[str] | None = None
        with self.store.open_input(filename) as handle:
            if self.settings.format == "csv":
                header_lines, header_end = read_complete_lines(handle, 0, 1)
                if not header_lines:
                    return None
                header = self._csv_row(filename, 1, header_lines[0])
                if position < header_end:
                    position, line = header_end, 1
            lines, end = read_complete_lines(handle, position, budget)
        if not lines:
            return None
        produced = len(values)
        rows = None if header is None else csv_rows(lines, len(header))
        if rows is not None or (header is None and all_json(lines)):  # the common batch: no `_value` per line
            if rows is not None:
                assert header is not None
                lines = [JSON_ENCODER.encode(dict(zip(header, row, strict=True))) for row in rows]
            self._take_whole(filename, line, lines, keys, values)
        else:
            self._take_by_line(filename, line, lines, header, keys, values)
        if not self.settings.location_keys:
            keys.extend([None] * (len(values) - produced))
        return {"position": end, "line": line + len(lines)}, len(lines)

    def _take_whole(self, filename: str, line: int, records: list[bytes], keys: list[bytes | None],
                    values: list[bytes | None]) -> None:
        """Append a batch whose lines are all records, as they are (the lines after `line`)."""
        values.extend(records if self.write_value is None else map(self.write_value, records))
        if self.settings.location_keys:
            located = (f"{filename}:{n}".encode() for n in range(line + 1, line + len(records) + 1))
            keys.extend(located if self.write_key is None else map(self.write_key, located))

    def _take_by_line(self, filename: str, line: int, lines: list[bytes], header: list[str] | None,
                      keys: list[bytes | None], values: list[bytes | None]) -> None:
        """Append the lines after `line` one by one: blank and tolerated bad lines skipped, a bad
        one failing the task with its file:line."""
        for number, raw in enumerate(lines, line + 1):
            value = self._value(filename, number, raw.removesuffix(b"\r"), header)
            if value is not None:
                values.append(value)
                if self.settings.location_keys:
                    key = f"{filename}:{number}".encode()
                    keys.append(key if self.write_key is None else self.write_key(key))

    def _value(self, filename: str, line: int, raw: bytes, header: list[str] | None) -> bytes | None:
        """The record value of one line; None for blank lines and tolerated bad ones."""
        if not raw.strip():
            return None
        try:
            if header is None:
                check_json(raw)
                return raw if self.write_value is None else self.write_value(raw)
            row = self._csv_row(filename, line, raw)
            if len(row) != len(header):
                raise BadRecord(
                    f"{filename}:{line}: {len(row)} CSV fields, but the header has {len(header)}"
                )
            value = JSON_ENCODER.encode(dict(zip(header, row, strict=True)))
            return value if self.write_value is None else self.write_value(value)
        except (ValueError, BadRecord) as exc:
            if self.settings.skip_errors:
                return None
            if isinstance(exc, BadRecord):
                raise
            what = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else "invalid JSON"
            raise BadRecord(f"{filename}:{line}: {what}: {exc}") from exc

    @staticmethod
    def _csv_row(filename: str, line: int, raw: bytes) -> list[str]:
        try:
            text = raw.removesuffix(b"\r").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadRecord(f"{filename}:{line}: not UTF-8: {exc}") from exc
        return next(csv.reader([text]), [])


class FileSourceConnector(SourceConnector):
    task_class = FileSourceTask
    config_def = CONFIG_DEF
    converters: ClassVar[frozenset[str]] = frozenset({"key", "value"})

    def validate(self, config: ConnectorConfig) -> list[ConfigProblem]:
        return FileSourceSettings.read(config)[1]

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        FileSourceSettings.parse(config)
        return share_configs(config, max(1, max_tasks))

    def validate_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> None:
        """Connect's FileStreamSourceConnector checks (a `position` that is a non-negative long;
        tombstones for any partition, so stray offsets can be removed), made exact for what the
        tasks read: a partition is `{"filename": F}` with F a path as the tasks list files
        (relative to `path`, no hidden parts, matched by `glob`; anything else is never read),
        and `line`, when given, a non-negative integer (it numbers the keys). Whether `position`
        starts a line is checked when the request runs (`alter_offsets`): the file lives where
        the tasks run.
        """
        settings = FileSourceSettings.parse(config)
        for key, offset in offsets.items():
            if offset is not None:
                partition = partition_from_key(key)
                _check_partition(settings.path, partition)
                _check_glob(settings.glob, str(partition["filename"]))
                _check_offset(offset)

    def alter_offsets(
        self, config: ConnectorConfig, offsets: Mapping[PartitionKey, SourceOffset | None]
    ) -> bool:
        """Refuse a position that is not the start of a line of its file (it would cut a line in
        two); True, as Connect's FileStreamSourceConnector returns once it validated them."""
        store = open_store(FileSourceSettings.parse(config).path, config)
        for key, offset in offsets.items():
            position = None if offset is None else offset.get("position")
            filename = partition_from_key(key).get("filename")
            if is_long(position) and position > 0 and isinstance(filename, str):
                if not _at_line_start(store, filename, position):
                    raise OffsetsRefused(
                        f"position {position} in {filename} is not the start of a line (or is past its end)"
                    )
        return True


# Connect's words where it has them (FileStreamSourceConnector.alterOffsets).
def _check_partition(directory: str, partition: Mapping[str, object]) -> None:
    if set(partition) != {"filename"}:
        message = "Partition objects should contain the key 'filename' and no other"
        raise OffsetsRefused(f"{message}; got {json.dumps(dict(partition), ensure_ascii=False)}")
    filename = partition["filename"]
    if not isinstance(filename, str) or not _listed_name(filename):
        raise OffsetsRefused(
            f"The value for the 'filename' key in the partition should be a file's path relative to the "
            f"connector's 'path' ({directory}), as the tasks name files: no leading '/', no '.' or '..' "
            f"parts, no hidden names; got {json.dumps(filename, ensure_ascii=False)}"
        )


def _check_glob(pattern: str, filename: str) -> None:
    if not glob_matches(pattern, filename):
        raise OffsetsRefused(
            f"The connector's 'glob' ({pattern}) does not match {json.dumps(filename, ensure_ascii=False)}: "
            "its tasks never read that file, so the offset would never be used"
        )


def glob_matches(pattern: str, filename: str) -> bool:
    """Whether `list_files(directory, pattern)` can list `filename` (a relative POSIX path),
    judged from the names alone: as `Path.glob`, each part by its own wildcard (case matters)
    and `**` for any number of directories. A pattern ending in `**` is not judged (True)."""
    wanted, parts = PurePosixPath(pattern).parts, PurePosixPath(filename).parts
    if wanted and wanted[-1] == "**":
        return True

    def match(i: int, j: int) -> bool:
        if i == len(wanted):
            return j == len(parts)
        if wanted[i] == "**":
            return any(match(i + 1, k) for k in range(j, len(parts) + 1))
        return j < len(parts) and fnmatch.fnmatchcase(parts[j], wanted[i]) and match(i + 1, j + 1)

    return match(0, 0)


def _listed_name(filename: str) -> bool:
    """Whether `list_files` can name a file so: its relative POSIX path, dot-names excluded."""
    path = PurePosixPath(filename)
    hidden = any(part.startswith(".") for part in path.parts)
    return bool(filename) and not path.is_absolute() and path.as_posix() == filename and not hidden


def _check_offset(offset: SourceOffset) -> None:
    check_position(offset)
    line = offset.get("line", 0)
    if not is_long(line) or line < 0:
        raise OffsetsRefused("The value for the 'line' key in the offset should be a non-negative Long value")


def _at_line_start(store: Store, filename: str, position: int) -> bool:
    """True when the byte before `position` is a newline; unknown files are given the benefit."""
    try:
        return store.read(filename, position - 1, 1) == b"\n"
    except FileNotFoundError:
        return True
