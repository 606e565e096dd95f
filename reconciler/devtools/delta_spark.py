"""Delta Lake's own Spark reader for the tests: delta-spark's jars, resolved from Maven Central by
the pinned pom beside this module (`jvm/delta-spark/pom.xml`, as the Kafka data source's are), and
a table read by Spark in a process of its own (a session's jars are fixed when its JVM starts,
and the tests' shared session has only the Kafka data source's). One partition for the log's
state reconstruction: Delta's default 50 take minutes on a loaded two-core machine. The JVM as
the runtime's own (C1 JIT only, the class-data-sharing archive) and no generated code: a JVM
this short-lived spends its time compiling. Measured, two reads of a two-commit table at load
3-6: 37-50 s with the JVM's defaults, 13-17 s so.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from reconciler.runtime.spark.cds import driver_options, launcher_environment
from reconciler.toolchain.maven import resolve_classpath

POM = Path(__file__).resolve().parent / "jvm" / "delta-spark" / "pom.xml"
READ = """
import json, sys
from pyspark.sql import SparkSession
jars, tables, java = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
spark = (SparkSession.builder.master("local[1]").config("spark.jars", jars)
         .config("spark.driver.extraJavaOptions", java).config("spark.sql.codegen.wholeStage", "false")
         .config("spark.sql.codegen.factoryMode", "NO_CODEGEN")
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.sql.shuffle.partitions", "1").config("spark.databricks.delta.snapshotPartitions", "1")
         .config("spark.driver.memory", "768m").config("spark.ui.enabled", "false").getOrCreate())
for uri, columns in tables:
    rows = spark.read.format("delta").load(uri).select(*columns).collect()
    print("ROWS " + json.dumps([[None if v is None else str(v) for v in row] for row in rows]), flush=True)
spark.stop()
"""


def delta_spark_jars() -> tuple[Path, ...]:
    """delta-spark's runtime jars, minus those the installed PySpark ships."""
    import pyspark

    jars = resolve_classpath(POM, "Delta Lake's Spark reader (delta-spark)", label="delta-spark", scope="runtime")
    shipped = {_artifact(jar) for jar in (Path(pyspark.__file__).resolve().parent / "jars").glob("*.jar")}
    return tuple(jar for jar in jars if _artifact(jar) not in shipped)


def _artifact(jar: Path) -> str:
    return re.sub(r"-\d[^-]*(-[^-]+)?\.jar$", "", jar.name) if re.search(r"-\d", jar.name) else jar.stem


def spark_read_tables(tables: Sequence[tuple[str, Sequence[str]]],
                      env: dict[str, str] | None = None) -> list[list[list[str | None]]]:
    """Each table's rows (its `columns`, as text), read in one child process (one JVM start)."""
    jars = ",".join(str(jar) for jar in delta_spark_jars())
    java = f"-XX:TieredStopAtLevel=1 {driver_options()}"
    environ = dict(os.environ if env is None else env)
    environ.update(launcher_environment(environ))
    asked = json.dumps([[uri, list(columns)] for uri, columns in tables])
    done = subprocess.run([sys.executable, "-c", READ, jars, asked, java],
                          capture_output=True, text=True, timeout=600, env=environ, check=False)
    found = [line for line in done.stdout.splitlines() if line.startswith("ROWS ")]
    if done.returncode != 0 or len(found) != len(tables):
        raise RuntimeError(f"Spark could not read the Delta tables at {[uri for uri, _ in tables]}:\n"
                           f"{done.stderr[-3000:]}")
    rows: list[list[list[str | None]]] = [json.loads(line[5:]) for line in found]
    return rows
