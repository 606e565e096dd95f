"""delta-sink under `reconciler run --once` (real broker, Spark and Delta tables read back by
delta-rs): JsonConverter records with schemas land as typed columns, one Delta commit per batch
with each partition's next offset as a `txn` action; SIGKILLed mid-write, with the files written
and no commit, and after the table commit before the group commit, the next run leaves the table
exactly the topic (0 lost, 0 duplicated); schema evolution and an incompatible change; two
writers fenced; the table on an S3 server (moto) with the s3.* keys, and on Azure (Azurite) and
GCS (fake-gcs-server) with the azblob.* and gcs.* keys, killed after its files and after its
commit (HDFS: test_delta_spark_read.py); and a record that does not decode or fit the batch's
schema sent to the dead letter queue (`errors.tolerance=all`) or failing the task naming its
offset and column (`none`)."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

from crash_support import run_once
from java_read_support import produce_raw
from reconciler.connectors.converters.encode import envelope
from reconciler.connectors.converters.schema import Schema, struct
from reconciler.devtools.azurite import RunningAzurite
from reconciler.devtools.gcs import RunningGcs
from reconciler.devtools.s3 import RunningS3
from reconciler.kafka.io.consume import raw_to_end
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything, topic_keys

DELTA_SINK = "reconciler.connectors.delta.connector:DeltaSinkConnector"
JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
COUNT = 3000


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    """Manifests only: every run here is a `reconciler run --once` subprocess."""
    return Pipeline(kafka_settings, tmp_path)


def order(i: int, **more: Any) -> bytes:
    schema = struct(("id", Schema("int64")), ("customer", Schema("string", optional=True)),
                    *[(k, Schema("string", optional=True)) for k in more], name="order")
    encoded = envelope(schema, {"id": i, "customer": f"customer {i}", **more})
    assert encoded is not None
    return encoded


def delta_config(uri: str, topic: str, **extra: str) -> dict[str, str]:
    return {"topics": topic, "delta.table.uri": uri, "value.converter": JSON, "key.converter": STRING, **extra}


def table_keys(uri: str, options: dict[str, str] | None = None) -> Counter[bytes]:
    rows = DeltaTable(uri, storage_options=options).to_pyarrow_table(columns=["key"])
    return Counter(k.encode() for k in rows.column("key").to_pylist())


@pytest.mark.timeout(900)  # three `run --once` processes, each starting Spark
def test_killed_at_each_step_the_table_converges_to_the_topic(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("orders", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(COUNT)])
    uri = str(tmp_path / "orders")
    pipeline.connector("lake", DELTA_SINK, delta_config(uri, topic), tasks_max=2)

    run_once(pipeline, "sink.mid_write")  # a partition's first batch read, nothing written
    run_once(pipeline, "sink.after_files")  # a partition's files written, no table commit
    assert not (Path(uri) / "_delta_log").exists() or DeltaTable(uri).to_pyarrow_table().num_rows == 0
    run_once(pipeline, "sink.after_table_commit")  # the table holds the batch, the group does not
    assert table_keys(uri) == topic_keys(pipeline.settings, topic)
    assert not committed_everything(pipeline.settings, "connect-lake", topic)

    pipeline.converge()
    assert committed_everything(pipeline.settings, "connect-lake", topic)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(COUNT, COUNT + 500)])
    pipeline.converge()
    keys = table_keys(uri)
    assert keys == topic_keys(pipeline.settings, topic) and len(keys) == COUNT + 500 and set(keys.values()) == {1}
    table = DeltaTable(uri)
    rows = table.to_pyarrow_table(columns=["id", "customer", "offset", "partition"]).sort_by("id")
    assert rows.slice(0, 1).select(["id", "customer"]).to_pylist() == [{"id": 0, "customer": "customer 0"}]
    versions = {p: table.transaction_version(f"lake-{topic}-{p}") for p in (0, 1)}
    ends = {p: max(o for o, q in zip(rows.column("offset").to_pylist(), rows.column("partition").to_pylist(),
                                       strict=True) if q == p) + 1 for p in (0, 1)}
    assert versions == ends


@pytest.mark.timeout(600)
def test_new_columns_are_added_and_an_incompatible_change_fails_the_task_naming_it(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    topic = pipeline.topic("evolving", 1)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(100)])
    uri = str(tmp_path / "evolving")
    pipeline.connector("evolving", DELTA_SINK, delta_config(uri, topic))
    pipeline.converge()
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i, colour="red")) for i in range(100, 150)])
    pipeline.converge()
    rows = DeltaTable(uri).to_pyarrow_table(columns=["id", "colour"]).sort_by("id")
    assert rows.column("colour").to_pylist() == [None] * 100 + ["red"] * 50

    changed = envelope(struct(("id", Schema("string")), name="order"), {"id": "not a number"})
    assert changed is not None
    produce_raw(pipeline.settings, topic, [(b"x", changed)])
    pipeline.tick_failing()
    task = pipeline.state("evolving").task_statuses[0]
    assert task.state.value == "FAILED" and task.trace is not None
    last = task.trace.strip().splitlines()[-1]
    assert f"column `id` of the Delta table at {uri} is long, the records' is string" in last, task.trace
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 150


@pytest.mark.timeout(600)
def test_a_second_writer_on_the_table_fences_the_batch(pipeline: Pipeline, tmp_path: Path) -> None:
    topic = pipeline.topic("fenced", 1)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(200)])
    uri, pause = str(tmp_path / "fenced"), tmp_path / "pause"
    pause.mkdir()
    pipeline.connector("fenced", DELTA_SINK, delta_config(uri, topic))
    outputs: list[str] = []
    run = threading.Thread(target=lambda: outputs.append(run_once(
        pipeline, "sink.after_files", expected=1, env={"RECONCILER_FAILPOINT_PAUSE_DIR": str(pause)})))
    run.start()
    deadline = time.monotonic() + 180
    while not (pause / "sink.after_files.paused").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert (pause / "sink.after_files.paused").exists(), "the batch never paused with its files written"
    # Another reconciler committed the same partition to the table meanwhile.
    write_deltalake(uri, pa.table({"id": pa.array([], pa.int64())}), mode="append",
                    commit_properties=CommitProperties(app_transactions=[Transaction(f"fenced-{topic}-0", 200)]))
    (pause / "sink.after_files.resume").touch()
    run.join(timeout=240)
    assert outputs, "the run did not end"
    task = pipeline.state("fenced").task_statuses[0]
    assert task.state.value == "FAILED" and task.trace is not None
    last = task.trace.strip().splitlines()[-1]
    assert f"holds {topic}[0] up to offset 200, past 0 where this batch started" in last, task.trace
    assert DeltaTable(uri).to_pyarrow_table().num_rows == 0
    assert not committed_everything(pipeline.settings, "connect-fenced", topic)


@pytest.mark.timeout(600)
def test_a_table_on_an_s3_server_with_the_s3_keys(pipeline: Pipeline, s3_server: RunningS3) -> None:
    topic = pipeline.topic("s3orders", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(1000)])
    uri = s3_server.uri(f"{topic}/table")
    keys = {"s3.endpoint": s3_server.endpoint, "s3.region": s3_server.region, "s3.path.style.access": "true",
            "s3.access.key.id": s3_server.access_key_id, "s3.secret.access.key": s3_server.secret_access_key}
    pipeline.connector("s3lake", DELTA_SINK, delta_config(uri, topic, **keys), tasks_max=2)
    run_once(pipeline, "sink.after_table_commit")
    pipeline.converge()
    options = {"AWS_ENDPOINT_URL": s3_server.endpoint, "AWS_REGION": s3_server.region, "AWS_ALLOW_HTTP": "true",
               "AWS_ACCESS_KEY_ID": s3_server.access_key_id, "AWS_SECRET_ACCESS_KEY": s3_server.secret_access_key}
    found = table_keys(uri, options)
    assert found == topic_keys(pipeline.settings, topic) and set(found.values()) == {1}
    assert committed_everything(pipeline.settings, "connect-s3lake", topic)


def delta_rs_options(server: RunningAzurite | RunningGcs) -> dict[str, str]:
    """delta-rs's options that reach `server`, written here, not by the sink's own mapping."""
    if isinstance(server, RunningAzurite):
        return {"azure_storage_account_name": server.account, "azure_storage_account_key": server.account_key,
                "azure_storage_endpoint": f"{server.endpoint}/{server.account}", "azure_allow_http": "true"}
    # object_store's way to an emulator (its own tests'): a key file with no secret, no OAuth.
    key = {"gcs_base_url": server.endpoint, "disable_oauth": True, "client_email": "", "private_key": "",
           "private_key_id": ""}
    return {"google_service_account_key": json.dumps(key)}


@pytest.mark.timeout(900)  # two `run --once` processes, each starting Spark
@pytest.mark.parametrize(("store", "name"), [("azurite", "az"), ("gcs_server", "gs")])
def test_a_table_on_azure_or_gcs_killed_after_its_files_and_after_its_commit_converges(
    pipeline: Pipeline, store: str, name: str, request: pytest.FixtureRequest
) -> None:
    """The same keys as the file connectors' (`azblob.*`, `gcs.*`), a table partitioned into
    directories; read back by delta-rs. On GCS delta-rs commits through the XML API, each commit
    a create-if-absent (x-goog-if-generation-match: 0)."""
    server: RunningAzurite | RunningGcs = request.getfixturevalue(store)
    topic = pipeline.topic(f"{name}orders", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(1000)])
    uri = server.uri(f"{topic}/table")
    config = delta_config(uri, topic, **server.keys(), **{"delta.partition.by": "partition"})
    pipeline.connector(f"{name}lake", DELTA_SINK, config, tasks_max=2)
    options = delta_rs_options(server)

    run_once(pipeline, "sink.after_files")  # the tasks' files in the store, no table commit
    run_once(pipeline, "sink.after_table_commit")  # the table holds the batch, the group does not
    assert table_keys(uri, options) == topic_keys(pipeline.settings, topic)
    assert not committed_everything(pipeline.settings, f"connect-{name}lake", topic)

    pipeline.converge()
    found = table_keys(uri, options)
    assert found == topic_keys(pipeline.settings, topic) and len(found) == 1000 and set(found.values()) == {1}
    assert DeltaTable(uri, storage_options=options).metadata().partition_columns == ["partition"]
    assert committed_everything(pipeline.settings, f"connect-{name}lake", topic)


@pytest.mark.timeout(600)
def test_a_record_that_does_not_fit_goes_to_the_dead_letter_queue_or_fails_the_task(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    """One run, two sinks on one topic: `errors.tolerance=all` leaves the two bad records out of
    the table and sends them to the DLQ with Connect's error headers; `none` fails its task on
    the first, naming the record's offset and the column."""
    topic, dlq = pipeline.topic("misfits", 1), pipeline.topic("misfits-dlq")
    clash = envelope(struct(("id", Schema("string")), name="order"), {"id": "twenty"})  # `id` is int64 before it
    records = [(b"%d" % i, clash if i == 20 else b"not json" if i == 30 else order(i)) for i in range(50)]
    produce_raw(pipeline.settings, topic, records)
    lenient, strict = str(tmp_path / "lenient"), str(tmp_path / "strict")
    pipeline.connector("lenient", DELTA_SINK, delta_config(
        lenient, topic, **{"errors.tolerance": "all", "errors.deadletterqueue.topic.name": dlq,
                           "errors.deadletterqueue.topic.replication.factor": "1",
                           "errors.deadletterqueue.context.headers.enable": "true"}))
    pipeline.connector("strict", DELTA_SINK, delta_config(strict, topic))
    pipeline.tick_failing()

    assert table_keys(lenient) == Counter(b"%d" % i for i in range(50) if i not in (20, 30))
    letters = {int(m.key()): m for m in raw_to_end(pipeline.settings, [dlq])}
    assert sorted(letters) == [20, 30] and letters[30].value() == b"not json"
    headers = dict(letters[20].headers())
    assert headers["__connect.errors.topic"] == topic.encode() and headers["__connect.errors.offset"] == b"20"
    assert headers["__connect.errors.connector.name"] == b"lenient"
    assert headers["__connect.errors.stage"] == b"VALUE_CONVERTER" and headers["__connect.errors.class.name"] == JSON.encode()
    assert b"field 'id' the type string" in headers["__connect.errors.exception.message"]
    assert committed_everything(pipeline.settings, "connect-lenient", topic)

    task = pipeline.state("strict").task_statuses[0]
    assert task.state.value == "FAILED" and task.trace is not None
    last = task.trace.strip().splitlines()[-1]
    assert f"the value of record {topic}-0@20 cannot be read by {JSON}" in last and "field 'id'" in last, task.trace
    assert not committed_everything(pipeline.settings, "connect-strict", topic)
