"""Named crash points for the crash tests: SIGKILL a process exactly at a chosen step.

Every point is a member of `Failpoint`; the code that reaches one calls `hit(Failpoint.X)`,
which does nothing unless RECONCILER_FAILPOINTS names it. Then it kills the driver
(RECONCILER_DRIVER_PID) and the calling process, or, with RECONCILER_FAILPOINT_PAUSE_DIR, pauses
the first process to reach it. Where the points are and what each proves:
docs/runtime.md#crash-points.
"""

from __future__ import annotations

import enum
import os
import signal
import time

ENV_POINTS = "RECONCILER_FAILPOINTS"
ENV_DRIVER_PID = "RECONCILER_DRIVER_PID"
ENV_PAUSE_DIR = "RECONCILER_FAILPOINT_PAUSE_DIR"
PAUSE_S = 120.0


class Failpoint(enum.StrEnum):
    """Every crash point, by the name RECONCILER_FAILPOINTS arms it with."""

    # A sink partition wrote its first batch (with a small `flush.records`, its first file) and
    # has more to read.
    SINK_MID_WRITE = "sink.mid_write"
    # A sink partition's `pre_commit(closing=True)` returned (its files are renamed into place),
    # the group offsets are not committed yet.
    SINK_AFTER_FILES = "sink.after_files"
    # A table sink's driver committed the batch's files and offsets to the table
    # (`TableSinkConnector.commit`); the group offsets are not committed yet.
    SINK_AFTER_TABLE_COMMIT = "sink.after_table_commit"
    # A sink partition's dead letters and their marker are committed (one transaction), the
    # data they were skipped from is not durable yet (parquet-sink: before its file).
    SINK_AFTER_DEAD_LETTERS = "sink.after_dead_letters"
    # iceberg-sink: a task wrote the first of several data files of a flush (one per table
    # partition, or per target size), not the next; nothing references them yet.
    ICEBERG_MID_FILES = "iceberg.mid_files"
    # jdbc-sink: a partition's rows are in the table, its offset not yet; the transaction is open.
    JDBC_AFTER_ROWS = "jdbc.after_rows"
    # jdbc-sink: rows and offset written in the transaction; COMMIT not sent yet.
    JDBC_BEFORE_COMMIT = "jdbc.before_commit"
    # jdbc-sink: rows and offset committed in the database; the task has not returned them.
    JDBC_AFTER_COMMIT = "jdbc.after_commit"
    # A file being moved aside on an object store (a rewind) was copied, not yet deleted.
    STORAGE_AFTER_COPY = "storage.after_copy"
    SOURCE_BEFORE_COMMIT = "source.before_commit"  # records and offsets produced, transaction open
    SOURCE_AFTER_COMMIT = "source.after_commit"  # committed, the driver has recorded nothing yet
    WORKER_AFTER_RESTARTING = "worker.after_restarting"  # RESTARTING statuses committed
    WORKER_AFTER_TASK_COMMIT = "worker.after_task_commit"  # task configs committed, batch not run
    WORKER_BEFORE_STATUS = "worker.before_status"  # batch done, statuses and restart marks not written
    OFFSETS_AFTER_STOP = "offsets.after_stop"
    OFFSETS_AFTER_SNAPSHOT = "offsets.after_snapshot"
    OFFSETS_AFTER_HOOK = "offsets.after_hook"  # the hook ran, offsets not changed yet
    OFFSETS_AFTER_ALTER = "offsets.after_alter"  # sink: group changed, the step not recorded yet
    OFFSETS_AFTER_ALTER_RECORDED = "offsets.after_alter_recorded"
    OFFSETS_AFTER_RETURN = "offsets.after_return"  # returned and recorded as applied
    APPLY_AFTER_RECORD = "apply.after_record"  # armed as `apply.after_record.<n>`, see `name_for`

    def name_for(self, count: int | None = None) -> str:
        """The armed name: the point's own, or `<point>.<count>` for a counted point."""
        return self.value if count is None else f"{self.value}.{count}"


# The Spark tasks' points under their short names (`failpoints.SINK_AFTER_FILES`).
SINK_MID_WRITE = Failpoint.SINK_MID_WRITE
SINK_AFTER_FILES = Failpoint.SINK_AFTER_FILES
SINK_AFTER_DEAD_LETTERS = Failpoint.SINK_AFTER_DEAD_LETTERS
SOURCE_BEFORE_COMMIT = Failpoint.SOURCE_BEFORE_COMMIT
JDBC_AFTER_ROWS = Failpoint.JDBC_AFTER_ROWS
JDBC_BEFORE_COMMIT = Failpoint.JDBC_BEFORE_COMMIT
JDBC_AFTER_COMMIT = Failpoint.JDBC_AFTER_COMMIT
SOURCE_AFTER_COMMIT = Failpoint.SOURCE_AFTER_COMMIT


def any_armed() -> bool:
    """Whether RECONCILER_FAILPOINTS names any point (callers skip per-record work otherwise)."""
    return bool(os.environ.get(ENV_POINTS))


def armed(point: Failpoint, count: int | None = None) -> bool:
    """Whether RECONCILER_FAILPOINTS names the point (read each time: tests set it per process)."""
    points = os.environ.get(ENV_POINTS, "")
    return bool(points) and point.name_for(count) in {p.strip() for p in points.split(",")}


def hit(point: Failpoint, count: int | None = None) -> None:
    """SIGKILL the driver, then this process, when the point is armed."""
    if not armed(point, count):
        return
    name = point.name_for(count)
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
    resume = os.path.join(directory, f"{name}.resume")
    while time.monotonic() < deadline and not os.path.exists(resume):
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
