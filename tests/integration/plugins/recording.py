"""A sink that records exactly what it was given (`recording:RecordingSink`), for the readers' tests.

Each `write` batch is saved whole as `<path>/<topic>-<partition>-<first>-<last>.arrow` (Arrow
IPC), so a test sees the batches' schema, every field of every record (headers included) and
what was delivered twice. `pre_commit` reports what it was offered: the offset the runtime
computed (the last delivered record + 1), which the test checks against the group's commit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconciler.connectors.api import (
    ConnectorConfig,
    SinkConnector,
    SinkTask,
    TaskConfig,
    TopicPartition,
    share_configs,
)


class RecordingSinkTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.path = Path(task_config["path"])
        self.path.mkdir(parents=True, exist_ok=True)

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}

    def write(self, batch: Any) -> None:
        import pyarrow as pa

        offsets = batch.column("offset")
        first, last = offsets[0].as_py(), offsets[-1].as_py()
        topic, partition = batch.column("topic")[0].as_py(), batch.column("partition")[0].as_py()
        target = self.path / f"{topic}-{partition}-{first}-{last}.arrow"
        with pa.OSFile(str(target), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        return dict(offsets)


class RecordingSink(SinkConnector):
    task_class = RecordingSinkTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return share_configs(config, max_tasks)


def recorded(path: Path) -> Any:
    """Every recorded batch as one Arrow table (sorted by topic, partition, offset)."""
    import pyarrow as pa

    tables = [pa.ipc.open_file(str(file)).read_all() for file in sorted(path.glob("*.arrow"))]
    return pa.concat_tables(tables).sort_by([("topic", "ascending"), ("partition", "ascending"),
                                             ("offset", "ascending")])
