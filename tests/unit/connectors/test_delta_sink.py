"""delta-sink without Kafka or Spark: a task's records become typed Parquet files under the table,
the connector's commit puts them in one Delta commit with each partition's offset as a `txn`
action, read back by delta-rs; fencing, schema evolution, an incompatible change, partitions,
a KIP-875 rewind, a range written in several files as it is read, and its config problems."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from delta_support import config, order, record, run_task
from reconciler.connectors.api import ConnectorError, TableCommitFailed, Written, records_to_batch
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.connectors.delta.connector import DeltaSinkConnector, DeltaSinkTask

def test_records_become_typed_columns_committed_once_with_their_offsets(tmp_path: Path) -> None:
    cfg, connector = config(tmp_path / "t"), DeltaSinkConnector()
    assert connector.validate(cfg) == []
    assert connector.table_offsets(cfg, [("orders", 0)]) == {}
    written = [run_task(cfg, [record(i, order(i)) for i in range(3)]),
               run_task(cfg, [record(i, order(i), partition=1) for i in range(10, 12)])]
    connector.commit(cfg, written)
    table = DeltaTable(str(tmp_path / "t"))
    rows = table.to_pyarrow_table().sort_by("offset")
    assert rows.column_names[:6] == ["topic", "partition", "offset", "timestamp", "key", "headers"]
    assert rows.select(["partition", "offset", "key", "id", "name"]).to_pylist()[0] == {
        "partition": 0, "offset": 0, "key": "k0", "id": 0, "name": "n0"}
    assert rows.num_rows == 5 and rows.schema.field("id").type == pa.int64()
    assert connector.table_offsets(cfg, [("orders", 0), ("orders", 1), ("orders", 2)]) == {
        ("orders", 0): 3, ("orders", 1): 12}
    commits = [json.loads(line) for line in (tmp_path / "t" / "_delta_log").glob("*.json") for line in
               line.read_text().splitlines()]
    txns = sorted((c["txn"]["appId"], c["txn"]["version"]) for c in commits if "txn" in c)
    assert txns == [("lake-orders-0", 3), ("lake-orders-1", 12)]


def test_a_partition_another_writer_moved_fences_the_commit(tmp_path: Path) -> None:
    cfg, connector = config(tmp_path / "t"), DeltaSinkConnector()
    connector.commit(cfg, [run_task(cfg, [record(i, order(i)) for i in range(5)])])
    stale = run_task(cfg, [record(i, order(i)) for i in range(3, 8)], start=3)
    with pytest.raises(TableCommitFailed, match=r"holds orders\[0\] up to offset 5, past 3") as failed:
        connector.commit(cfg, [stale])
    assert failed.value.partitions == frozenset({("orders", 0)})
    assert DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 5


def test_new_columns_are_added_and_a_changed_type_fails_naming_the_column(tmp_path: Path) -> None:
    cfg, connector = config(tmp_path / "t"), DeltaSinkConnector()
    connector.commit(cfg, [run_task(cfg, [record(0, order(0))])])
    connector.commit(cfg, [run_task(cfg, [record(1, order(1, colour="red"))])])
    rows = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    assert rows.column("colour").to_pylist() == [None, "red"]
    changed = envelope(struct(("id", Schema("string")), name="order"), {"id": "x"})
    assert changed is not None
    with pytest.raises(ConnectorError, match="column `id` of the Delta table at .* is long, the records' is string"):
        connector.commit(cfg, [run_task(cfg, [record(2, changed)])])
    frozen = config(tmp_path / "t", **{"delta.evolve.schema": "false"})
    with pytest.raises(ConnectorError, match="column `size`.*delta.evolve.schema is false"):
        connector.commit(frozen, [run_task(frozen, [record(3, order(3, size="L"))])])


def test_a_partitioned_table_and_a_rewind_that_moves_the_offsets_keeping_the_rows(tmp_path: Path) -> None:
    cfg, connector = config(tmp_path / "t", **{"delta.partition.by": "partition"}), DeltaSinkConnector()
    connector.commit(cfg, [run_task(cfg, [record(i, order(i), partition=1) for i in range(4)])])
    assert (tmp_path / "t" / "partition=1").is_dir()
    assert connector.alter_offsets(cfg, {("orders", 1): 2, ("orders", 0): None}) is True
    assert connector.table_offsets(cfg, [("orders", 0), ("orders", 1)]) == {("orders", 1): 2}
    assert DeltaTable(str(tmp_path / "t")).to_pyarrow_table().num_rows == 4


def test_a_value_that_does_not_decode_fails_the_task_naming_the_record_or_is_skipped(tmp_path: Path) -> None:
    cfg = config(tmp_path / "t")
    with pytest.raises(ConnectorError, match=r"the value of record orders-0@1 cannot be read by "):
        run_task(cfg, [record(0, order(0)), record(1, b"not json")])
    tolerant = config(tmp_path / "t", **{"errors.tolerance": "all"})
    written = run_task(tolerant, [record(0, order(0)), record(1, b"not json"), record(2, order(2))])
    DeltaSinkConnector().commit(tolerant, [written])
    assert DeltaTable(str(tmp_path / "t")).to_pyarrow_table().column("offset").to_pylist() == [0, 2]


def test_a_range_larger_than_a_file_is_written_as_it_is_read_in_several_files_committed_once(tmp_path: Path) -> None:
    cfg = config(tmp_path / "t", **{"delta.max.records.per.file": "4", "delta.partition.by": "partition"})
    killed = DeltaSinkTask()  # an attempt that died half way: its first file written, never committed
    killed.start(cfg)
    killed.write(records_to_batch([record(i, order(i)) for i in range(5)]))
    task = DeltaSinkTask()
    task.start(cfg)
    for first in range(0, 10, 3):  # batches of 3: the files roll inside a batch, not only at its end
        task.write(records_to_batch([record(i, order(i)) for i in range(first, min(first + 3, 10))]))
        assert task.buffered < 4
    assert len(list((tmp_path / "t" / "partition=0").glob("*.parquet"))) == 1 + 2  # before the closing pre-commit
    assert task.pre_commit({("orders", 0): 10}, closing=True) == {("orders", 0): 10}
    text = task.committable()
    assert text is not None
    assert [f["records"] for f in json.loads(text)["files"]] == [4, 4, 2]
    DeltaSinkConnector().commit(cfg, [Written(topic="orders", partition=0, offset=10, committable=text, start=0)])
    table = DeltaTable(str(tmp_path / "t"))
    assert sorted(table.to_pyarrow_table(columns=["id"]).column("id").to_pylist()) == list(range(10))
    assert len(table.file_uris()) == 3 and table.transaction_version("lake-orders-0") == 10


def test_a_column_null_in_a_first_file_takes_its_type_from_a_later_one_or_from_the_table(tmp_path: Path) -> None:
    cfg = config(tmp_path / "t", **{"value.converter.schemas.enable": "false", "delta.max.records.per.file": "2"})
    values = [b'{"id": 0, "size": null}', b'{"id": 1, "size": null}', b'{"id": 2, "size": 7}']
    connector = DeltaSinkConnector()
    connector.commit(cfg, [run_task(cfg, [record(i, v) for i, v in enumerate(values)])])
    nulls = [b'{"id": 3, "size": null}', b'{"id": 4, "size": null, "note": null}']
    connector.commit(cfg, [run_task(cfg, [record(i + 3, v) for i, v in enumerate(nulls)])])
    rows = DeltaTable(str(tmp_path / "t")).to_pyarrow_table().sort_by("offset")
    assert rows.schema.field("size").type == pa.int64() and rows.schema.field("note").type == pa.string()
    assert rows.column("size").to_pylist() == [None, None, 7, None, None]


def test_config_problems_name_their_keys(tmp_path: Path) -> None:
    problems = DeltaSinkConnector().validate({"delta.table.uri": "ftp://b/t", "delta.partition.by": "headers"})
    assert sorted(p.key for p in problems) == ["delta.partition.by", "delta.table.uri", "topics"]
    small = DeltaSinkConnector().validate({"topics": "t", "delta.table.uri": "/t", "delta.max.records.per.file": "0"})
    assert [(p.key, p.message) for p in small] == [("delta.max.records.per.file", "must be at least 1; got 0")]
    assert DeltaSinkConnector().validate({"topics.regex": "o.*", "delta.table.uri": "s3://bucket/t"}) == []
    assert DeltaSinkConnector().validate({"topics": "t", "delta.table.uri": "gs://bucket/t"}) == []


def test_the_s3_keys_reach_delta_rs_and_pyarrow_and_leave_the_aws_chain_alone_when_unset() -> None:
    from reconciler.connectors.delta.config import DeltaSinkSettings, storage_options

    keys = {"topics": "t", "delta.table.uri": "s3a://bucket/lake", "s3.endpoint": "http://127.0.0.1:9000",
            "s3.region": "eu-west-1", "s3.path.style.access": "true", "s3.access.key.id": "id",
            "s3.secret.access.key": "secret"}
    settings = DeltaSinkSettings.parse(keys)
    assert settings.uri == "s3://bucket/lake"
    assert storage_options(settings) == {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000", "AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "id",
        "AWS_SECRET_ACCESS_KEY": "secret", "AWS_ALLOW_HTTP": "true", "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
        "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    # The tasks' data files go through the file connectors' store, with the same keys.
    assert settings.store.pyarrow_s3_args() == {"force_virtual_addressing": False,
                                                "endpoint_override": "http://127.0.0.1:9000", "scheme": "http",
                                                "region": "eu-west-1", "access_key": "id", "secret_key": "secret"}
    assert "secret" not in repr(settings)
    bare = DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": "s3://bucket/lake"})
    assert storage_options(bare) == {"AWS_S3_ALLOW_UNSAFE_RENAME": "true"}
    assert storage_options(DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": "/tmp/x"})) == {}
    assert storage_options(DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": "hdfs://nn:8020/t"})) == {}


def test_the_azblob_keys_reach_delta_rs_and_leave_azures_chain_alone_when_unset() -> None:
    from reconciler.connectors.delta.config import DeltaSinkSettings, storage_options

    uri = "abfss://lake@acct1.dfs.core.windows.net/t"
    keyed = DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": uri, "azblob.endpoint": "http://127.0.0.1:10000/",
                                     "azblob.account.key": "k3y"})
    assert storage_options(keyed) == {"azure_storage_account_name": "acct1", "azure_storage_account_key": "k3y",
                                      "azure_storage_endpoint": "http://127.0.0.1:10000/acct1",
                                      "azure_allow_http": "true"}
    sas = DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": uri, "azblob.sas.token": "?sv=1&sig=x"})
    assert storage_options(sas) == {"azure_storage_account_name": "acct1", "azure_storage_sas_key": "sv=1&sig=x"}
    assert storage_options(DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": uri})) == {
        "azure_storage_account_name": "acct1"}  # DefaultAzureCredential's sources, as delta-rs reads them


def test_the_gcs_keys_reach_delta_rs_as_a_base_url_and_an_anonymous_key_and_leave_googles_chain_alone() -> None:
    from reconciler.connectors.delta.config import DeltaSinkSettings, storage_options

    def gcs(**keys: str) -> DeltaSinkSettings:
        return DeltaSinkSettings.parse({"topics": "t", "delta.table.uri": "gs://bucket/lake", **keys})

    anonymous = storage_options(gcs(**{"gcs.endpoint": "http://127.0.0.1:4443/", "gcs.anonymous": "true"}))
    assert anonymous.pop("google_base_url") == "http://127.0.0.1:4443" and list(anonymous) == ["google_service_account_key"]
    assert json.loads(anonymous["google_service_account_key"]) == {
        "gcs_base_url": "http://127.0.0.1:4443", "disable_oauth": True, "client_email": "", "private_key": "",
        "private_key_id": ""}
    # Google's default credentials (GOOGLE_APPLICATION_CREDENTIALS…), as delta-rs reads them.
    assert storage_options(gcs(**{"gcs.endpoint": "https://gcs.example:8443/storage/v1"})) == {
        "google_base_url": "https://gcs.example:8443"}
    assert storage_options(gcs()) == {}
    emulated = storage_options(gcs(**{"gcs.anonymous": "true"}), {"STORAGE_EMULATOR_HOST": "127.0.0.1:9023"})
    assert emulated["google_base_url"] == "http://127.0.0.1:9023", emulated
    with pytest.raises(ConnectorError, match=r"^gcs.anonymous=true needs gcs.endpoint \(or STORAGE_EMULATOR_HOST\)"):
        storage_options(gcs(**{"gcs.anonymous": "true"}))


def test_a_table_where_delta_sink_does_not_write_is_refused_with_the_reason() -> None:
    problems = DeltaSinkConnector().validate({"topics": "t", "delta.table.uri": "ftp://host/t"})
    assert [p.key for p in problems] == ["delta.table.uri"] and "is a URI of scheme 'ftp'" in problems[0].message
