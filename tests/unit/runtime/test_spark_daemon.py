"""Which zips a local session's Python daemon moves after the installed PySpark, and what it
imports before it forks its workers (`runtime/spark/daemon.py`)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from reconciler.runtime.spark.daemon import PRELOADED, installed_first


def installed_pyspark(root: Path) -> tuple[Path, Path, Path]:
    """A site-packages directory with a PySpark package carrying its zips, as pip installs it."""
    site = root / "site-packages"
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    (site / "pyspark" / "__init__.py").write_text("")
    pyspark_zip, py4j_zip = lib / "pyspark.zip", lib / f"py4j-{version('py4j')}-src.zip"
    pyspark_zip.write_bytes(b"")
    py4j_zip.write_bytes(b"")
    return site, pyspark_zip, py4j_zip


def test_the_installed_pysparks_own_zips_go_last_in_their_order(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = installed_pyspark(tmp_path)
    path = [str(pyspark_zip), str(py4j_zip), "/work/app", str(site)]
    assert installed_first(path) == ["/work/app", str(site), str(pyspark_zip), str(py4j_zip)]


def test_another_sparks_zips_and_another_py4j_stay_first(tmp_path: Path) -> None:
    site, pyspark_zip, _ = installed_pyspark(tmp_path)
    other = tmp_path / "spark-3.5" / "python" / "lib"
    other.mkdir(parents=True)
    other_zip, old_py4j = other / "pyspark.zip", pyspark_zip.with_name("py4j-0.10.9.7-src.zip")
    path = [str(other_zip), str(old_py4j), str(pyspark_zip), str(site)]
    assert installed_first(path) == [str(other_zip), str(old_py4j), str(site), str(pyspark_zip)]


def test_without_an_installed_pyspark_nothing_moves(tmp_path: Path) -> None:
    site, pyspark_zip, py4j_zip = installed_pyspark(tmp_path)
    path = [str(pyspark_zip), str(py4j_zip), str(tmp_path / "elsewhere")]  # site-packages not on the path
    assert installed_first(path) == path


def test_the_preloaded_modules_start_no_thread_and_load_no_pyarrow_numpy_or_pandas() -> None:
    """The daemon forks its workers after `preload()`: a thread started by an import would not be
    in the child (PySpark imports its worker after the fork for that reason), so every preloaded
    module, with what it imports, must start none; pyarrow, numpy and pandas do."""
    script = (
        "import os, sys\n"
        "from reconciler.runtime.spark.daemon import preload\n"
        "preload()\n"
        f"missing = [m for m in {PRELOADED!r} if m not in sys.modules]\n"
        "heavy = [m for m in ('pyarrow', 'numpy', 'pandas') if m in sys.modules]\n"
        "print(len(os.listdir('/proc/self/task')), missing, heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.split(None, 1) == ["1", "[] []\n"], done.stdout + done.stderr
