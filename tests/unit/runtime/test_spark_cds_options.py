"""Which JVM options a session gets from the class-data-sharing archive (`runtime/spark/cds.py`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reconciler.runtime.spark import cds as spark_cds


def test_the_archive_is_mapped_only_when_built_and_not_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(spark_cds.SWITCH, raising=False)
    assert spark_cds.driver_options(tmp_path) == ""  # none built: the JVM starts as before
    path = spark_cds.archive_path(tmp_path)
    path.write_bytes(b"")
    assert spark_cds.driver_options(tmp_path) == f"-XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off"
    monkeypatch.setenv(spark_cds.SWITCH, "off")
    assert spark_cds.driver_options(tmp_path) == ""


def test_another_java_or_pyspark_gets_another_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An archive fits one JVM and one class path: a JDK or PySpark update must not meet an old one."""
    first = spark_cds.archive_path(tmp_path)
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("#!/bin/sh\n")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    other_java = spark_cds.archive_path(tmp_path)
    monkeypatch.setattr(spark_cds, "_pyspark_version", lambda: "0.0.0")
    other_pyspark = spark_cds.archive_path(tmp_path)
    assert len({first, other_java, other_pyspark}) == 3
    assert all(p.parent == tmp_path and p.suffix == ".jsa" for p in (first, other_java, other_pyspark))


def test_a_reinstalled_spark_jar_gets_another_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JVM refuses an archive whose class-path jars changed size or modification time (a new
    virtualenv, a reinstall): such a class path must ask for, and build, an archive of its own."""
    jar = tmp_path / "spark" / "jars" / "spark-core.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"classes")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path / "spark"))
    before = spark_cds.archive_path(tmp_path)
    assert spark_cds.archive_path(tmp_path) == before  # stable while nothing changes
    os.utime(jar, ns=(1, 1))
    assert spark_cds.archive_path(tmp_path) != before


def test_a_build_keeps_the_two_newest_archives(tmp_path: Path) -> None:
    from reconciler.runtime.spark.cds_build import _prune

    for age, name in enumerate(["spark-new.jsa", "spark-older.jsa", "spark-oldest.jsa"]):
        (tmp_path / name).write_bytes(b"")
        os.utime(tmp_path / name, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    (tmp_path / "spark-x.1.partial").write_bytes(b"")  # another build's, still being written
    (tmp_path / "spark-y.2.partial").write_bytes(b"")  # a dump its builder gave up on long ago
    os.utime(tmp_path / "spark-y.2.partial", ns=(10**18 - 3600 * 10**9, 10**18 - 3600 * 10**9))
    _prune(tmp_path, now=10**9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["spark-new.jsa", "spark-older.jsa", "spark-x.1.partial"]


def test_the_directory_can_be_named_for_an_image_that_builds_the_archive_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An image builds its archive outside the cache (a container's cache is often a fresh
    volume); sessions and the builder both look there (the Dockerfile sets it)."""
    monkeypatch.delenv(spark_cds.DIRECTORY, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert spark_cds.archive_path().parent == tmp_path / "cache" / "connect-reconciler" / "spark-cds"
    monkeypatch.setenv(spark_cds.DIRECTORY, str(tmp_path / "image"))
    assert spark_cds.archive_path().parent == tmp_path / "image"


def test_the_launchers_archive_reaches_its_jvm_through_spark_launcher_opts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """spark-submit's launcher JVM gets its own archive after the user's options, once, and only
    when it was built and the archives are not turned off."""
    monkeypatch.delenv(spark_cds.SWITCH, raising=False)
    assert spark_cds.launcher_environment({}, tmp_path) == {}  # none built
    launcher = spark_cds.archive_path(tmp_path, jvm=spark_cds.LAUNCHER)
    assert launcher.name.startswith("launcher-") and launcher != spark_cds.archive_path(tmp_path)
    launcher.write_bytes(b"")
    ours = f"-XX:SharedArchiveFile={launcher} -Xlog:cds=off -Xlog:cds+dynamic=off"
    assert spark_cds.launcher_environment({}, tmp_path) == {"SPARK_LAUNCHER_OPTS": ours}
    user = {"SPARK_LAUNCHER_OPTS": "-Xmx256m"}
    assert spark_cds.launcher_environment(user, tmp_path) == {"SPARK_LAUNCHER_OPTS": f"-Xmx256m {ours}"}
    assert spark_cds.launcher_environment({"SPARK_LAUNCHER_OPTS": f"-Xmx256m {ours}"}, tmp_path) == {}  # set already
    monkeypatch.setenv(spark_cds.SWITCH, "off")
    assert spark_cds.launcher_environment(user, tmp_path) == {}


def test_a_build_keeps_the_two_newest_launcher_archives_too(tmp_path: Path) -> None:
    from reconciler.runtime.spark.cds_build import _prune

    for age, name in enumerate(["launcher-new.jsa", "launcher-older.jsa", "launcher-oldest.jsa", "spark-new.jsa"]):
        (tmp_path / name).write_bytes(b"")
        os.utime(tmp_path / name, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))
    (tmp_path / "launcher-y.2.partial").write_bytes(b"")
    os.utime(tmp_path / "launcher-y.2.partial", ns=(10**18 - 3600 * 10**9, 10**18 - 3600 * 10**9))
    _prune(tmp_path, now=10**9)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["launcher-new.jsa", "launcher-older.jsa", "spark-new.jsa"]
