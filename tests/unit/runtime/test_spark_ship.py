"""What is shipped to Spark's executors (`runtime.spark.ship`): plugins outside installed
distributions, and the project's own zip with its entry points."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from reconciler.runtime.spark.ship import plugin_files, project_zip


def test_plugins_outside_installed_distributions_are_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "plainmod.py").write_text("X = 1\n")
    (tmp_path / "pkgmod").mkdir()
    (tmp_path / "pkgmod" / "__init__.py").write_text("")
    (tmp_path / "pkgmod" / "sinks.py").write_text("Y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugin_files("plainmod:Sink") == [tmp_path / "plainmod.py"]
    [archive] = plugin_files("pkgmod.sinks:Sink")
    assert sorted(zipfile.ZipFile(archive).namelist()) == ["pkgmod/__init__.py", "pkgmod/sinks.py"]
    assert plugin_files("parquet-sink") == [] and plugin_files("reconciler.connectors.datagen:X") == []
    assert plugin_files("yaml:Loader") == []  # an installed distribution: the environment's


def test_the_shipped_project_zip_carries_the_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    names = zipfile.ZipFile(project_zip()).namelist()
    assert "reconciler/runtime/spark/ship.py" in names and not any("__pycache__" in n for n in names)
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)
