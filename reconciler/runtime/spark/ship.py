"""What the executors need, shipped by the driver, and checked before the first batch.

On a cluster or a Spark Connect server the executors' Python has only what its environment
holds (docs/runtime.md#running-on-a-cluster):

- **This project's code** is shipped by the driver itself: the `reconciler` package as a zip
  (`addPyFile`, or `addArtifacts(pyfile=True)` on Spark Connect), with the distribution's
  metadata inside so its entry points (the built-in connectors) resolve there too.
- **Plugins named `module:Class`** whose module is not an installed distribution are shipped
  the same way: a plain module as its `.py` file, a package as a zip of its directory.
- **Third-party dependencies** (confluent-kafka, pyarrow, numpy, pydantic, msgspec) are the
  environment's: PySpark's documented route is a packed environment in `spark.archives`.

`preflight` runs a job that imports those modules in every executor it reaches and raises one
error listing what each executor lacks, with a hint, instead of a task's raw traceback.
`check_connectors` does the same per connector class: a class that does not load on the
executors fails that connector's tasks with a trace naming the module, and no other.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import os
import re
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import reconciler
from reconciler.errors import ReconcilerError
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.jobs import PartitionFailed, run_partitions
from reconciler.runtime.spark.probe import ExecutorReport, load_classes, probe
from reconciler.toolchain.caches import cache_root

DISTRIBUTION = "connect-reconciler"
# What a task imports in the executors, besides the project itself and PySpark (which Spark
# puts on the workers' path).
TASK_MODULES = ("reconciler", "confluent_kafka", "pyarrow", "numpy", "pydantic", "msgspec")
PACKED_ENV_HINT = (
    "the executors' Python lacks these modules: ship a packed environment "
    "(venv-pack or conda-pack; README, 'Running on a cluster'): --spark-conf "
    "spark.archives=env.tar.gz#environment --spark-conf spark.pyspark.python=./environment/bin/python, "
    "or point spark.pyspark.python at a Python on every worker that has them"
)


class ExecutorsNotReady(ReconcilerError):
    """The executors cannot import what tasks need."""


# --- shipping -------------------------------------------------------------------------------


def ship_dir() -> Path:
    path = cache_root() / "ship"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _sources(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")


def zip_directory(root: Path, extra: Iterable[tuple[str, bytes]] = ()) -> Path:
    """`root` (a package directory) as a zip with `root.name/…` at its top, named by content."""
    files = _sources(root)
    extras = list(extra)
    digest = hashlib.blake2b(digest_size=8)
    for path in files:
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    for name, data in extras:
        digest.update(name.encode() + b"\0" + data)
    target = ship_dir() / f"{root.name}-{digest.hexdigest()}.zip"
    if not target.exists():
        partial = target.with_suffix(f".{os.getpid()}.partial")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as archive:
            for path in files:
                archive.write(path, f"{root.name}/{path.relative_to(root)}")
            for name, data in extras:
                archive.writestr(name, data)
        os.replace(partial, target)  # atomic: a concurrent driver reads all or nothing
    return target


def project_zip() -> Path:
    """The `reconciler` package, with its distribution metadata (entry points) when installed."""
    extra: list[tuple[str, bytes]] = []
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
        info = f"{DISTRIBUTION.replace('-', '_')}-{dist.version}.dist-info"
        # A metadata file of our own: an editable install may have none to copy, and a
        # distribution without a name breaks readers of every distribution (pydantic's plugins).
        metadata = f"Metadata-Version: 2.1\nName: {DISTRIBUTION}\nVersion: {dist.version}\n"
        extra.append((f"{info}/METADATA", metadata.encode()))
        entry_points = dist.read_text("entry_points.txt")
        if entry_points is not None:
            extra.append((f"{info}/entry_points.txt", entry_points.encode()))
    except importlib.metadata.PackageNotFoundError:
        pass  # run from a source tree: the built-ins are still found by module:Class
    return zip_directory(Path(reconciler.__file__).resolve().parent, extra)


def _installed(path: Path) -> bool:
    return any(part in ("site-packages", "dist-packages") for part in path.parts)


def plugin_files(connector_class: str) -> list[Path]:
    """What to ship for a `module:Class` connector: its top-level module's file or package zip.

    Nothing for registered names, for this project's own modules, or for a module installed
    as a distribution (site-packages): that belongs in the executors' environment.
    """
    name = connector_class.strip()
    if ":" not in name:
        return []
    top = name.partition(":")[0].split(".")[0]
    if top == "reconciler":
        return []
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return []
    if spec is None or spec.origin is None:
        return []
    origin = Path(spec.origin).resolve()
    if _installed(origin):
        return []
    if spec.submodule_search_locations:
        return [zip_directory(origin.parent)]
    return [origin] if origin.suffix == ".py" else []


def ship(spark: Spark, paths: Sequence[Path]) -> None:
    """Make `paths` (zips or .py files) importable by the Python workers."""
    for path in paths:
        if spark.connect:
            spark.session().addArtifacts(str(path), pyfile=True)
        else:
            spark.context.addPyFile(str(path))


# --- checks ---------------------------------------------------------------------------------


def _reports(spark: Spark, function: object, argument: Sequence[str], description: str) -> list[ExecutorReport]:
    """`function(argument)` in enough partitions to reach every executor (two per core)."""
    cores = 2 if spark.connect else max(1, spark.context.defaultParallelism)
    try:
        results = run_partitions(spark, [argument] * (2 * cores), function,  # type: ignore[arg-type]
                                 pool="default", description=description)
    except Exception as exc:  # the job itself failed: its Python could not even start the check
        raise ExecutorsNotReady(
            f"the {description} job failed on the Spark executors: {_python_error(exc)}", hint=PACKED_ENV_HINT
        ) from exc
    failed = [r.trace for r in results if isinstance(r, PartitionFailed)]
    if failed:
        raise ExecutorsNotReady(f"the {description} job failed in an executor:\n{failed[0]}")
    return [r for r in results if isinstance(r, ExecutorReport)]


def preflight(spark: Spark, modules: Sequence[str] = TASK_MODULES) -> None:
    """Import what tasks use in the executors; one error naming each executor's missing modules."""
    reports = _reports(spark, probe, list(modules), "preflight")
    lacking = {r.executor: r for r in reports if r.missing}
    if lacking:
        lines = [
            f"  executor {executor} (python {report.python}): "
            + "; ".join(f"{module}: {error}" for module, error in sorted(report.missing.items()))
            for executor, report in sorted(lacking.items())
        ]
        raise ExecutorsNotReady(
            f"{len(lacking)} Spark executor(s) cannot import what tasks need:\n" + "\n".join(lines),
            hint=PACKED_ENV_HINT,
        )


def check_connectors(spark: Spark, classes: Sequence[str]) -> dict[str, str]:
    """Connector classes that do not load in some executor, with a trace naming the executor."""
    if not classes:
        return {}
    failures: dict[str, str] = {}
    for report in _reports(spark, load_classes, list(classes), "connector classes check"):
        for name, trace in report.missing.items():
            failures.setdefault(
                name,
                f"connector class {name!r} cannot be loaded on Spark executor {report.executor} "
                f"(python {report.python}); ship the module or install it in the executors' "
                f"environment:\n{trace}",
            )
    return failures


def _python_error(exc: Exception) -> str:
    """The Python exception a failed job reports (its last `Error:` line), not the JVM's stack."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    python = [line for line in lines if re.match(r"^[A-Za-z_.]*(Error|Exception): ", line)]
    return (python or lines or [type(exc).__name__])[-1][:500]
