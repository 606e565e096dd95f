"""Named crash points for the crash tests: SIGKILL the run exactly at a chosen step.

`hit("sink.after_files")` does nothing unless the environment variable RECONCILER_FAILPOINTS
(comma-separated names) names that point. Then it SIGKILLs the driver process (its pid is in
RECONCILER_DRIVER_PID, set by the driver when it starts Spark, inherited by the JVM and the
Python workers) and then the calling process: the closest thing to pulling the plug, with no
`finally`, no flush and no atexit handler running anywhere.

With RECONCILER_FAILPOINT_PAUSE_DIR set, an armed point pauses instead, once: the first
process to reach it writes `<dir>/<name>.paused` (its pid and its ancestors' pids, so a test
can tell which Spark worker runs it) and sleeps until killed or PAUSE_S passed; later hits,
such as the retry of the task on another executor, go on. The executor-loss test kills the
paused task's Spark worker this way.

Points placed by the Spark runtime (the worker adds its own in the tick):
- `sink.mid_write`       a sink partition wrote its first batch (with a small `flush.records`,
                         its first file) and has more to read;
- `sink.after_files`     a sink partition's `pre_commit(closing=True)` returned (its files are
                         renamed into place), the group offsets are not committed yet;
- `source.before_commit` a source task produced its records and offsets, transaction open;
- `source.after_commit`  the transaction is committed, the driver has recorded nothing yet.

`reconciler apply` has `apply.after_record.<n>` (`reconciler.kafka.apply`): its first n records
are delivered inside the open transaction, then it dies — a Connect worker reading uncommitted
records has seen them, readers of committed records never will.
"""

from __future__ import annotations

import os
import signal
import time

ENV_POINTS = "RECONCILER_FAILPOINTS"
ENV_DRIVER_PID = "RECONCILER_DRIVER_PID"
ENV_PAUSE_DIR = "RECONCILER_FAILPOINT_PAUSE_DIR"
PAUSE_S = 120.0

SINK_MID_WRITE = "sink.mid_write"
SINK_AFTER_FILES = "sink.after_files"
SOURCE_BEFORE_COMMIT = "source.before_commit"
SOURCE_AFTER_COMMIT = "source.after_commit"


def armed(name: str) -> bool:
    """Whether RECONCILER_FAILPOINTS names `name` (read each time: tests set it per process)."""
    points = os.environ.get(ENV_POINTS, "")
    return bool(points) and name in {p.strip() for p in points.split(",")}


def hit(name: str) -> None:
    """SIGKILL the driver, then this process, when the point `name` is armed."""
    if not armed(name):
        return
    pause_dir = os.environ.get(ENV_PAUSE_DIR)
    if pause_dir:
        _pause_once(pause_dir, name)
        return
    driver = os.environ.get(ENV_DRIVER_PID, "")
    if driver.isdigit() and int(driver) != os.getpid():
        try:
            os.kill(int(driver), signal.SIGKILL)
        except ProcessLookupError:  # already gone (another partition hit the point first)
            pass
    os.kill(os.getpid(), signal.SIGKILL)


def mark_driver() -> None:
    """Record this process as the driver, for processes it starts from now on."""
    os.environ[ENV_DRIVER_PID] = str(os.getpid())


def _pause_once(directory: str, name: str) -> None:
    try:
        fd = os.open(os.path.join(directory, f"{name}.paused"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return  # somebody paused here already: this is a retry, go on
    with os.fdopen(fd, "w") as marker:
        marker.write(" ".join(map(str, _ancestors())) + "\n")
    deadline = time.monotonic() + PAUSE_S
    while time.monotonic() < deadline:
        time.sleep(0.2)


def _ancestors() -> list[int]:
    """This process and its ancestors' pids, nearest first (Linux /proc)."""
    pids: list[int] = []
    pid = os.getpid()
    while pid > 1 and len(pids) < 16:
        pids.append(pid)
        try:
            with open(f"/proc/{pid}/stat") as stat:
                pid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return pids
