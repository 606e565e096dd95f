"""delta-sink tables read by Spark with Delta Lake's own reader (delta-spark 4.4.0 for Spark 4.2,
its jars from Maven Central by reconciler/devtools/jvm/delta-spark/pom.xml), in one child process
(one JVM start for both):

- on a local disk, written by the sink's task (Parquet files, partitioned) and committed by its
  driver commit in two batches, the second adding a column: Spark sees every row once, the new
  column null before it;
- on HDFS (MiniDFSCluster), by `reconciler run --once` SIGKILLed with its files written and no
  table commit, and after the table commit before the group's, then converging:
  Spark (through Hadoop's own HDFS client; the sink wrote through hdfs-native and delta-rs) sees
  exactly the topic, each record once.

The reads are Spark's: delta-rs's own reader over HDFS aborts its process at exit in some runs
(docs/connectors.md), and the table on a disk is read by delta-rs in test_delta_sink_run.py."""

from __future__ import annotations

import uuid
from collections import Counter
from pathlib import Path

import pytest

from crash_support import run_once
from delta_support import JSON, config, order, record, run_task
from java_read_support import produce_raw
from reconciler.connectors.delta.connector import DeltaSinkConnector
from reconciler.devtools.delta_spark import spark_read_tables
from reconciler.devtools.hdfs import RunningHdfs
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, committed_everything, topic_keys

DELTA_SINK = "reconciler.connectors.delta.connector:DeltaSinkConnector"
COUNT = 1500


def evolved_table(table: Path) -> None:
    """Two batches through the task and the driver's commit, the second adding a column."""
    cfg = {**config(table), "delta.partition.by": "partition"}
    DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i)) for i in range(5)])])
    DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i, colour="red"), partition=1)
                                                     for i in range(5, 7)])])


def killed_table_on_hdfs(pipeline: Pipeline, hdfs: RunningHdfs) -> tuple[str, str]:
    """A topic's records sunk into a table on HDFS by runs killed at each step of the batch."""
    topic = pipeline.topic("orders", 2)
    produce_raw(pipeline.settings, topic, [(b"%d" % i, order(i)) for i in range(COUNT)])
    uri = hdfs.uri(f"lake-{uuid.uuid4().hex[:8]}/t")
    pipeline.connector("hdfslake", DELTA_SINK, {
        "topics": topic, "delta.table.uri": uri, "value.converter": JSON,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter"}, tasks_max=2)
    # Killed where the store holds something: its files, then its commit. (At `sink.mid_write` a
    # batch is read and nothing is written yet, on any store: test_delta_sink_run.py kills it there.)
    run_once(pipeline, "sink.after_files")  # a partition's files on HDFS, no table commit
    run_once(pipeline, "sink.after_table_commit")  # the table holds the batch, the group does not
    assert not committed_everything(pipeline.settings, "connect-hdfslake", topic)
    pipeline.converge()
    assert committed_everything(pipeline.settings, "connect-hdfslake", topic)
    return uri, topic


@pytest.mark.timeout(900)  # two `run --once` processes, then a JVM of its own with delta-spark's jars
def test_spark_reads_tables_evolved_on_disk_and_killed_at_each_step_on_hdfs(
    kafka_settings: KafkaSettings, tmp_path: Path, hdfs: RunningHdfs
) -> None:
    local = tmp_path / "t"
    evolved_table(local)
    pipeline = Pipeline(kafka_settings, tmp_path / "pipeline")
    on_hdfs, topic = killed_table_on_hdfs(pipeline, hdfs)

    evolved, killed = spark_read_tables([(str(local), ["key", "id", "partition", "colour"]), (on_hdfs, ["key"])])
    expected = [[f"k{i}", str(i), "0", None] for i in range(5)] + [[f"k{i}", str(i), "1", "red"] for i in (5, 6)]
    assert sorted(evolved, key=lambda r: int(r[1] or 0)) == expected
    found = Counter((key or "").encode() for key, in killed)
    assert found == topic_keys(pipeline.settings, topic) and len(found) == COUNT and set(found.values()) == {1}
