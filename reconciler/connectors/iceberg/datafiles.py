"""pyiceberg's `DataFile` (a written Parquet file: path, row count, column statistics, partition)
as JSON and back: what a task hands the driver (`SinkTask.committable`) so the driver appends
the files the tasks wrote without reading them again.

Bytes (the bounds) are base64; a partition value keeps its Python type through a tag
(`{"date": …}`, `{"decimal": …}`, …), as the partition's transforms produce them.
"""

from __future__ import annotations

import base64
import datetime
import uuid
from decimal import Decimal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile

_INT_MAPS: Final = ("column_sizes", "value_counts", "null_value_counts", "nan_value_counts")
_BYTE_MAPS: Final = ("lower_bounds", "upper_bounds")
_PLAIN: Final = ("file_path", "record_count", "file_size_in_bytes", "split_offsets", "equality_ids", "sort_order_id")


def to_json(data_file: DataFile) -> dict[str, Any]:
    node: dict[str, Any] = {name: getattr(data_file, name) for name in _PLAIN}
    node["content"] = int(data_file.content)
    node["file_format"] = str(data_file.file_format.value)
    node["spec_id"] = getattr(data_file, "_spec_id", None)  # unset by pyiceberg's writer
    node["partition"] = [json_value(v) for v in data_file.partition._data] if data_file.partition is not None else []
    for name in _INT_MAPS:
        found = getattr(data_file, name)
        node[name] = None if found is None else {str(k): v for k, v in found.items()}
    for name in _BYTE_MAPS:
        found = getattr(data_file, name)
        node[name] = None if found is None else {str(k): base64.b64encode(v).decode() for k, v in found.items()}
    key = data_file.key_metadata
    node["key_metadata"] = None if key is None else base64.b64encode(key).decode()
    return node


def from_json(node: dict[str, Any]) -> DataFile:
    from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
    from pyiceberg.typedef import Record

    arguments: dict[str, Any] = {name: node[name] for name in _PLAIN}
    arguments["content"] = DataFileContent(node["content"])
    arguments["file_format"] = FileFormat(node["file_format"])
    arguments["partition"] = Record(*[python_value(v) for v in node["partition"]])
    for name in _INT_MAPS:
        found = node[name]
        arguments[name] = None if found is None else {int(k): v for k, v in found.items()}
    for name in _BYTE_MAPS:
        found = node[name]
        arguments[name] = None if found is None else {int(k): base64.b64decode(v) for k, v in found.items()}
    key = node["key_metadata"]
    arguments["key_metadata"] = None if key is None else base64.b64decode(key)
    data_file = DataFile.from_args(**arguments)
    if node["spec_id"] is not None:
        data_file.spec_id = node["spec_id"]
    return data_file


def json_value(value: Any) -> Any:
    """A partition value as JSON (tagged when JSON has no such type)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, bytes):
        return {"bytes": base64.b64encode(value).decode()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"date": value.isoformat()}
    if isinstance(value, datetime.time):
        return {"time": value.isoformat()}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    raise TypeError(f"a partition value of type {type(value).__name__} cannot be handed to the driver")


def python_value(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    [(tag, text)] = node.items()
    readers: dict[str, Callable[[str], Any]] = {"bytes": base64.b64decode, "decimal": Decimal, "datetime": datetime.datetime.fromisoformat,
               "date": datetime.date.fromisoformat, "time": datetime.time.fromisoformat, "uuid": uuid.UUID}
    return readers[tag](text)
