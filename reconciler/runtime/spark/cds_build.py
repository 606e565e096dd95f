"""Builds the class-data-sharing archives `cds` maps into the driver's JVM and into Spark's
launcher before it: a child process starts a local session like the runtime's, runs a job through
a Python worker and one through Spark SQL, and each JVM writes the classes it loaded when it exits
(the launcher's as soon as it has printed the driver's command line).

    python -m reconciler.runtime.spark.cds_build      # once per machine (the test suite does)
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from reconciler.runtime.spark.cds import DRIVER, LAUNCHER, LAUNCHER_OPTS, SWITCH, archive_path
from reconciler.runtime.spark.handle import Spark
from reconciler.runtime.spark.session import session_conf, start_session, warm_up
from reconciler.toolchain.caches import keep_newest

LOG = logging.getLogger(__name__)
BUILD_TIMEOUT_S = 300


def build(cache: Path | None = None) -> Path | None:
    """The driver's archive, both archives built first when either is missing: a child process
    starts a local session whose JVMs dump their classes when they exit, under names of their
    own, renamed into place once whole (two builds at once leave one archive of each, never half
    of one). None when it failed (a launcher's archive that failed alone is only logged)."""
    path, launcher = archive_path(cache, jvm=DRIVER), archive_path(cache, jvm=LAUNCHER)
    if path.is_file() and launcher.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    partial, launcher_partial = (p.with_name(f"{p.stem}.{os.getpid()}.partial") for p in (path, launcher))
    command = [sys.executable, "-m", "reconciler.runtime.spark.cds_build", "--dump", str(partial)]
    # The child starts without any archive; Spark's launcher script hands its JVM these options.
    env = {**os.environ, SWITCH: "off", LAUNCHER_OPTS: f"-XX:ArchiveClassesAtExit={launcher_partial}"}
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        done = None
    if done is None or done.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        launcher_partial.unlink(missing_ok=True)
        LOG.warning("no class-data-sharing archive for Spark's JVM: %s", "timed out" if done is None else done.stderr[-2000:])
        return None
    os.replace(partial, path)
    if launcher_partial.is_file():
        os.replace(launcher_partial, launcher)
    else:
        LOG.warning("no class-data-sharing archive for Spark's launcher: its JVM wrote none")
    _prune(path.parent)
    return path


KEPT = 2  # archives kept: this one and the one before (another virtualenv on the machine, say)
# A partial archive older than this is no build's any more: a build whose child timed out or was
# killed leaves its JVM to finish the dump after the builder gave up on it (~140 MB each).
STALE_PARTIAL_S = 2 * BUILD_TIMEOUT_S


def _prune(directory: Path, *, now: float | None = None) -> None:
    """Drop all but the KEPT newest archives: each is ~140 MB, and one whose class path is gone
    (an old virtualenv, an upgraded PySpark) is never mapped again; and abandoned partial ones."""
    cutoff = (time.time() if now is None else now) - STALE_PARTIAL_S
    for jvm in (DRIVER, LAUNCHER):
        keep_newest(directory, f"{jvm}-*.jsa", KEPT)
        for partial in directory.glob(f"{jvm}-*.partial"):
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
