"""The rule for where a sink reads a partition from when its group never committed an offset for
it, or committed one the log does not hold: Connect's consumer resets it with
`auto.offset.reset` (earliest by default; `none` fails the task). docs/runtime.md#offset-ranges."""

from __future__ import annotations

import pytest

from reconciler.connectors.api import ConnectorError
from reconciler.kafka.io.consume import LogBounds
from reconciler.runtime.sink.reset import (
    EARLIEST,
    LATEST,
    NONE,
    NoOffsetForPartition,
    OffsetOutOfRange,
    Reset,
    describe,
    reset_policy,
    sink_start,
    sink_starts,
)

TP = ("orders", 1)
# Records 100..2973 are held; an open transaction keeps read_committed readers below 2960.
BOUNDS = LogBounds(start=100, end=2974, readable=2960)


@pytest.mark.parametrize("committed", [100, 500, 2960, 2973, 2974])
@pytest.mark.parametrize("policy", [EARLIEST, LATEST, NONE])
def test_a_committed_offset_the_log_holds_is_where_reading_starts(committed: int, policy: str) -> None:
    """The log end included (nothing to read yet), and past the stable end (a transaction open)."""
    assert sink_start(TP, committed, BOUNDS, policy) == committed


@pytest.mark.parametrize("committed", [0, 99, 2975, 5000])
def test_outside_the_log_earliest_reads_from_the_log_start_and_latest_from_the_readable_end(committed: int) -> None:
    assert sink_start(TP, committed, BOUNDS, EARLIEST) == 100
    assert sink_start(TP, committed, BOUNDS, LATEST) == 2960  # a consumer's reset lists it at its isolation level


@pytest.mark.parametrize("committed", [99, 5000])
def test_outside_the_log_none_fails_naming_the_partition_the_offset_and_the_range(committed: int) -> None:
    with pytest.raises(OffsetOutOfRange) as raised:
        sink_start(TP, committed, BOUNDS, NONE)
    assert str(raised.value) == (
        f"committed offset {committed} of orders[1] is out of range: the partition holds offsets 100 to 2974 "
        "(log start to log end), and auto.offset.reset is none"
    )


def test_never_committed_earliest_reads_from_the_log_start_and_latest_from_the_readable_end() -> None:
    assert sink_start(TP, None, BOUNDS, EARLIEST) == 100
    assert sink_start(TP, None, BOUNDS, LATEST) == 2960


def test_never_committed_none_fails_naming_the_partition_as_javas_no_offset_for_partition() -> None:
    with pytest.raises(NoOffsetForPartition) as raised:
        sink_start(TP, None, BOUNDS, NONE)
    assert str(raised.value) == (
        "undefined offset with no reset policy for partition orders[1]: the group never committed an offset "
        "for it, and auto.offset.reset is none"
    )


def test_an_empty_log_holds_only_its_end() -> None:
    empty = LogBounds(start=40, end=40, readable=40)
    assert [sink_start(TP, c, empty, EARLIEST) for c in (39, 40, 41)] == [40, 40, 40]


@pytest.mark.parametrize(
    ("config", "policy"),
    [
        ({}, EARLIEST),  # Connect's default for sink consumers
        ({"auto.offset.reset": "earliest"}, EARLIEST),
        ({"auto.offset.reset": "smallest"}, EARLIEST),
        ({"auto.offset.reset": "Latest"}, LATEST),
        ({"auto.offset.reset": "largest"}, LATEST),
        ({"auto.offset.reset": "error"}, NONE),  # Java's `none`, as client_names translates it
        ({"auto.offset.reset": "none"}, NONE),
    ],
)
def test_the_reset_policy_of_a_sinks_consumers(config: dict[str, str], policy: str) -> None:
    assert reset_policy(config) == policy


def test_an_unknown_reset_policy_is_an_error() -> None:
    with pytest.raises(ConnectorError, match="earliest, latest or none"):
        reset_policy({"auto.offset.reset": "sometimes"})


def test_every_committed_partition_of_a_batch_gets_a_start_resets_and_failures_apart() -> None:
    bounds = {("t", 0): LogBounds(0, 10, 10), ("t", 1): LogBounds(5, 20, 20), ("t", 2): LogBounds(0, 7, 7)}
    committed = {("t", 0): 4, ("t", 1): 2, ("t", 2): 9, ("u", 0): 3}  # ("u", 0): not in the batch
    starts = sink_starts(committed, bounds, EARLIEST)
    assert starts.offsets == {("t", 0): 4, ("t", 1): 5, ("t", 2): 0, ("u", 0): 3}
    assert starts.resets == [
        Reset(tp=("t", 1), committed=2, start=5, bounds=bounds[("t", 1)], policy=EARLIEST),
        Reset(tp=("t", 2), committed=9, start=0, bounds=bounds[("t", 2)], policy=EARLIEST),
    ]
    assert starts.failures == {}
    failing = sink_starts(committed, bounds, NONE)
    assert failing.offsets == {("t", 0): 4, ("u", 0): 3} and failing.resets == []
    assert set(failing.failures) == {("t", 1), ("t", 2)}
    assert failing.failures[("t", 2)].startswith(
        "reconciler.runtime.sink.reset.OffsetOutOfRange: committed offset 9 of t[2] is out of range"
    )


def test_a_never_committed_partition_starts_by_the_policy_and_only_latest_is_a_reset_to_commit() -> None:
    """`earliest`: the next batch would start at the log start again, nothing to commit; `latest`:
    it would reset to a later end, so the start is a reset (committed by `sink.job`)."""
    bounds = {("t", 0): LogBounds(3, 10, 8), ("t", 1): LogBounds(0, 0, 0), ("t", 2): LogBounds(0, 5, 5)}
    committed = {("t", 2): 4}
    earliest = sink_starts(committed, bounds, EARLIEST)
    assert earliest.offsets == {("t", 0): 3, ("t", 1): 0, ("t", 2): 4}
    assert (earliest.resets, earliest.failures, earliest.uncommitted) == ([], {}, {("t", 0), ("t", 1)})
    latest = sink_starts(committed, bounds, LATEST)
    assert latest.offsets == {("t", 0): 8, ("t", 1): 0, ("t", 2): 4}
    assert latest.resets == [
        Reset(tp=("t", 0), committed=None, start=8, bounds=bounds[("t", 0)], policy=LATEST),
        Reset(tp=("t", 1), committed=None, start=0, bounds=bounds[("t", 1)], policy=LATEST),
    ]
    assert (latest.failures, latest.uncommitted) == ({}, set())
    strict = sink_starts(committed, bounds, NONE)
    assert (strict.offsets, strict.resets, set(strict.failures)) == ({("t", 2): 4}, [], {("t", 0), ("t", 1)})
    assert strict.failures[("t", 1)] == (
        "reconciler.runtime.sink.reset.NoOffsetForPartition: undefined offset with no reset policy for partition "
        "t[1]: the group never committed an offset for it, and auto.offset.reset is none"
    )


def test_a_first_start_by_the_policy_is_described_as_never_committed() -> None:
    reset = Reset(tp=TP, committed=None, start=2960, bounds=BOUNDS, policy=LATEST)
    assert describe("archive", reset) == (
        "sink connector archive: no offset was ever committed for orders[1] (the partition holds offsets "
        "100 to 2974); auto.offset.reset is latest: reading from offset 2960"
    )


def test_a_reset_is_described_naming_connector_partition_and_both_offsets() -> None:
    reset = Reset(tp=TP, committed=5000, start=100, bounds=BOUNDS, policy=EARLIEST)
    assert describe("archive", reset) == (
        "sink connector archive: committed offset 5000 of orders[1] is out of range (the partition holds offsets "
        "100 to 2974); auto.offset.reset is earliest: reading from offset 100"
    )
