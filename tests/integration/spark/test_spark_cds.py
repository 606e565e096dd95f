"""The driver JVM maps Spark's classes from the class-data-sharing archive (`runtime/spark/cds.py`):
checked in the JVM's own class-loading log, in a session started as `reconciler run` starts one;
and spark-submit's launcher JVM maps its own archive, checked in its log likewise."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from run_support import child_env

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

CHILD = textwrap.dedent(
    """
    import sys
    from reconciler.runtime.spark.session import session_conf, start_session
    options = session_conf("local[1]", {})["spark.driver.extraJavaOptions"]
    session = start_session("local[1]", {"spark.driver.extraJavaOptions": options + " -Xlog:class+load=info:file=" + sys.argv[1]})
    process = session.sparkContext._gateway.proc
    session.range(2).count()
    session.stop()
    process.stdin.close()
    process.wait(120)
    """
)


def test_a_session_maps_sparks_classes_from_the_archive(spark_session: SparkSession, tmp_path: Path) -> None:
    from reconciler.runtime.spark.cds import LAUNCHER, archive_path

    assert archive_path().is_file() and archive_path(jvm=LAUNCHER).is_file()  # built by the `spark_session` fixture
    log, launcher_log = tmp_path / "class-load.log", tmp_path / "launcher-class-load.log"
    # The user's launcher options come first; the session adds the archive's after them.
    env = child_env(SPARK_LAUNCHER_OPTS=f"-Xlog:class+load=info:file={launcher_log}")
    done = subprocess.run([sys.executable, "-c", CHILD, str(log)], env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = log.read_text().splitlines()
    archived = [line for line in lines if "source: shared objects file (top)" in line]
    spark = [line for line in archived if " org.apache.spark." in line]
    # The dynamic archive ("top", over the JDK's own base archive) serves Spark's classes.
    assert len(spark) > 1000, f"{len(archived)} classes from the archive, {len(spark)} of Spark's, of {len(lines)}"
    launcher = [line for line in launcher_log.read_text().splitlines() if " org.apache.spark.launcher." in line]
    mapped = [line for line in launcher if "source: shared objects file (top)" in line]
    assert launcher and len(mapped) == len(launcher), f"{len(mapped)} of the launcher's {len(launcher)} classes mapped"
