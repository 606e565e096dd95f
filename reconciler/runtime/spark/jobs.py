"""The one way jobs run on Spark: a Python function per work item, with two back ends.

`run_partitions(spark, items, function)` runs `function(item)` for every item, each in its
own Spark partition, and returns the results in item order (docs/runtime.md#jobs):

- **RDD** (a classic context: `local[*]` or a cluster master; no SparkSession is built): `parallelize` of the n
  (index, item) pairs in n partitions, each partition getting its own item only, then
  `mapPartitions`; the results come back pickled by PySpark.
- **DataFrame** (a Spark Connect session, which has no RDDs; also selectable on a classic
  one): `range(n)` in n partitions then `mapInArrow`, each result pickled into one binary cell.

Both run the same item body (`_run_guarded`, the collector paused), so a task cannot tell
them apart. It runs in the driver's working directory when the executor has that directory (a
local master, or a cluster on the same machine or on shared storage), so relative paths in
connector configs mean the same on every executor as where `reconciler run` started;
elsewhere they stay relative to the executor's own directory. The RDD back end stays the
default on classic sessions because it measured faster on `local[*]` (see the figures in
docs/runtime.md#jobs): with nothing but summaries coming back, the SQL engine only adds
planning and Arrow set-up per job.

A function may also run over a DataFrame the caller built (`run_over_dataframe`): the sink's
Kafka data source gives one partition per Kafka partition range, and the function gets that
partition's Arrow batches.
"""

from __future__ import annotations

import os
import pickle
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from reconciler import heap
from reconciler.runtime.spark.handle import Spark

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

Item = TypeVar("Item")
Result = TypeVar("Result")

RESULT_SCHEMA = "index long, result binary"


@dataclass(frozen=True)
class PartitionFailed:
    """A partition function raised; the traceback text as the worker saw it."""

    trace: str


def run_partitions(
    spark: Spark,
    items: Sequence[Item],
    function: Callable[[Item], Result],
    *,
    pool: str,
    description: str,
    dataframe: bool | None = None,
    per_partition: int = 1,
) -> list[Result | PartitionFailed]:
    """`function(item)` for every item, each in its own Spark partition; results in item order.

    `function` must be importable by the workers (a module-level function, or a `partial` of
    one) and should catch its own errors; anything it raises comes back as `PartitionFailed`
    rather than failing the job, so one item cannot take the others down with it.
    `dataframe`: force a back end (None: DataFrame on Spark Connect, RDD otherwise).
    `per_partition` (RDD back end): up to this many items share a partition, run side by side
    in threads of its Python worker, for items that mostly wait on the network (a small source
    task's transaction): then more of them wait at once than Spark has cores.
    """
    if not items:
        return []
    use_dataframe = spark.connect if dataframe is None else dataframe
    _describe(spark, pool, description)
    if use_dataframe:
        frame = spark.session().range(0, len(items), 1, len(items))
        body = partial(_arrow_main, function, list(items), os.getcwd())
        results = _collect_pairs(frame.mapInArrow(body, RESULT_SCHEMA))
    else:
        # Each partition's element is its (index, item): an item travels to its own partition
        # only. Closing over the whole list would ship every item to every partition, which is
        # quadratic when one job packs the tasks of a thousand connectors.
        slices = -(-len(items) // max(1, per_partition))
        elements = spark.context.parallelize(list(enumerate(items)), slices)
        results = dict(elements.mapPartitions(partial(_partition_main, function, os.getcwd())).collect())
    return _in_order(results, len(items))


def run_over_dataframe(
    spark: Spark,
    frame: DataFrame,
    function: Callable[[Iterator[pa.RecordBatch]], Iterable[tuple[int, Any]]],
    count: int,
    *,
    pool: str,
    description: str,
) -> list[Any]:
    """`function(batches)` per partition of `frame`; it yields (item index, result) pairs.

    Items that no partition reported (a partition whose range held no record) come back as
    None; a partition whose function raised reports nothing either, so `function` should catch
    its own errors.
    """
    _describe(spark, pool, description)
    pairs = _collect_pairs(frame.mapInArrow(partial(_pairs_to_arrow, function, os.getcwd()), RESULT_SCHEMA))
    return [pairs.get(index) for index in range(count)]


def _describe(spark: Spark, pool: str, description: str) -> None:
    if spark.connect:
        return  # a Connect server schedules its own way; nothing per thread to set
    context = spark.context
    # Per-thread properties (PySpark pins Python threads to JVM threads): this job's FAIR pool.
    context.setLocalProperty("spark.scheduler.pool", pool)
    context.setJobDescription(description)


def _in_order(results: dict[int, Any], count: int) -> list[Any]:
    for index in range(count):  # only if Spark lost a partition: say so rather than guess
        results.setdefault(index, PartitionFailed(f"Spark returned no result for partition {index}"))
    return [results[i] for i in range(count)]


def _collect_pairs(frame: DataFrame) -> dict[int, Any]:
    table = frame.toArrow()
    indexes = table.column("index").to_pylist()
    results = table.column("result").to_pylist()
    return {index: pickle.loads(result) for index, result in zip(indexes, results, strict=True)}


@contextmanager
def in_directory(path: str) -> Iterator[None]:
    """Run in `path` if this machine has it, back where we were afterwards (a Python worker
    runs one task at a time, and is reused for the next)."""
    here = os.getcwd()
    if here != path:
        _pin_import_paths(here)
    try:
        os.chdir(path)
    except OSError:
        yield
        return
    try:
        yield
    finally:
        os.chdir(here)


def _pin_import_paths(here: str) -> None:
    """Make relative import paths absolute before leaving `here`: Spark puts shipped files on
    the path relative to the executor's directory (`./reconciler-….zip`), and packages
    imported from them keep relative `__path__` entries for their later imports."""
    def pinned(entries: list[str]) -> list[str]:
        return [p if os.path.isabs(p) else os.path.normpath(os.path.join(here, p)) for p in entries]

    if all(os.path.isabs(p) for p in sys.path):
        return
    sys.path[:] = pinned(sys.path)
    for module in list(sys.modules.values()):
        path = getattr(module, "__path__", None)
        if isinstance(path, list) and not all(os.path.isabs(p) for p in path):
            path[:] = pinned(path)


def _run_item(function: Callable[[Any], Any], item: Any) -> Any:
    """The partition body of both back ends.

    The cyclic garbage collector is paused meanwhile: moving records allocates millions of
    short-lived containers (one message object per record) that reference counting frees
    anyway, and the collector's passes over them cost ~20% of a sink partition's CPU
    (measured: 1.0–1.3 s instead of 1.3–1.6 s per 500,000 records).
    """
    with heap.building():
        return _run_guarded(function, item)


def _partition_main(
    function: Callable[[Any], Any], directory: str, elements: Iterator[tuple[int, Any]]
) -> Iterator[tuple[int, Any]]:
    """RDD back end, in a Python worker: the partition's elements are (index, item) pairs,
    several run side by side in threads (`per_partition`), the collector paused and the
    directory changed once for all of them (both are the process's, not a thread's)."""
    pairs = list(elements)
    with in_directory(directory), heap.building():
        if len(pairs) == 1:
            results = [_run_guarded(function, pairs[0][1])]
        else:
            with ThreadPoolExecutor(len(pairs), thread_name_prefix="item") as threads:
                results = list(threads.map(partial(_run_guarded, function), [item for _, item in pairs]))
    return zip([index for index, _ in pairs], results, strict=True)


def _run_guarded(function: Callable[[Any], Any], item: Any) -> Any:
    """`function(item)`, or the `PartitionFailed` it raised."""
    try:
        return function(item)
    except Exception:
        return PartitionFailed(traceback.format_exc())


def _arrow_main(
    function: Callable[[Any], Any], items: list[Any], directory: str, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch]:
    """DataFrame back end, in a Python worker: the batches hold the partition's item indexes."""
    def pairs(_: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, Any]]:
        for batch in batches:
            for index in batch.column(0).to_pylist():
                yield index, _run_item(function, items[index])

    return _pairs_to_arrow(pairs, directory, iter(()))


def _pairs_to_arrow(
    function: Callable[[Iterator[pa.RecordBatch]], Iterable[tuple[int, Any]]],
    directory: str,
    batches: Iterator[pa.RecordBatch],
) -> Iterator[pa.RecordBatch]:
    import pyarrow as pa

    with in_directory(directory):
        results = list(function(batches))
    for index, result in results:
        yield pa.RecordBatch.from_arrays(
            [pa.array([index], pa.int64()), pa.array([pickle.dumps(result)], pa.binary())], names=["index", "result"]
        )
