"""The Java side of the real components: find Java and Maven, and Kafka's jars through Maven.

`jvm/pom.xml` pins Apache Kafka (broker, tools) and the Kafka Connect worker (`connect-runtime`,
`connect-json`, `connect-file`) of one version. Maven resolves them from Maven Central into its
own repository (`~/.m2`) once; the resulting classpath is cached here, keyed by the pom's hash,
so later starts run no Maven at all (docs/real-components.md).

Order of attempts, so a machine without network works whenever it can:

1. the cached classpath, if every jar on it still exists;
2. `mvn --offline` (a warm `~/.m2` without our classpath file, e.g. a fresh clone);
3. `mvn` online (a cold `~/.m2`), whose failure is the one clear error a user sees.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from reconciler.errors import ReconcilerError

JVM_DIR = Path(__file__).resolve().parent / "jvm"
POM = JVM_DIR / "pom.xml"
LOG4J2_CONFIG = JVM_DIR / "log4j2.properties"
MIN_JAVA = 17
MAVEN_TIMEOUT_S = 600.0
INSTALL_JAVA = "install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless) or set JAVA_HOME"
INSTALL_MAVEN = "install Apache Maven (Debian: apt-get install maven); it fetches Kafka's jars from Maven Central"


class JvmError(ReconcilerError):
    """Java or Maven is missing, too old, or Kafka's jars could not be resolved."""


@dataclass(frozen=True)
class Classpath:
    """Kafka's jars, resolved for one pinned `pom.xml`."""

    jars: tuple[Path, ...]
    kafka_version: str

    def argument(self) -> str:
        return os.pathsep.join(str(jar) for jar in self.jars)


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


def kafka_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert match is not None, f"{POM} pins no kafka.version"
    return match.group(1)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "connect-reconciler" / "jvm"


def _classpath_file(pom: Path, label: str, properties: dict[str, str]) -> Path:
    digest = hashlib.blake2b(pom.read_bytes(), digest_size=8)
    digest.update(repr(sorted(properties.items())).encode())
    return cache_dir() / f"classpath-{label}-{digest.hexdigest()}.txt"


def kafka_classpath() -> Classpath:
    """The jars of the pinned Kafka version: from the cache, else resolved by Maven."""
    jars = resolve_classpath(POM, f"Apache Kafka {kafka_version()}", label=kafka_version())
    return Classpath(jars, kafka_version())


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


def _prctl() -> Callable[[int, int], int] | None:
    try:
        prctl: Callable[[int, int], int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None
    return prctl


# Looked up here, in the parent: the child of a fork may only call what is already loaded.
_PRCTL = _prctl()
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """`preexec_fn` for the JVMs we start: the kernel kills them when the starting process dies.

    A test run killed by a timeout, or a Ctrl-C'd quickstart, would otherwise leave a broker and
    a Connect worker running with their ports and memory (Linux's PR_SET_PDEATHSIG; elsewhere
    nothing is set and `stop()` remains the only way).
    """
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL)


def java_command(classpath: Classpath, main_class: str, *args: str, heap: str = "1g",
                 log_file: Path | None = None) -> list[str]:
    """A `java` command line for one of Kafka's main classes, logging to `log_file` (log4j2)."""
    command = [str(java_binary()), f"-Xmx{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true"]
    if log_file is not None:
        command += [f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", f"-Dreconciler.log.file={log_file}"]
    return [*command, "-cp", classpath.argument(), main_class, *args]
