"""The Spark driver JVM's logging: its log4j profile (`log4j_file`), and its stderr when every
line of ours must be JSON (`--log-format json`).

log4j writes the JVM's logs as JSON (`JSON_LAYOUT`), but the JVM itself writes a few
lines outside any logging: the launcher's warning about the incubator module Spark 4 adds
(`WARNING: Using incubator modules: jdk.incubator.vector`, on every start), `Picked up
JAVA_TOOL_OPTIONS: …` when that variable is set (container images often set it), an uncaught
exception's trace. A log pipeline that parses each line as JSON stumbles on those. So in JSON
mode the JVM's stderr is a pipe to this process: a thread passes its JSON lines through as they
are and logs each other line as a warning of the `spark.jvm` logger, in our JSON fields.

The thread only ever reads and writes: were it to stop reading, the JVM would block once the
pipe's buffer (64 KiB) filled.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import threading
from typing import IO, TextIO

LOG = logging.getLogger("spark.jvm")

# Spark's default log4j profile prints start-up chatter (native-hadoop, loopback hostname, one
# warning per FAIR pool created on the fly) on every run; keep warnings that mean something.
LOG4J2_PROPERTIES = """\
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
logger.pools.name = org.apache.spark.scheduler.FairSchedulableBuilder
logger.pools.level = error
logger.utils.name = org.apache.spark.util.Utils
logger.utils.level = error
"""
# With `--log-format json` (RECONCILER_LOG_FORMAT=json) the JVM's lines are JSON objects too,
# with the fields of the reconciler's own (reconciler.logs), so every line of stderr parses.
JSON_LAYOUT = (
    "appender.console.layout.type = JsonTemplateLayout\n"
    'appender.console.layout.eventTemplate = {"time":{"$resolver":"timestamp","pattern":'
    '{"format":"yyyy-MM-dd\'T\'HH:mm:ss.SSS\'Z\'","timeZone":"UTC"}},'
    '"level":{"$resolver":"level","field":"name"},"logger":{"$resolver":"logger","field":"name"},'
    '"message":{"$resolver":"message","stringified":true},"event":"log",'
    '"exception":{"$resolver":"exception","field":"stackTrace","stackTrace":{"stringified":true}}}\n'
)
LOG4J2_JSON_PROPERTIES = LOG4J2_PROPERTIES.replace(
    "appender.console.layout.type = PatternLayout\n"
    "appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex\n",
    JSON_LAYOUT,
)


def json_logs() -> bool:
    """`--log-format json` (`reconciler.cli.logs` sets the variable for what it starts)."""
    return os.environ.get("RECONCILER_LOG_FORMAT") == "json"


def log4j_file() -> str:
    """The log4j profile's file for the driver's JVM (`-Dlog4j.configurationFile`), written once
    per user and format into the temporary directory."""
    as_json = json_logs()
    text = LOG4J2_JSON_PROPERTIES if as_json else LOG4J2_PROPERTIES
    kind = "-json" if as_json else ""
    path = os.path.join(tempfile.gettempdir(), f"connect-reconciler-log4j2{kind}-{os.getuid()}.properties")
    try:
        with open(path) as handle:
            if handle.read() == text:
                return path
    except OSError:
        pass
    temp = f"{path}.{os.getpid()}"
    with open(temp, "w") as handle:
        handle.write(text)
    os.replace(temp, path)  # atomic: concurrent starts never read half a file
    return path


def relay(stream: IO[bytes], out: TextIO | None = None) -> threading.Thread:
    """Start passing `stream`'s lines on (to `out`, default this process's stderr) until it ends."""
    thread = threading.Thread(target=_pass_lines, args=(stream, out), name="spark-jvm-stderr", daemon=True)
    thread.start()
    return thread


def _pass_lines(stream: IO[bytes], out: TextIO | None) -> None:
    for raw in iter(stream.readline, b""):
        try:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            if line.startswith("{") and line.endswith("}"):  # log4j's JSON layout: one event a line
                target = out or sys.stderr
                target.write(line + "\n")
                target.flush()
            elif line.strip():
                LOG.warning("%s", line)
        except Exception:  # noqa: BLE001 - a line lost is better than a JVM blocked on a full pipe
            continue
