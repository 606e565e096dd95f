"""When a connector failed, as our own mark: `connector-failed/<name>` in `<group>-reconciler`.

Connect restarts a FAILED connector when its config is updated (the herder reconfigures it on
the config record). A batch worker tells "updated since it failed" by offsets: the mark holds
the config topic's end offset at the tick that wrote the FAILED status, and a `connector-`
record at or above it came later. The mark also holds a digest of the failure's trace, so a
mark is only believed for the failure it was written for (another worker, e.g. Java's, may have
written a FAILED status of its own since).

This used to be the status record's `generation`; it cannot be, because Java's status store
compares generations across workers (docs/compatibility.md). Pure: records in and out.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from reconciler.kafka import records as rec
from reconciler.kafka.records import Invalid, Record

FAILED_PREFIX = "connector-failed/"


@dataclass(frozen=True, slots=True)
class FailureMark:
    config_end: int  # the config topic's end offset when the FAILED status was written
    trace_digest: str

    def holds_for(self, trace: str | None) -> bool:
        return self.trace_digest == trace_digest(trace)


def trace_digest(trace: str | None) -> str:
    return hashlib.sha256((trace or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]


def failure_mark_record(connector: str, config_end: int, trace: str | None) -> Record:
    value = rec.dumps({"config-end": config_end, "trace-sha256": trace_digest(trace)})
    return Record("reconciler", (FAILED_PREFIX + connector).encode("utf-8"), value)


def failure_mark_tombstone(connector: str) -> Record:
    return Record("reconciler", (FAILED_PREFIX + connector).encode("utf-8"), None)


def decode_failure_mark(value: bytes) -> FailureMark | Invalid:
    obj = rec.loads(value)
    end = obj.get("config-end") if type(obj) is dict else None
    digest = obj.get("trace-sha256") if type(obj) is dict else None
    if type(end) is not int or type(digest) is not str:
        return Invalid("a failure mark needs 'config-end' and 'trace-sha256'")
    return FailureMark(end, digest)


class FailureLog:
    """Collects the marks while our topic is read."""

    def __init__(self) -> None:
        self.marks: dict[str, FailureMark] = {}

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or not key.startswith(FAILED_PREFIX.encode()):
            return
        name = key.decode("utf-8", "replace")[len(FAILED_PREFIX) :]
        mark = None if value is None else decode_failure_mark(value)
        if isinstance(mark, FailureMark):
            self.marks[name] = mark
        else:
            self.marks.pop(name, None)
