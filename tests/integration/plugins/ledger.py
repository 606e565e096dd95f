"""A tiny table sink (`ledger:LedgerSink`) for the driver-side commit's tests: the smallest
`TableSinkConnector` that is exactly once the way delta-sink and iceberg-sink are.

Tasks write each range's records as one Arrow IPC file under `<path>/data/` (a fresh name per
attempt) and report it as their `committable()`; the driver commits a batch as the next
`<path>/_log/<version>.json` (created exclusively, as Delta's log is), listing the files and
each partition's next offset. The table is what the log references; files no commit names are
orphans and are never read. `commit` is fenced: a partition the table now holds past the range's
start (another writer) fails the commit, naming it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reconciler.connectors.api import (
    ConnectorConfig,
    ConnectorError,
    SinkTask,
    TableSinkConnector,
    TaskConfig,
    TopicPartition,
    Written,
    plain_task_config,
)


class LedgerTask(SinkTask):
    def start(self, task_config: Mapping[str, str]) -> None:
        super().start(task_config)
        self.data = Path(task_config["path"]) / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        self.batches: list[Any] = []
        self.files: list[str] = []

    def open(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        return {}  # the table's offsets are the driver's business

    def write(self, batch: Any) -> None:
        self.batches.append(batch)

    def pre_commit(self, offsets: Mapping[TopicPartition, int], closing: bool) -> dict[TopicPartition, int]:
        import pyarrow as pa

        if self.batches:
            name = f"{uuid.uuid4().hex}.arrow"
            with pa.OSFile(str(self.data / name), "wb") as sink, pa.ipc.new_file(sink, self.batches[0].schema) as out:
                for batch in self.batches:
                    out.write_batch(batch)
            self.files.append(name)
            self.batches = []
        return dict(offsets)

    def committable(self) -> str | None:
        return json.dumps({"files": self.files}) if self.files else None


def log_entries(path: Path) -> list[dict[str, Any]]:
    log = path / "_log"
    if not log.exists():
        return []
    return [json.loads((log / f"{v}.json").read_text()) for v in sorted(int(p.stem) for p in log.glob("*.json"))]


def held_offsets(path: Path) -> dict[TopicPartition, int]:
    offsets: dict[TopicPartition, int] = {}
    for entry in log_entries(path):
        offsets.update({(topic, int(p)): o for topic, p, o in entry["offsets"]})
    return offsets


def referenced_files(path: Path) -> list[Path]:
    return [path / "data" / name for entry in log_entries(path) for name in entry["files"]]


class LedgerSink(TableSinkConnector):
    task_class = LedgerTask

    def task_configs(self, config: ConnectorConfig, max_tasks: int) -> list[TaskConfig]:
        return [plain_task_config(config) for _ in range(max(1, max_tasks))]

    def table_offsets(self, config: ConnectorConfig, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        held = held_offsets(Path(str(config["path"])))
        return {tp: held[tp] for tp in partitions if tp in held}

    def commit(self, config: ConnectorConfig, written: Sequence[Written]) -> None:
        path = Path(str(config["path"]))
        held = held_offsets(path)
        for w in written:
            now = held.get(w.tp)
            if now is not None and w.start is not None and now > w.start:
                raise ConnectorError(f"ledger {path}: {w.topic}[{w.partition}] is at offset {now} in the table, past "
                                     f"{w.start} where this batch started (another writer committed it)")
        log = path / "_log"
        log.mkdir(parents=True, exist_ok=True)
        entry = {"files": [f for w in written for f in json.loads(w.committable)["files"]],
                 "offsets": [[w.topic, w.partition, w.offset] for w in written]}
        fd = os.open(log / f"{len(log_entries(path))}.json", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        with os.fdopen(fd, "w") as out:
            json.dump(entry, out)
            out.flush()
            os.fsync(out.fileno())
