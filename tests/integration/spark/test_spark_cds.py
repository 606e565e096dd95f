"""The driver JVM maps Spark's classes from the class-data-sharing archive (`runtime/spark/cds.py`):
checked in the JVM's own class-loading log, in a session started as `reconciler run` starts one."""

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
    from reconciler.runtime.spark.cds import archive_path

    assert archive_path().is_file()  # built by the `spark_session` fixture
    log = tmp_path / "class-load.log"
    done = subprocess.run([sys.executable, "-c", CHILD, str(log)], env=child_env(), capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = log.read_text().splitlines()
    archived = [line for line in lines if "source: shared objects file (top)" in line]
    spark = [line for line in archived if " org.apache.spark." in line]
    # The dynamic archive ("top", over the JDK's own base archive) serves Spark's classes.
    assert len(spark) > 1000, f"{len(archived)} classes from the archive, {len(spark)} of Spark's, of {len(lines)}"
