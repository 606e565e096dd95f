"""Connector plugins for the Java Connect worker (`devtools.connect`), from Maven Central.

Debezium's connectors come from one pinned pom (`jvm/debezium/pom.xml`; the artifact and its
version are Maven properties, so the PostgreSQL source and the JDBC sink share it), Apache
Iceberg's own sink from another (`jvm/iceberg-connect/pom.xml`: the sink, its Parquet writer,
Hadoop's client, the SQLite and PostgreSQL JDBC drivers of its SQL catalog), resolved
and cached by `toolchain.maven` as Kafka's own jars are. Each plugin becomes one directory of
links to its jars under the cache (`<artifact>-<version>/<artifact>/`); the outer directory is an
entry of the worker's `plugin.path` (whose entries hold plugin directories), so the plugin loads
in its own class loader as in a real deployment. A library the worker ships is left out of
the plugin (Kafka's `connect-api` and `kafka-clients`, Jackson…): the worker's copy is the one
the plugin sees, as a class loaded through both would not be one type (Debezium's JDBC sink
fails to start with its own Jackson beside the worker's modules: `Jdk8Module not a subtype`).
See docs/real-components.md#debezium.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Final

from reconciler.devtools.jvm import JVM_DIR, kafka_classpath
from reconciler.toolchain.maven import cache_dir, resolve_classpath

DEBEZIUM_POM: Final = JVM_DIR / "debezium" / "pom.xml"
DEBEZIUM_VERSION: Final = "3.6.1.Final"
POSTGRES_SOURCE: Final = "debezium-connector-postgres"
JDBC_SINK: Final = "debezium-connector-jdbc"
# Debezium's JDBC sink: 3.6.1.Final's jar is not on Maven Central (nor 3.7.1.Final's, the newest
# served; both tried 2026-11-28, failing after two Maven runs each): 3.5.0.Final is the newest that
# resolved, and the one the tests' worker and bench/jdbc.py load.
JDBC_SINK_RESOLVES: Final = "3.5.0.Final"
ICEBERG_POM: Final = JVM_DIR / "iceberg-connect" / "pom.xml"
ICEBERG_SINK: Final = "iceberg-kafka-connect"
ICEBERG_SINK_CLASS: Final = "org.apache.iceberg.connect.IcebergSinkConnector"


def debezium_plugin(artifact: str, version: str = DEBEZIUM_VERSION) -> Path:
    """The `plugin.path` entry of `io.debezium:<artifact>:<version>` (resolved by Maven once)."""
    jars = resolve_classpath(DEBEZIUM_POM, f"Debezium's {artifact} {version}", label=f"{artifact}-{version}",
                             properties={"debezium.artifact": artifact, "debezium.version": version},
                             scope="runtime")
    return plugin_directory(artifact, version, jars)


def iceberg_version() -> str:
    match = re.search(r"<iceberg\.version>([^<]+)</iceberg\.version>", ICEBERG_POM.read_text())
    assert match is not None, f"{ICEBERG_POM} pins no iceberg.version"
    return match.group(1)


def iceberg_plugin() -> Path:
    """The `plugin.path` entry of Apache Iceberg's Kafka Connect sink (`org.apache.iceberg:
    iceberg-kafka-connect`, the pom's version), resolved by Maven once."""
    version = iceberg_version()
    jars = resolve_classpath(ICEBERG_POM, f"Apache Iceberg's Kafka Connect sink {version}",
                             label=f"{ICEBERG_SINK}-{version}", scope="runtime")
    return plugin_directory(ICEBERG_SINK, version, jars)


def plugin_directory(artifact: str, version: str, jars: tuple[Path, ...]) -> Path:
    """A directory of links to `jars` less the worker's own libraries: one plugin.path entry."""
    shipped = {artifact_dir(jar) for jar in kafka_classpath().jars}
    wanted = sorted(jar for jar in jars if artifact_dir(jar) not in shipped)
    directory = cache_dir() / "plugins" / f"{artifact}-{version}"
    plugin = directory / artifact
    if plugin.is_dir() and sorted(p.resolve() for p in plugin.iterdir()) == [j.resolve() for j in wanted]:
        return directory
    partial = directory.with_name(f"{directory.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    (partial / artifact).mkdir(parents=True)
    for jar in wanted:
        (partial / artifact / jar.name).symlink_to(jar)
    shutil.rmtree(directory, ignore_errors=True)
    os.replace(partial, directory)  # a directory complete or absent: never half a plugin
    return directory


def artifact_dir(jar: Path) -> Path:
    """A Maven repository jar's `<group>/<artifact>` directory: the library, whatever its version."""
    return jar.parent.parent
