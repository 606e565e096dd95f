"""Plugin API helpers and the connector registry (entry points, module:Class, errors)."""

from __future__ import annotations

import pickle
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorConfig,
    InvalidConnectorConfig,
    OffsetsRefused,
    PartitionKey,
    Primitive,
    SinkRecord,
    SourceBatch,
    SourceConnector,
    SourceOffset,
    SourceRecord,
    SourceTask,
    TaskConfig,
    partition_from_key,
    partition_key,
    records_to_batch,
    share_configs,
    sink_schema,
    task_share,
)
from reconciler.connectors.datagen import DatagenConnector
from reconciler.connectors.file_source import FileSourceConnector
from reconciler.connectors.parquet_sink import ParquetSinkConnector
from reconciler.connectors.registry import UnknownConnector, available_connectors, load_connector
from reconciler.errors import ReconcilerError


class _EchoTask(SourceTask):
    def poll_batch(
        self, committed: Mapping[PartitionKey, SourceOffset], max_records: int
    ) -> SourceBatch:
        return SourceBatch.empty()


class EchoConnector(SourceConnector):
    """A plugin defined outside the package, found by its `module:Class` path."""

    task_class = _EchoTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)


class NotAConnector:
    pass


# --- partition keys -------------------------------------------------------------------------


def test_partition_key_is_canonical_whatever_the_key_order() -> None:
    assert partition_key({"b": 1, "a": "x"}) == partition_key({"a": "x", "b": 1}) == '{"a":"x","b":1}'


def test_partition_key_keeps_non_ascii_text_and_round_trips() -> None:
    partition: dict[str, Primitive] = {"filename": "données/é.jsonl", "n": 2, "ok": True, "f": 1.5, "none": None}
    key = partition_key(partition)
    assert "é" in key
    assert partition_from_key(key) == partition


def test_partition_from_key_rejects_a_non_object() -> None:
    with pytest.raises(ValueError, match="not a source partition key"):
        partition_from_key("[1,2]")


# --- batches --------------------------------------------------------------------------------


def test_source_batch_from_records_keeps_the_last_offset_of_each_partition() -> None:
    records = [
        SourceRecord("t", b"k1", b"v1", {"file": "a"}, {"pos": 1}),
        SourceRecord("u", None, b"v2", {"file": "b"}, {"pos": 7}),
        SourceRecord("t", b"k3", None, {"file": "a"}, {"pos": 2}),
    ]
    batch = SourceBatch.from_records(records)
    assert list(batch.topics) == ["t", "u", "t"]
    assert list(batch.keys) == [b"k1", None, b"k3"]
    assert list(batch.values) == [b"v1", b"v2", None]
    assert batch.offsets == {'{"file":"a"}': {"pos": 2}, '{"file":"b"}': {"pos": 7}}
    assert len(batch) == 3 and not batch.is_empty


def test_source_batch_with_offsets_but_no_records_is_not_empty() -> None:
    assert SourceBatch.empty().is_empty
    assert not SourceBatch([], [], [], {'{"f":"a"}': {"pos": 3}}).is_empty


def test_source_batch_columns_must_have_equal_lengths() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        SourceBatch(["t"], [b"k", b"k2"], [b"v"])


def test_records_to_batch_has_the_sink_schema() -> None:
    batch = records_to_batch(
        [SinkRecord("t", 1, 5, b"k", None, 1_700_000_000_000), SinkRecord("t", 1, 6, None, b"v", 0)]
    )
    assert batch.schema == sink_schema()
    assert batch.column("offset").to_pylist() == [5, 6]
    assert batch.column("key").to_pylist() == [b"k", None]
    assert batch.column("value").to_pylist() == [None, b"v"]


# --- config reading -------------------------------------------------------------------------


def test_invalid_config_error_names_every_key() -> None:
    error = InvalidConnectorConfig([ConfigProblem("a", "is required"), ConfigProblem("b", "bad")])
    assert error.message == "`a`: is required; `b`: bad"
    assert isinstance(error, ReconcilerError)


def test_connector_errors_survive_pickling() -> None:
    """Errors raised inside Spark partitions may be pickled back to the driver."""
    error = InvalidConnectorConfig([ConfigProblem("count", "is required")])
    copy = pickle.loads(pickle.dumps(error))
    assert copy.problems == error.problems and copy.message == error.message
    refused = pickle.loads(pickle.dumps(OffsetsRefused("no rewinds here")))
    assert isinstance(refused, OffsetsRefused) and refused.message == "no rewinds here"


def test_share_configs_are_plain_strings_and_picklable() -> None:
    configs = share_configs({"topic": "t", "dropped": None}, 3)
    assert [task_share(c) for c in configs] == [(0, 3), (1, 3), (2, 3)]
    assert all(isinstance(v, str) for c in configs for v in c.values())
    assert "dropped" not in configs[0]
    assert pickle.loads(pickle.dumps(configs)) == configs


# --- registry -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("datagen", DatagenConnector),
        ("file-source", FileSourceConnector),
        ("parquet-sink", ParquetSinkConnector),
        (" parquet-sink ", ParquetSinkConnector),
        ("reconciler.connectors.datagen:DatagenConnector", DatagenConnector),
        (f"{__name__}:EchoConnector", EchoConnector),
    ],
)
def test_load_connector_by_entry_point_or_path(name: str, expected: type) -> None:
    assert load_connector(name) is expected


def test_built_ins_are_registered_with_their_kinds() -> None:
    built_ins = ("datagen", "file-sink", "file-source", "jdbc-sink", "jdbc-source", "parquet-sink")
    assert set(built_ins) <= set(available_connectors())
    kinds = {name: load_connector(name).kind for name in built_ins}
    assert kinds == {"datagen": "source", "file-sink": "sink", "file-source": "source", "jdbc-sink": "sink",
                     "jdbc-source": "source", "parquet-sink": "sink"}


def test_unknown_name_lists_the_registered_ones() -> None:
    with pytest.raises(UnknownConnector) as caught:
        load_connector("FileStreamSource")
    assert "unknown connector class 'FileStreamSource'" in caught.value.message
    assert caught.value.hint is not None
    assert "datagen, delta-sink, file-sink, file-source, iceberg-sink, jdbc-sink, jdbc-source, parquet-sink" in caught.value.hint
    assert "module:Class" in caught.value.hint


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("no_such_module_xyz:Thing", "cannot import module 'no_such_module_xyz'"),
        ("reconciler.connectors.datagen:Missing", "has no 'Missing'"),
        (f"{__name__}:NotAConnector", "is not a connector class"),
        ("reconciler.connectors.api:Connector", "is not a connector class"),
    ],
)
def test_bad_module_paths_are_clear_errors(name: str, message: str) -> None:
    with pytest.raises(UnknownConnector, match=message):
        load_connector(name)


def test_module_path_from_a_plugin_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_plugin.py").write_text(
        "from reconciler.connectors.api import SinkConnector, plain_task_config\n"
        "from reconciler.connectors.parquet_sink import ParquetSinkTask\n"
        "class Mine(SinkConnector):\n"
        "    task_class = ParquetSinkTask\n"
        "    def task_configs(self, config, max_tasks):\n"
        "        return [plain_task_config(config)]\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        connector = load_connector("my_plugin:Mine")
        assert connector.kind == "sink"
        assert connector().task_configs({"a": "1"}, 4) == [{"a": "1"}]
    finally:
        sys.modules.pop("my_plugin", None)


def test_a_plugins_version_is_its_own_else_its_distributions_else_undefined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the statuses of its connectors report (Connect's `Connector.version()`, KIP-891)."""
    from importlib.metadata import version

    from reconciler.connectors.registry import plugin_version

    assert plugin_version("datagen") == version("connect-reconciler")  # a built-in: the package's
    (tmp_path / "versioned_plugin.py").write_text(
        "from reconciler.connectors.parquet_sink import ParquetSinkConnector\n"
        "class Pinned(ParquetSinkConnector):\n"
        "    version = '2.1.0'\n"
        "class Unsaid(ParquetSinkConnector):\n"
        "    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert plugin_version("versioned_plugin:Pinned") == "2.1.0"
        assert plugin_version("versioned_plugin:Unsaid") == "undefined"  # no distribution installed it
    finally:
        sys.modules.pop("versioned_plugin", None)
    assert plugin_version("org.apache.kafka.connect.file.FileStreamSourceConnector") is None  # Java's to say
    assert plugin_version("no_such_module_xyz:Thing") is None
