"""Named crash points for the crash tests: SIGKILL the run exactly at a chosen step.

`hit("sink.after_files")` does nothing unless the environment variable RECONCILER_FAILPOINTS
(comma-separated names) names that point. Then it SIGKILLs the driver process (its pid is in
RECONCILER_DRIVER_PID, set by the driver when it starts Spark, inherited by the JVM and the
Python workers) and then the calling process: the closest thing to pulling the plug, with no
`finally`, no flush and no atexit handler running anywhere.

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

ENV_POINTS = "RECONCILER_FAILPOINTS"
ENV_DRIVER_PID = "RECONCILER_DRIVER_PID"

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
