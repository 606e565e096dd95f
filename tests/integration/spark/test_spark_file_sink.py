"""file-sink through the Spark runtime on the real broker: a batch SIGKILLed after some of its
files and before the group commit, then two batches (the second with new records). Every
record is a line exactly once (ids compared: none lost, none twice), each partition's files
cover its offsets without a gap or an overlap, and the group ends committed at the end.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from reconciler.connectors.file_sink import SUFFIXES
from reconciler.connectors.range_files import held_ranges, partition_dir
from reconciler.connectors.storage import open_store
from reconciler.kafka.io.consume import end_offsets
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from reconciler import failpoints
from reconciler.runtime.executor import SparkExecutor

from crash_support import run_killed_batch
from run_support import produce_ids
from test_spark_runtime import create_topic, n, sink_works

pytestmark = pytest.mark.spark


def written_lines(root: Path) -> list[bytes]:
    """Every line of every finished file (temporary dot-files and `_superseded` skipped)."""
    out: list[bytes] = []
    for file in sorted(root.rglob("*.txt")):
        if not any(part[0] in "._" for part in file.relative_to(root).parts):
            data = file.read_bytes()
            assert data.endswith(b"\n"), f"{file} does not end with a whole line"
            out += data.split(b"\n")[:-1]
    return out


def test_file_sink_writes_each_record_once_across_a_crash_and_two_batches(
    kafka_settings: KafkaSettings, spark_executor: SparkExecutor, tmp_path: Path
) -> None:
    topic, name = n("lines"), n("lines-out")
    create_topic(kafka_settings, topic, partitions=2)
    produce_ids(kafka_settings, topic, range(2000))
    # Several files per partition, so the restart meets finished files, a partition that was
    # cut short, and new ranges.
    works = sink_works(name, "file-sink", 2, topics=topic, path=str(tmp_path), **{"flush.records": "300"})

    run_killed_batch(kafka_settings, works, failpoints.SINK_AFTER_FILES)

    after_crash = written_lines(tmp_path)
    assert after_crash, "the killed batch wrote no file: the failpoint came too early"
    assert len(set(after_crash)) == len(after_crash)
    assert sink_group_offsets(kafka_settings, "connect-" + name) == {}  # files first; the commit never came

    first = spark_executor.run_batch(works)
    produce_ids(kafka_settings, topic, range(2000, 2600))
    second = spark_executor.run_batch(works)

    assert [o.error for o in first + second] == [None] * 4
    # The first batch re-read only what no file held; the second only the new records.
    assert sum(o.records for o in first) == 2000 - len(after_crash)
    assert sum(o.records for o in second) == 600
    assert Counter(int(line) for line in written_lines(tmp_path)) == Counter(range(2600))
    ends = {(topic, p): end for p, end in end_offsets(kafka_settings, topic).items()}
    for (_, partition), end in ends.items():
        ranges = held_ranges(open_store(str(tmp_path), {}), partition_dir(topic, partition), topic, partition, (SUFFIXES["text"],))
        assert ranges[0][0] == 0 and ranges[-1][1] == end - 1
        assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:], strict=False))
    assert sink_group_offsets(kafka_settings, "connect-" + name) == ends
