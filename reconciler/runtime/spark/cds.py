"""A class-data-sharing archive for the driver's JVM: Spark's classes mapped from one file at
start instead of read, parsed and verified one by one by every session.

Measured on the 2-core reference machine, a local session's start: 6.0–6.5 s without, 2.7–3.7 s
with (`reconciler run --once` pays it every run; the fixed cost beside a batch is mostly this).
The archive is a JDK dynamic CDS archive (JEP 350): `cds_build` starts a throwaway
session whose JVM writes the classes it loaded when it exits (~30 s, once per machine and per
PySpark and Java installation, kept in `~/.cache/connect-reconciler/spark-cds/`, ~140 MB, the
two newest kept; `RECONCILER_SPARK_CDS_DIR` names another directory, as the Dockerfile does).
Sessions use it when it is there (`driver_options`); when it is absent, or does not fit the JVM
or class path, the JVM starts as before, its CDS warnings silenced. `RECONCILER_SPARK_CDS=off`
turns it off. Pure but for a look at the file system: no JVM is started here.

A second, small archive (~1 MB) serves the JVM before it: `spark-submit` runs Spark's launcher
(`org.apache.spark.launcher.Main`, on the same class path) only to print the driver's command
line, and that JVM loads its classes from 250 jars. Measured: 0.37–0.55 CPU s and 1.2–1.8 s wall
without its archive, 0.09–0.12 CPU s and 0.4–0.6 s with it (load average ~20). It reaches that
JVM through Spark's own `SPARK_LAUNCHER_OPTS` (`launcher_environment`).

    python -m reconciler.runtime.spark.cds_build      # build it now (the test suite does)
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Mapping
from importlib import metadata, util
from pathlib import Path

from reconciler.toolchain.caches import cache_root

SWITCH = "RECONCILER_SPARK_CDS"
# Where the archives live instead of the cache, for an image that builds one in: a container's
# cache is often a fresh volume (examples/kubernetes/ mounts one over ~/.cache).
DIRECTORY = "RECONCILER_SPARK_CDS_DIR"
# Quiet when the archive does not fit (another class path, a JDK update): the JVM goes on without.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


DRIVER = "spark"  # the archives' name prefixes: the driver's JVM, the launcher's before it
LAUNCHER = "launcher"


def archive_path(cache: Path | None = None, *, jvm: str = DRIVER) -> Path:
    """Where the archive of this Java and these Spark jars lives: its name says which ones. The
    JVM maps an archive only with the class path it was written with, each jar at the same path
    with the same size and modification time (a reinstalled PySpark, a new virtualenv, is
    another class path), so all of those are in the name."""
    java = _java()
    parts = [_pyspark_version(), *(_file_identity(path) for path in [java, *_spark_jars()] if path is not None)]
    base = cache or Path(os.environ.get(DIRECTORY) or cache_root() / "spark-cds")
    return base / f"{jvm}-{hashlib.sha256('|'.join(parts).encode()).hexdigest()[:16]}.jsa"


def driver_options(cache: Path | None = None, *, jvm: str = DRIVER) -> str:
    """The JVM options that map the archive, or nothing when there is none (or it is off)."""
    if os.environ.get(SWITCH, "").lower() in ("off", "0", "false"):
        return ""
    path = archive_path(cache, jvm=jvm)
    return f"-XX:SharedArchiveFile={path} {QUIET}" if path.is_file() else ""


LAUNCHER_OPTS = "SPARK_LAUNCHER_OPTS"  # read by Spark's bin/spark-class for the launcher's JVM


def launcher_environment(environ: Mapping[str, str], cache: Path | None = None) -> dict[str, str]:
    """What to set in the environment `spark-submit` starts with so that its launcher's JVM maps
    its archive: `SPARK_LAUNCHER_OPTS` with the archive's options after the user's own (which
    may name an archive of their own: the JVM takes the last). Nothing when there is no archive,
    or when the user's value already ends with these options (set by an earlier session)."""
    options = driver_options(cache, jvm=LAUNCHER)
    user = environ.get(LAUNCHER_OPTS, "")
    if not options or user.endswith(options):
        return {}
    return {LAUNCHER_OPTS: f"{user} {options}".strip()}


def _java() -> Path | None:
    """The `java` PySpark's launcher runs: $JAVA_HOME/bin/java, else the first on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _spark_jars() -> list[Path]:
    """The jars of the driver's class path: $SPARK_HOME/jars, else PySpark's own (found without
    importing it)."""
    home = os.environ.get("SPARK_HOME")
    if home:
        directory = Path(home) / "jars"
    else:
        spec = util.find_spec("pyspark")
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        directory = Path(locations[0]) / "jars" if locations else Path()
    return sorted(directory.glob("*.jar")) if directory != Path() else []


def _file_identity(path: Path) -> str:
    stat = path.stat()
    return f"{path}:{stat.st_size}:{stat.st_mtime_ns}"


def _pyspark_version() -> str:
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:  # no Spark here: no session will map the archive
        return ""
