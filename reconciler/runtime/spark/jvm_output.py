"""The Spark driver JVM's stderr when every line of ours must be JSON (`--log-format json`).

log4j writes the JVM's logs as JSON (`runtime.spark.session`'s layout), but the JVM itself writes a few
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
import sys
import threading
from typing import IO, TextIO

LOG = logging.getLogger("spark.jvm")


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
