"""Connect's offsets-body rules (core.offsets_rules), case by case (docs/state-machine.md#alter-and-reset, acceptance cases B20/B22)."""

from __future__ import annotations

import pytest

from reconciler.core import offsets_rules as rules
from reconciler.core.offsets_rules import OffsetsProblem, check_request, parse_sink_offset, parse_sink_partition

P = ("offsets", 0, "partition")
O = ("offsets", 0, "offset")


def alter(*entries: object) -> dict[str, object]:
    return {"id": "x", "action": "alter", "offsets": list(entries)}


def entry(partition: object, offset: object = None) -> dict[str, object]:
    return {"partition": partition, "offset": offset}


SINK_CASES = [
    # (body, expected [(path, message)]) — Connect's OffsetsApiIntegrationTest invalid sink bodies.
    ({"id": "x", "action": "alter"}, [(("offsets",), rules.ALTER_NEEDS_OFFSETS)]),
    (alter(), [(("offsets",), rules.ALTER_NEEDS_OFFSETS)]),
    ({"id": "x", "action": "alter", "offsets": None}, [(("offsets",), rules.ALTER_NEEDS_OFFSETS)]),
    (alter({}), [(P, rules.SINK_PARTITION_MISSING)]),
    (alter(entry(None)), [(P, rules.SINK_PARTITION_MISSING)]),
    (alter(entry({})), [(P, rules.SINK_PARTITION_KEYS)]),
    (alter(entry({"kafka_topic": "t"})), [(P, rules.SINK_PARTITION_KEYS)]),
    (alter(entry({"kafka_partition": 1})), [(P, rules.SINK_PARTITION_KEYS)]),
    (alter(entry({"kafka_topic": None, "kafka_partition": 1})), [((*P, "kafka_topic"), rules.SINK_TOPIC_NULL)]),
    (alter(entry({"kafka_topic": 12, "kafka_partition": 1})), [((*P, "kafka_topic"), rules.SINK_TOPIC_NULL)]),
    (alter(entry({"kafka_topic": "t", "kafka_partition": None})), [((*P, "kafka_partition"), rules.SINK_PARTITION_NULL)]),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": "not a number"})),
        [
            (
                (*P, "kafka_partition"),
                "Failed to parse the following Kafka partition value in the provided offsets: 'not a number'. "
                "Partition values for sink connectors need to be integers.",
            )
        ],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 1.0})),
        [((*P, "kafka_partition"), rules._bad_partition_message(1.0))],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": True})),
        [((*P, "kafka_partition"), rules._bad_partition_message(True))],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 2**31})),
        [((*P, "kafka_partition"), rules._bad_partition_message(2**31))],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": -1})),
        [((*P, "kafka_partition"), "Kafka partitions cannot be negative, got -1")],
    ),
    (alter(entry({"kafka_topic": "t", "kafka_partition": 1}, {})), [(O, rules.SINK_OFFSET_KEY)]),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 1}, {"kafka_offset": "not a number"})),
        [
            (
                (*O, "kafka_offset"),
                "Failed to parse the following Kafka offset value in the provided offsets: 'not a number'. "
                "Offset values for sink connectors need to be integers.",
            )
        ],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 1}, {"kafka_offset": None})),
        [((*O, "kafka_offset"), rules._bad_offset_message(None))],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 1}, {"kafka_offset": -5})),
        [((*O, "kafka_offset"), "Kafka offsets cannot be negative, got -5")],
    ),
    (
        alter(entry({"kafka_topic": "t", "kafka_partition": 1, "extra": 1}, {"kafka_offset": 1, "also": 2})),
        [
            ((*P, "extra"), "unexpected key in a sink connector partition: only 'kafka_topic' and 'kafka_partition' are allowed"),
            ((*O, "also"), "unexpected key in a sink connector offset: only 'kafka_offset' are allowed"),
        ],
    ),
    # Every entry is checked, not only the first.
    (
        alter(entry({}), entry({"kafka_topic": "t", "kafka_partition": 0}, {})),
        [(P, rules.SINK_PARTITION_KEYS), (("offsets", 1, "offset"), rules.SINK_OFFSET_KEY)],
    ),
    # Valid bodies: ints or int-valued strings (Connect accepts both), null offsets, reset.
    (alter(entry({"kafka_topic": "t", "kafka_partition": 0}, {"kafka_offset": 0})), []),
    (alter(entry({"kafka_topic": "t", "kafka_partition": "+3"}, {"kafka_offset": "9223372036854775807"})), []),
    (alter(entry({"kafka_topic": "t", "kafka_partition": 2}, None)), []),
    ({"id": "x", "action": "reset"}, []),
    ({"id": "x", "action": "reset", "offsets": []}, []),
    ({"id": "x", "action": "reset", "offsets": [entry({"a": 1})]}, [(("offsets",), rules.RESET_TAKES_NO_OFFSETS)]),
    # Shapes the schema reports are not reported twice here.
    ({"id": "x", "action": "rewind", "offsets": []}, []),
    ({"id": "x", "action": "alter", "offsets": {"not": "a list"}}, []),
    (alter("not a mapping", entry({"kafka_topic": "t", "kafka_partition": 0}, [1])), []),
]


@pytest.mark.parametrize(("body", "expected"), SINK_CASES)
def test_sink_bodies(body: dict[str, object], expected: list[tuple[tuple[object, ...], str]]) -> None:
    assert [(p.path, p.message) for p in check_request(body, sink=True)] == expected


SOURCE_CASES = [
    (alter(), [(("offsets",), rules.ALTER_NEEDS_OFFSETS)]),
    (alter({}), [(P, rules.SOURCE_PARTITION_MISSING)]),
    (alter(entry(None)), [(P, rules.SOURCE_PARTITION_MISSING)]),
    (alter(entry({})), [(P, rules.SOURCE_PARTITION_EMPTY)]),
    (
        alter(entry({"file": {"nested": 1}}, {"pos": [1, 2]})),
        [
            ((*P, "file"), "Offsets may only contain primitive types as values, but field file contains MAP"),
            ((*O, "pos"), "Offsets may only contain primitive types as values, but field pos contains ARRAY"),
        ],
    ),
    (alter(entry({1: "a"})), [((*P, 1), rules.STRING_KEYS_ONLY)]),
    # Source maps hold any primitives or null; an offset map may be empty; null offset = delete.
    (alter(entry({"file": "/a", "n": 1, "f": 1.5, "b": True, "z": None}, {"pos": 10})), []),
    (alter(entry({"file": "/a"}, {})), []),
    (alter(entry({"file": "/a"}, None)), []),
    # A sink's partition shape is just a partition map to a source connector.
    (alter(entry({"kafka_topic": "t"}, {"x": "y"})), []),
]


@pytest.mark.parametrize(("body", "expected"), SOURCE_CASES)
def test_source_bodies(body: dict[str, object], expected: list[tuple[tuple[object, ...], str]]) -> None:
    assert [(p.path, p.message) for p in check_request(body, sink=False)] == expected


@pytest.mark.parametrize(
    ("partition", "hint"),
    [
        ({"kafka_topic": "t", "kafka_partiton": 0}, "did you mean `kafka_partition` instead of `kafka_partiton`?"),
        ({"topic": "t", "kafka_partition": 0}, "did you mean `kafka_topic` instead of `topic`?"),
        ({"name": "t", "kafka_partition": 0}, "e.g. {kafka_topic: orders, kafka_partition: 0}"),  # no close key
        ({}, "e.g. {kafka_topic: orders, kafka_partition: 0}"),
    ],
)
def test_sink_partition_hints(partition: dict[str, object], hint: str) -> None:
    (problem,) = check_request(alter(entry(partition)), sink=True)
    assert problem.hint == hint


def test_problem_is_a_plain_tuple() -> None:
    assert OffsetsProblem(("a",), "m") == (("a",), "m", None)


@pytest.mark.parametrize(
    ("partition", "offset", "parsed"),
    [
        ({"kafka_topic": "t", "kafka_partition": 3}, {"kafka_offset": 7}, (("t", 3), 7)),
        ({"kafka_topic": "t", "kafka_partition": "4"}, {"kafka_offset": "-0"}, (("t", 4), 0)),
        ({"kafka_topic": "t", "kafka_partition": 0}, None, (("t", 0), None)),
    ],
)
def test_parse_sink_values(partition: dict[str, object], offset: dict[str, object] | None, parsed: object) -> None:
    assert (parse_sink_partition(partition), parse_sink_offset(offset)) == parsed


def test_parse_sink_values_refuses_what_connect_refuses() -> None:
    with pytest.raises(ValueError, match="need to be integers"):
        parse_sink_partition({"kafka_topic": "t", "kafka_partition": "1.5"})
    with pytest.raises(ValueError, match="need to be integers"):
        parse_sink_offset({"kafka_offset": 2**63})


def test_partition_order_is_by_field_then_number_then_text() -> None:
    """Tables list offsets in this order (Connect lists them in hash order)."""
    partitions: list[object] = [{"shard": 13}, {"shard": 5}, {"shard": 0}, {"shard": "x"}, {"file": "b"},
                                {"file": "a"}, {"kafka_topic": "t", "kafka_partition": 10}, {"kafka_topic": "t", "kafka_partition": 2}, None]
    assert sorted(partitions, key=rules.partition_order) == [
        None, {"file": "a"}, {"file": "b"}, {"kafka_topic": "t", "kafka_partition": 2},
        {"kafka_topic": "t", "kafka_partition": 10}, {"shard": 0}, {"shard": 5}, {"shard": 13}, {"shard": "x"},
    ]
