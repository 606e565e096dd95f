"""Where a sink task reads a partition from when its committed offset is not in the log.

Connect writes a KIP-875 alter into the sink's group as given, with no range check
(`Worker.alterSinkConnectorOffsets`); retention and DeleteRecords move a log's start past what
a group committed. The task's consumer then fetches at an offset the partition does not hold,
the broker answers OFFSET_OUT_OF_RANGE, and the consumer applies `auto.offset.reset`: Connect
sets `earliest` for every sink consumer (`Worker.baseConsumerConfigs`), which
`consumer.override.auto.offset.reset` may change; with `none` the consumer raises
`OffsetOutOfRangeException` and the task fails. A batch here resolves this once, on the driver,
for both readers (docs/runtime.md#offset-ranges). Pure functions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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


@dataclass(frozen=True)
class Reset:
    """A committed offset the log does not hold, and where reading starts instead."""

    tp: TopicPartition
    committed: int
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


def sink_start(tp: TopicPartition, committed: int, bounds: LogBounds, policy: str) -> int:
    """Where the task reads `tp` from: `committed` when the log holds it (the log end included:
    nothing to read yet); else the log start (EARLIEST) or the end the task reads to (LATEST, as
    a consumer's reset lists it at its isolation level). NONE raises `OffsetOutOfRange`."""
    if bounds.start <= committed <= bounds.end:
        return committed
    if policy == EARLIEST:
        return bounds.start
    if policy == LATEST:
        return bounds.readable
    raise OffsetOutOfRange(
        f"committed offset {committed} of {tp[0]}[{tp[1]}] is out of range: the partition holds offsets "
        f"{bounds.start} to {bounds.end} (log start to log end), and auto.offset.reset is none"
    )


@dataclass(frozen=True)
class Starts:
    """Where each committed partition is read from, what was reset, and what failed (NONE)."""

    offsets: dict[TopicPartition, int]
    resets: list[Reset]
    failures: dict[TopicPartition, str]


def sink_starts(
    committed: Mapping[TopicPartition, int], bounds: Mapping[TopicPartition, LogBounds], policy: str
) -> Starts:
    """`sink_start` for each committed partition whose bounds are known (a partition of the
    batch; the others are left as they are)."""
    starts = Starts({}, [], {})
    for tp, offset in committed.items():
        known = bounds.get(tp)
        if known is None:
            starts.offsets[tp] = offset
            continue
        try:
            start = sink_start(tp, offset, known, policy)
        except OffsetOutOfRange as exc:
            starts.failures[tp] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"
            continue
        starts.offsets[tp] = start
        if start != offset:
            starts.resets.append(Reset(tp, offset, start, known, policy))
    return starts


def describe(connector: str, reset: Reset) -> str:
    """The warning a reset is logged with."""
    topic, partition = reset.tp
    return (
        f"sink connector {connector}: committed offset {reset.committed} of {topic}[{partition}] is out of range "
        f"(the partition holds offsets {reset.bounds.start} to {reset.bounds.end}); auto.offset.reset is "
        f"{reset.policy}: reading from offset {reset.start}"
    )
