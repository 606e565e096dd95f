"""A source connector whose task kills its own Python worker (no tests here): what makes the
Spark job that packs several source connectors fail as a whole (`packing_support:WorkerKiller`),
unlike a task that raises, whose failure is its partition's result."""

from __future__ import annotations

import os
from collections.abc import Mapping

from reconciler.connectors.api import PartitionKey, SourceBatch, SourceOffset
from reconciler.connectors.datagen import DatagenConnector, DatagenTask

WORKER_KILLER = "packing_support:WorkerKiller"


class WorkerKillerTask(DatagenTask):
    def poll_batch(self, committed: Mapping[PartitionKey, SourceOffset], max_records: int) -> SourceBatch:
        os._exit(3)  # the Python worker dies: Spark fails the task, and so the whole job


class WorkerKiller(DatagenConnector):
    """`datagen` whose tasks kill the Python worker that polls them."""

    task_class = WorkerKillerTask
