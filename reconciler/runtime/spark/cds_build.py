"""Builds the class-data-sharing archive `cds` maps into the driver's JVM: a child process
starts a local session like the runtime's, runs a job through a Python worker and one through
Spark SQL, and its JVM writes the classes it loaded when it exits.

    python -m reconciler.runtime.spark.cds_build      # once per machine (the test suite does)
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from reconciler.runtime.spark.cds import SWITCH, archive_path
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.session import session_conf, start_session, warm_up
from reconciler.toolchain.caches import keep_newest

LOG = logging.getLogger(__name__)
BUILD_TIMEOUT_S = 300


def build(cache: Path | None = None) -> Path | None:
    """The archive, built first when missing: a child process starts a local session that
    dumps its classes when its JVM exits, under a name of its own, renamed into place once
    whole (two builds at once leave one archive, never half of one). None when it failed."""
    path = archive_path(cache)
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f"{path.stem}.{os.getpid()}.partial")
    command = [sys.executable, "-m", "reconciler.runtime.spark.cds_build", "--dump", str(partial)]
    env = {**os.environ, SWITCH: "off"}  # the child starts without any archive
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        LOG.warning("no class-data-sharing archive for Spark's JVM: %s", "timed out" if done is None else done.stderr[-2000:])
        return None
    os.replace(partial, path)
    _prune(path.parent)
    return path


KEPT = 2  # archives kept: this one and the one before (another virtualenv on the machine, say)
# A partial archive older than this is no build's any more: a build whose child timed out or was
# killed leaves its JVM to finish the dump after the builder gave up on it (~140 MB each).
STALE_PARTIAL_S = 2 * BUILD_TIMEOUT_S


def _prune(directory: Path, *, now: float | None = None) -> None:
    """Drop all but the KEPT newest archives: each is ~140 MB, and one whose class path is gone
    (an old virtualenv, an upgraded PySpark) is never mapped again; and abandoned partial ones."""
    keep_newest(directory, "spark-*.jsa", KEPT)
    cutoff = (time.time() if now is None else now) - STALE_PARTIAL_S
    for partial in directory.glob("spark-*.partial"):
        try:
            if partial.stat().st_mtime < cutoff:
                partial.unlink()
        except OSError:  # another build renamed or removed it meanwhile
            pass


def _dump(target: Path) -> None:
    """In the child: a session like the runtime's, a job through a Python worker and one
    through Spark SQL, then the JVM stopped and waited for, so the archive is written."""
    options = session_conf("local[1]", {})["spark.driver.extraJavaOptions"]
    session = start_session("local[1]", {"spark.driver.extraJavaOptions": f"{options} -XX:ArchiveClassesAtExit={target}"})
    process = getattr(session.sparkContext._gateway, "proc", None)  # the JVM: PySpark's launch_gateway
    warm_up(Spark.over(session))
    session.range(4).selectExpr("id * 2 AS doubled").collect()
    session.stop()
    if process is not None:
        process.stdin.close()  # the gateway exits when its stdin closes; the archive is written then
        process.wait(BUILD_TIMEOUT_S)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--dump"]:
        _dump(Path(sys.argv[2]))
    else:
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        built = build()
        print(built if built is not None else "no archive: see the warning above", file=sys.stderr)
        sys.exit(0 if built is not None else 1)
