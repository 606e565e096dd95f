"""What can be checked of the container image without a Docker engine (none runs on CI here).

The image's contract: `reconciler watch /manifests` as the entrypoint, the project's own
deployment manifests baked in and valid, a JRE for Spark, the package installed with the
Spark extra, and a non-root user.
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from reconciler.manifests import load_manifests

ROOT = Path(__file__).resolve().parents[2]


def instructions() -> list[tuple[str, str]]:
    text = (ROOT / "Dockerfile").read_text()
    joined = re.sub(r"\\\n", " ", text)  # line continuations
    out = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_base_image_matches_the_supported_python() -> None:
    base = next(rest for word, rest in instructions() if word == "FROM")
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert base.startswith("python:3.11-"), base
    assert ">=3.11" in requires


def test_entrypoint_is_watch_on_the_baked_manifests() -> None:
    found = dict(instructions())
    assert json.loads(found["ENTRYPOINT"]) == ["reconciler"]
    assert json.loads(found["CMD"]) == ["watch", "/manifests"]


def test_every_copied_source_exists_and_manifests_are_valid() -> None:
    for word, rest in instructions():
        if word == "COPY":
            *sources, _ = rest.split()
            for source in sources:
                assert (ROOT / source).exists(), f"Dockerfile copies missing {source}"
    result = load_manifests([ROOT / "manifests"])
    assert result.ok, [d.render() for d in result.diagnostics]
    assert result.connectors


def test_spark_can_run_in_the_image() -> None:
    found = instructions()
    runs = " ".join(rest for word, rest in found if word == "RUN")
    env = " ".join(rest for word, rest in found if word == "ENV")
    assert "default-jre-headless" in runs  # Java 17 on bookworm, for Spark
    assert "JAVA_HOME=/usr/lib/jvm/default-java" in env
    assert "PYSPARK_PYTHON=" in env  # workers must use the interpreter that has our packages
    assert re.search(r'pip install [^&]*"\.\[spark\]"', runs)


def test_runs_as_a_non_root_user() -> None:
    users = [rest for word, rest in instructions() if word == "USER"]
    assert users and users[-1] not in ("root", "0")
