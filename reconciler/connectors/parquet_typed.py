"""`parquet-sink`'s typed files: with a `key.converter` or `value.converter` other than
ByteArrayConverter, each file holds Connect's fields (`offset`, `timestamp`, `key`, `headers`;
`topic` and `partition` are the directory names) and the value's columns, as
`converters.columns` reads them (docs/connectors.md#parquet-sink).

A file's records are decoded together when it is written, so a file has one schema (schemaless
JSON is inferred per file; struct schemas that differ are merged by field name). A record that
does not decode goes to the task's errant record reporter (`errors.tolerance`, the dead letter
queue): the dead letters are committed before the file exists, so a crash between the two
finds them in the DLQ and does not produce them again (`kafka.io.dead_letters`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

import pyarrow as pa

from reconciler.connectors.converters.columns import record_failures, typed_rows
from reconciler.connectors.converters.settings import Converter, converter
from reconciler.connectors.errant import ErrantReporter

FIELDS: Final = ("offset", "timestamp", "key", "headers")


def converting(task_config: Mapping[str, str]) -> tuple[Converter, Converter] | None:
    """The key and value converters, or None when both leave the bytes as they are (the files
    are then exactly the untyped ones)."""
    key, value = converter(task_config, "key"), converter(task_config, "value")
    return None if key.kind == value.kind == "bytes" else (key, value)


def typed_file(chunks: Sequence[pa.RecordBatch], converters: tuple[Converter, Converter],
               reporter: ErrantReporter) -> pa.Table:
    """The file's table from its buffered records (`sink_schema()` batches); the records that
    do not decode reported, and the dead letters flushed, first."""
    rows = pa.Table.from_batches(chunks)
    typed = typed_rows(rows, *converters, FIELDS)
    for failure in record_failures(rows, typed.failures):
        reporter.report(failure)
    reporter.flush()
    return typed.table
