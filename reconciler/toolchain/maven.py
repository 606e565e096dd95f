"""Java and Maven: jars resolved from a pinned `pom.xml` through Maven, and cached.

The runtime needs Spark's Kafka data source (`runtime.spark.data_source`, its pom in
`runtime/spark/jvm/spark-kafka/`); the development tools need Kafka's own jars (`devtools.jvm`). Maven resolves a pom's dependencies
from Maven Central into its own repository (`~/.m2`) once; the resulting classpath is cached
here, keyed by the pom's content, so later starts run no Maven at all (docs/real-components.md).

Order of attempts, so a machine without network works whenever it can:

1. the cached classpath, if every jar on it still exists;
2. `mvn --offline` (a warm `~/.m2` without our classpath file, e.g. a fresh clone);
3. `mvn` online (a cold `~/.m2`), whose failure is the one clear error a user sees.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

from reconciler.errors import ReconcilerError
from reconciler.toolchain.caches import cache_root

MIN_JAVA = 17
MAVEN_TIMEOUT_S = 600.0
INSTALL_JAVA = "install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
INSTALL_MAVEN = "install Apache Maven (Debian: apt-get install maven); it fetches Kafka's jars from Maven Central"


class JvmError(ReconcilerError):
    """Java or Maven is missing, too old, or Kafka's jars could not be resolved."""


def java_binary() -> Path:
    """`$JAVA_HOME/bin/java`, else `java` on PATH; at least Java 17 (Kafka 4's minimum)."""
    home = os.environ.get("JAVA_HOME")
    candidate = Path(home) / "bin" / "java" if home else None
    if candidate is None or not os.access(candidate, os.X_OK):
        found = shutil.which("java")
        if found is None:
            raise JvmError("Java is not installed (no JAVA_HOME, no `java` on PATH)", hint=INSTALL_JAVA)
        candidate = Path(found)
    version = _java_major(candidate)
    if version < MIN_JAVA:
        raise JvmError(f"{candidate} is Java {version}; Apache Kafka 4 needs Java {MIN_JAVA}+", hint=INSTALL_JAVA)
    return candidate


@cache
def _java_major(java: Path) -> int:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JvmError(f"could not run {java}: {exc}", hint=INSTALL_JAVA) from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    if match is None:
        raise JvmError(f"could not tell the version of {java} from: {out.strip()[:200]}", hint=INSTALL_JAVA)
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major  # "1.8.0" is Java 8


def cache_dir() -> Path:
    return cache_root() / "jvm"


def _classpath_file(pom: Path, label: str, properties: dict[str, str]) -> Path:
    digest = hashlib.blake2b(pom.read_bytes(), digest_size=8)
    digest.update(repr(sorted(properties.items())).encode())
    return cache_dir() / f"classpath-{label}-{digest.hexdigest()}.txt"


def resolve_classpath(
    pom: Path, what: str, *, label: str, properties: dict[str, str] | None = None, scope: str | None = None
) -> tuple[Path, ...]:
    """The dependency jars of `pom` (with Maven `-Dkey=value` `properties`, only `scope` if
    given): from the classpath cache, else resolved by Maven (offline first). `what` names
    them in errors."""
    java_binary()  # a missing Java is reported before any Maven work
    extra = dict(properties or {})
    if scope is not None:
        extra["includeScope"] = scope
    target = _classpath_file(pom, label, extra)
    cached = _read_cached(target)
    if cached is not None:
        return cached
    return _resolve(pom, target, what, [f"-D{key}={value}" for key, value in sorted(extra.items())])


def _read_cached(path: Path) -> tuple[Path, ...] | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    jars = tuple(Path(entry) for entry in text.split(os.pathsep) if entry)
    return jars if jars and all(jar.is_file() for jar in jars) else None


def _resolve(pom: Path, target: Path, what: str, arguments: list[str]) -> tuple[Path, ...]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JvmError("Maven is not installed (no `mvn` on PATH); it is how Kafka's jars are fetched",
                       hint=INSTALL_MAVEN)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(f".{os.getpid()}.partial")
    failure = ""
    for offline in (True, False):
        failure = _run_maven(mvn, pom, partial, offline, arguments)
        jars = _read_cached(partial)
        if not failure and jars is not None:
            os.replace(partial, target)  # atomic: a concurrent starter reads all or nothing
            return jars
    partial.unlink(missing_ok=True)
    raise JvmError(
        f"Maven could not resolve {what} from Maven Central:\n{failure}",
        hint="check that https://repo1.maven.org is reachable (or a mirror/proxy in ~/.m2/settings.xml); "
        "once resolved, the jars are cached in ~/.m2 and no network is needed",
    )


def _run_maven(mvn: str, pom: Path, output: Path, offline: bool, arguments: list[str]) -> str:
    """Run `dependency:build-classpath`; '' on success, else the tail of Maven's output."""
    command = [mvn, "-B", "-q", "-f", str(pom), "dependency:build-classpath", f"-Dmdep.outputFile={output}",
               *arguments]
    if offline:
        command.insert(1, "--offline")
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=MAVEN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"mvn did not finish within {MAVEN_TIMEOUT_S:g}s"
    if done.returncode == 0:
        return ""
    lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return "\n".join(lines[-8:]) or f"mvn exited with {done.returncode}"
