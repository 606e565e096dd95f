"""The Java side of the real components: Kafka's jars, and `java` command lines for them.

`jvm/pom.xml` pins Apache Kafka (broker, tools) and the Kafka Connect worker (`connect-runtime`,
`connect-json`, `connect-file`) of one version. Java is found and the jars resolved through
Maven, cached, by `toolchain.maven` (docs/real-components.md), which the runtime uses for Spark's
Kafka data source too.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from reconciler.toolchain.maven import JvmError as JvmError  # what broker/connect report
from reconciler.toolchain.maven import java_binary as java_binary
from reconciler.toolchain.maven import resolve_classpath

JVM_DIR = Path(__file__).resolve().parent / "jvm"
POM = JVM_DIR / "pom.xml"
LOG4J2_CONFIG = JVM_DIR / "log4j2.properties"


@dataclass(frozen=True)
class Classpath:
    """Kafka's jars, resolved for one pinned `pom.xml`."""

    jars: tuple[Path, ...]
    kafka_version: str

    def argument(self) -> str:
        return os.pathsep.join(str(jar) for jar in self.jars)


def kafka_version() -> str:
    match = re.search(r"<kafka\.version>([^<]+)</kafka\.version>", POM.read_text())
    assert match is not None, f"{POM} pins no kafka.version"
    return match.group(1)


def kafka_classpath() -> Classpath:
    """The jars of the pinned Kafka version: from the cache, else resolved by Maven."""
    jars = resolve_classpath(POM, f"Apache Kafka {kafka_version()}", label=kafka_version())
    return Classpath(jars, kafka_version())


def java_command(classpath: Classpath, main_class: str, *args: str, heap: str = "1g",
                 log_file: Path | None = None, quick: bool = False) -> list[str]:
    """A `java` command line for one of Kafka's main classes, logging to `log_file` (log4j2).

    `quick`: C1 JIT only, for a JVM that lives seconds (a broker a test restarts, Kafka's
    storage tool): it starts in about half the time (Kafka 4.9-7.6 s against 5.2-12.2 s at load
    3-6). Not for one that serves a whole session: its compiled code is slower. The CI run with
    every broker and worker on C1 took 30.9 min against 30.1 before, its `run --once` chains
    4-6 s longer each; not told apart from the run's other changes, so not kept for them."""
    jit = ["-XX:TieredStopAtLevel=1"] if quick else []
    command = [str(java_binary()), f"-Xmx{heap}", "-XX:+UseG1GC", *jit, "-Djava.awt.headless=true"]
    if log_file is not None:
        command += [f"-Dlog4j2.configurationFile={LOG4J2_CONFIG}", f"-Dreconciler.log.file={log_file}"]
    return [*command, "-cp", classpath.argument(), main_class, *args]
