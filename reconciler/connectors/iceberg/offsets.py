"""The offsets a table holds, in its snapshots' summaries, as Apache Iceberg's sink keeps them.

Java's coordinator writes `kafka.connect.offsets.<control topic>.<connect group id>` = a JSON
object of partition → next offset (Jackson's `Map<Integer, Long>`: `{"0":120,"1":77}`) into each
snapshot it commits, and finds the last one by walking the branch's ancestry to the first
snapshot carrying the key (`Coordinator.lastCommittedOffsets`). Its partitions are the control
topic's; the data topics' offsets live in the Connect group. This runtime has no control topic:
the batch driver writes the data topics' offsets under the same key shape, one key per topic
(`kafka.connect.offsets.<topic>.<group>`), found the same way. A Java coordinator looks only for
its control topic's key and a snapshot of ours leaves its key untouched, so each runtime keeps
its own offsets in a table the other writes to (docs/connectors.md#iceberg-sink).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Final

from reconciler.connectors.api import TopicPartition

if TYPE_CHECKING:
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

PREFIX: Final = "kafka.connect.offsets."
COMMIT_ID: Final = "kafka.connect.commit-id"
TASK_ID: Final = "kafka.connect.task-id"
VALID_THROUGH: Final = "kafka.connect.valid-through-ts"


def key(topic: str, group: str) -> str:
    return f"{PREFIX}{topic}.{group}"


def to_json(offsets: Mapping[int, int]) -> str:
    """Jackson's `writeValueAsString(Map<Integer, Long>)`: compact, partitions as strings."""
    return json.dumps({str(p): o for p, o in sorted(offsets.items())}, separators=(",", ":"))


def from_json(text: str | None) -> dict[int, int]:
    if not text:
        return {}
    return {int(p): int(o) for p, o in json.loads(text).items()}


def head(table: Table, branch: str | None) -> Snapshot | None:
    """The branch's (or main's) latest snapshot."""
    return table.snapshot_by_name(branch) if branch else table.current_snapshot()


def ancestry(table: Table, branch: str | None) -> Iterable[Snapshot]:
    snapshot = head(table, branch)
    while snapshot is not None:
        yield snapshot
        snapshot = table.snapshot_by_id(snapshot.parent_snapshot_id) if snapshot.parent_snapshot_id else None


def table_offsets(table: Table, branch: str | None, topics: Iterable[str], group: str) -> dict[TopicPartition, int]:
    """Each partition's next offset the table holds, from the newest snapshot carrying its topic's key."""
    wanted = {key(topic, group): topic for topic in topics}
    found: dict[TopicPartition, int] = {}
    for snapshot in ancestry(table, branch):
        summary = snapshot.summary if snapshot.summary is not None else {}
        for name in [name for name in wanted if name in summary]:
            topic = wanted.pop(name)
            found.update({(topic, p): o for p, o in from_json(summary[name]).items()})
        if not wanted:
            break
    return found


def summary_update(
    held: Mapping[TopicPartition, int], new: Mapping[TopicPartition, int | None], group: str
) -> dict[str, str]:
    """The summary keys of a commit moving `held` to `new` (None removes a partition): one key
    per topic `new` names, every partition the table held for that topic kept."""
    topics = {topic for topic, _ in new}
    updates = {}
    for topic in sorted(topics):
        merged = {p: o for (t, p), o in held.items() if t == topic}
        for (t, p), offset in new.items():
            if t != topic:
                continue
            if offset is None:
                merged.pop(p, None)
            else:
                merged[p] = offset
        updates[key(topic, group)] = to_json(merged)
    return updates
