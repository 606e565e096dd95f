"""A delta-sink table read by Spark with Delta Lake's own reader (delta-spark 4.4.0 for Spark 4.2,
its jars from Maven Central by reconciler/devtools/jvm/delta-spark/pom.xml): written by the
sink's task (Parquet files, partitioned) and committed by its driver commit in two batches,
the second adding a column; Spark sees every row once, the new column null before it."""

from __future__ import annotations

from pathlib import Path

import pytest

from delta_support import config, order, record, run_task
from reconciler.connectors.delta.connector import DeltaSinkConnector
from reconciler.devtools.delta_spark import spark_read


@pytest.mark.timeout(900)  # a JVM of its own with delta-spark's jars
def test_spark_reads_the_table_with_deltas_own_reader(tmp_path: Path) -> None:
    cfg = config(tmp_path / "t", **{"delta.partition.by": "partition"})
    DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i)) for i in range(5)])])
    DeltaSinkConnector().commit(cfg, [run_task(cfg, [record(i, order(i, colour="red"), partition=1)
                                                     for i in range(5, 7)])])
    rows = sorted(spark_read(str(tmp_path / "t"), ["key", "id", "partition", "colour"]), key=lambda r: int(r[1] or 0))
    assert rows == [[f"k{i}", str(i), "0", None] for i in range(5)] + [[f"k{i}", str(i), "1", "red"] for i in (5, 6)]
