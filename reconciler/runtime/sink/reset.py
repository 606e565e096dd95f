"""Where a sink task reads a partition from: its committed offset, or where `auto.offset.reset`
puts it when the group never committed one or committed one the log does not hold.

A task's consumer with no committed offset for a partition resets it by the policy: `earliest`
the log start, `latest` the log end at its isolation level, `none` raises
`NoOffsetForPartitionException` and the task fails.

Connect writes a KIP-875 alter into the sink's group as given, with no range check
(`Worker.alterSinkConnectorOffsets`); retention and DeleteRecords move a log's start past what
a group committed. The task's consumer then fetches at an offset the partition does not hold,
the broker answers OFFSET_OUT_OF_RANGE, and the consumer applies `auto.offset.reset`: Connect
sets `earliest` for every sink consumer (`Worker.baseConsumerConfigs`), which
`consumer.override.auto.offset.reset` may change; with `none` the consumer raises
`OffsetOutOfRangeException` and the task fails. A batch here resolves this once, on the driver,
for both readers, for every partition of the batch (docs/runtime.md#offset-ranges). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from reconciler.connectors.api import ConnectorError, TopicPartition
from reconciler.kafka.io.consume import LogBounds

EARLIEST, LATEST, NONE = "earliest", "latest", "none"
# librdkafka's spellings (the overrides reach us translated, Java's `none` as `error`).
_POLICIES = {
    "earliest": EARLIEST, "smallest": EARLIEST, "beginning": EARLIEST,
    "latest": LATEST, "largest": LATEST, "end": LATEST,
    "error": NONE, "none": NONE,
}


class OffsetOutOfRange(ConnectorError):
    """A committed offset outside its partition's log, and the reset policy is `none`."""


class NoOffsetForPartition(ConnectorError):
    """No committed offset for a partition, and the reset policy is `none` (Java's
    `NoOffsetForPartitionException`)."""


@dataclass(frozen=True, kw_only=True)
class Reset:
    """A committed offset the log does not hold (None: none was ever committed, `latest`), and
    where reading starts instead."""

    tp: TopicPartition
    committed: int | None
    start: int
    bounds: LogBounds
    policy: str


def reset_policy(consumer_config: Mapping[str, str]) -> str:
    """EARLIEST, LATEST or NONE: the `auto.offset.reset` of a sink's consumers (Connect's
    `earliest` unless `consumer.override.*` says otherwise)."""
    given = consumer_config.get("auto.offset.reset", EARLIEST).strip().lower()
    policy = _POLICIES.get(given)
    if policy is None:
        raise ConnectorError(f"`auto.offset.reset` {given!r} is not supported: use earliest, latest or none")
    return policy


def sink_start(tp: TopicPartition, committed: int | None, bounds: LogBounds, policy: str) -> int:
    """Where the task reads `tp` from: `committed` when the log holds it (the log end included:
    nothing to read yet); else (never committed, or out of range) the log start (EARLIEST) or the
    end the task reads to (LATEST, as a consumer's reset lists it at its isolation level). NONE
    raises `NoOffsetForPartition` (never committed) or `OffsetOutOfRange`."""
    if committed is not None and bounds.start <= committed <= bounds.end:
        return committed
    if policy == EARLIEST:
        return bounds.start
    if policy == LATEST:
        return bounds.readable
    if committed is None:
        raise NoOffsetForPartition(
            f"undefined offset with no reset policy for partition {tp[0]}[{tp[1]}]: the group never committed "
            "an offset for it, and auto.offset.reset is none"
        )
    raise OffsetOutOfRange(
        f"committed offset {committed} of {tp[0]}[{tp[1]}] is out of range: the partition holds offsets "
        f"{bounds.start} to {bounds.end} (log start to log end), and auto.offset.reset is none"
    )


@dataclass(frozen=True, kw_only=True)
class Starts:
    """Where each partition is read from, what was reset, what failed (NONE), and which start
    at the log start with no offset committed (`uncommitted`: never committed, EARLIEST)."""

    offsets: dict[TopicPartition, int]
    resets: list[Reset]
    failures: dict[TopicPartition, str]
    uncommitted: set[TopicPartition] = field(default_factory=set)


def sink_starts(
    committed: Mapping[TopicPartition, int], bounds: Mapping[TopicPartition, LogBounds], policy: str
) -> Starts:
    """`sink_start` for every partition of the batch (those with bounds), committed or not; a
    committed partition outside the batch is left as it is.

    A never-committed partition read from the log start (EARLIEST) is not a reset: the next
    batch's fresh consumer would start there again, so it needs no commit of its own (it is
    committed with its task's other partitions, as Java's task does: `job`). One
    read from the end (LATEST) is: the next batch would reset to a later end and skip what came
    in between, so its start is committed as an out-of-range reset's is."""
    starts = Starts(offsets={}, resets=[], failures={})
    for tp in dict.fromkeys([*bounds, *committed]):
        offset, known = committed.get(tp), bounds.get(tp)
        if known is None:
            starts.offsets[tp] = committed[tp]
            continue
        try:
            start = sink_start(tp, offset, known, policy)
        except (OffsetOutOfRange, NoOffsetForPartition) as exc:
            starts.failures[tp] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
            continue
        starts.offsets[tp] = start
        if offset is None and policy == EARLIEST:
            starts.uncommitted.add(tp)
        elif start != offset:
            starts.resets.append(Reset(tp=tp, committed=offset, start=start, bounds=known, policy=policy))
    return starts


def describe(connector: str, reset: Reset) -> str:
    """The message a reset is logged with (`job`: WARNING when a committed offset is out of
    range, INFO when none was ever committed)."""
    topic, partition = reset.tp
    if reset.committed is None:
        found = f"no offset was ever committed for {topic}[{partition}]"
    else:
        found = f"committed offset {reset.committed} of {topic}[{partition}] is out of range"
    return (
        f"sink connector {connector}: {found} (the partition holds offsets {reset.bounds.start} to "
        f"{reset.bounds.end}); auto.offset.reset is {reset.policy}: reading from offset {reset.start}"
    )
