"""A delta-sink table read by Spark with Delta Lake's own reader (delta-spark 4.4.0 for Spark 4.2,
its jars from Maven Central by reconciler/devtools/jvm/delta-spark/pom.xml): written by the
sink's task (Parquet files, partitioned) and committed by its driver commit in two batches,
the second adding a column, on a local disk and on HDFS (MiniDFSCluster; Spark reads it through
Hadoop's own HDFS client, the sink wrote it through hdfs-native and delta-rs); Spark sees every
row once, the new column null before it. The read is Spark's, in a child process: delta-rs's
own reader over HDFS aborts its process at exit in some runs (docs/connectors.md)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from delta_support import config, order, record, run_task
from reconciler.connectors.delta.connector import DeltaSinkConnector
from reconciler.devtools.delta_spark import spark_read_tables
from reconciler.devtools.hdfs import RunningHdfs


@pytest.mark.timeout(900)  # a JVM of its own with delta-spark's jars
def test_spark_reads_the_table_with_deltas_own_reader_on_disk_and_on_hdfs(tmp_path: Path, hdfs: RunningHdfs) -> None:
    tables = [str(tmp_path / "t"), hdfs.uri(f"lake-{uuid.uuid4().hex[:8]}/t")]
    for table in tables:
        cfg = {**config(tmp_path / "t"), "delta.table.uri": table, "delta.partition.by": "partition"}
        DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i)) for i in range(5)])])
        DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i, colour="red"), partition=1)
                                                         for i in range(5, 7)])])
    expected = [[f"k{i}", str(i), "0", None] for i in range(5)] + [[f"k{i}", str(i), "1", "red"] for i in (5, 6)]
    for table, rows in zip(tables, spark_read_tables(tables, ["key", "id", "partition", "colour"]), strict=True):
        assert sorted(rows, key=lambda r: int(r[1] or 0)) == expected, table
