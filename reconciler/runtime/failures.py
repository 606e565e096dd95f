"""When a connector failed, as our own mark: `connector-failed/<name>` in `<group>-reconciler`.

Connect restarts a FAILED connector when its config is updated (the herder reconfigures it on
the config record). A batch worker tells "updated since it failed" by offsets: the mark holds
the config topic's end offset at the tick that wrote the FAILED status, and a `connector-`
record at or above it came later. The mark also holds a digest of the failure's trace, so a
mark is only believed for the failure it was written for (another worker, e.g. Java's, may have
written a FAILED status of its own since).

This used to be the status record's `generation`; it cannot be, because Java's status store
compares generations across workers (docs/compatibility.md). The record's format is in
`kafka.own_records` (`FailureMark`); this module collects the marks while our topic is read.
"""

from __future__ import annotations

from reconciler.kafka import own_records as own
from reconciler.kafka.own_records import FailureMark

_PREFIX = own.CONNECTOR_FAILED_PREFIX.encode()


class FailureLog:
    """Collects the marks while our topic is read."""

    def __init__(self) -> None:
        self.marks: dict[str, FailureMark] = {}

    def on_reconciler(self, key: bytes | None, value: bytes | None) -> None:
        if key is None or not key.startswith(_PREFIX):
            return
        name = key.decode("utf-8", "replace")[len(_PREFIX) :]
        mark = None if value is None else own.decode_connector_failed(value)
        if isinstance(mark, FailureMark):
            self.marks[name] = mark
        else:
            self.marks.pop(name, None)
