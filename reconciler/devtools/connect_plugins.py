"""Connector plugins for the Java Connect worker (`devtools.connect`), from Maven Central.

Debezium's connectors come from one pinned pom (`jvm/debezium/pom.xml`; the artifact and its
version are Maven properties, so the PostgreSQL source and the JDBC sink share it), resolved
and cached by `toolchain.maven` as Kafka's own jars are. Each plugin becomes one directory of
links to its jars under the cache (`<artifact>-<version>/<artifact>/`); the outer directory is an
entry of the worker's `plugin.path` (whose entries hold plugin directories), so the plugin loads
in its own class loader as in a real deployment. Kafka's own jars (`connect-api`, `kafka-clients`,
which Debezium's poms pull in) are left out: the worker's are the ones a plugin must use
(docs/real-components.md#debezium).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Final

from reconciler.devtools.jvm import JVM_DIR
from reconciler.toolchain.maven import cache_dir, resolve_classpath

DEBEZIUM_POM: Final = JVM_DIR / "debezium" / "pom.xml"
DEBEZIUM_VERSION: Final = "3.6.1.Final"
POSTGRES_SOURCE: Final = "debezium-connector-postgres"
JDBC_SINK: Final = "debezium-connector-jdbc"
# Debezium's JDBC sink: 3.6.1.Final's jar is not on Maven Central; tried in this order, once each.
JDBC_SINK_VERSIONS: Final = ("3.6.1.Final", "3.5.0.Final")
KAFKA_GROUP: Final = f"{os.sep}org{os.sep}apache{os.sep}kafka{os.sep}"


def debezium_plugin(artifact: str, version: str = DEBEZIUM_VERSION) -> Path:
    """The `plugin.path` entry of `io.debezium:<artifact>:<version>` (resolved by Maven once)."""
    jars = resolve_classpath(DEBEZIUM_POM, f"Debezium's {artifact} {version}", label=f"{artifact}-{version}",
                             properties={"debezium.artifact": artifact, "debezium.version": version},
                             scope="runtime")
    wanted = sorted(jar for jar in jars if KAFKA_GROUP not in str(jar))
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
