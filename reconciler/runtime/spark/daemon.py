"""The Python daemon of a local session's workers: PySpark's own (`pyspark.daemon`), importing
PySpark from the installed package rather than from Spark's `pyspark.zip`.

Spark starts its Python workers with `python/lib/pyspark.zip` and py4j's zip first on their
path. Python keeps no compiled modules for a zip, so every daemon, and every worker it forks
(each imports `pyspark.worker` after the fork), compiles PySpark from source again: measured,
`import pyspark.daemon, pyspark.worker` takes 0.84–0.93 s from the zips and 0.17 s from the
installed package; a local session's first Python job 1.87–1.99 s with the zips first, and
0.86–0.89 s with them last. The zips are moved last only when they are the installed packages'
own (PySpark's pip package carries them: the same code, packed); another Spark's stay first.
Local masters only (`session.session_conf`): a cluster's executors may not have this package.

The daemon also imports what every task imports (`PRELOADED`) once, before it forks a worker
per task: each worker starts with them instead of importing them again, measured 1.4 CPU s per
worker (`pyspark.worker` 0.7 s, the sink and source task modules 0.45 s each, shared). Only
modules that start no thread when imported: PySpark imports its worker after the fork because
pyarrow and pandas start threads on import (numpy's BLAS too), so those stay out
(tests/unit/runtime/test_spark_daemon.py checks it).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from importlib.machinery import PathFinder
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def installed_first(path: list[str]) -> list[str]:
    """`path` with the zips of the installed PySpark (`pyspark/python/lib/`) moved last: its
    own `pyspark.zip`, and py4j's zip when that is the installed py4j's version."""
    spec = PathFinder.find_spec("pyspark", [entry for entry in path if not entry.endswith(".zip")])
    if spec is None or spec.origin is None:
        return path
    bundled = Path(spec.origin).parent / "python" / "lib"
    same = {(bundled / "pyspark.zip").resolve()}
    try:
        same.add((bundled / f"py4j-{version('py4j')}-src.zip").resolve())
    except PackageNotFoundError:  # no installed py4j: its zip is the only one
        pass
    moved = [entry for entry in path if entry.endswith(".zip") and Path(entry).resolve() in same]
    return [entry for entry in path if entry not in moved] + moved


PRELOADED = ("pyspark.worker", "confluent_kafka", "reconciler.runtime.sink.task", "reconciler.runtime.source.task")


def preload(modules: Sequence[str] = PRELOADED) -> None:
    """Import `modules` now; one that fails is left to the worker (its error is the task's)."""
    for name in modules:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 — the worker imports it again and reports why
            continue


if __name__ == "__main__":
    sys.path[:] = installed_first(sys.path)
    preload()
    from pyspark import daemon

    daemon.manager()
