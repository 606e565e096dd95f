"""Connect's own rules for a KIP-875 offsets request body (`PATCH|DELETE /connectors/{n}/offsets`).

Pure: plain data in (as parsed from YAML or JSON), problems out. Each problem carries a path
relative to the request mapping (`{id, action, offsets}`), so callers can point at the exact
key or value. The manifest loader, the plan engine and the `offsets` command share these rules,
and the messages are Connect's own where Connect has one (docs/state-machine.md#alter-and-reset;
`SinkUtils.parseSinkConnectorOffsets`, `OffsetUtils.validateFormat`), so a body accepted here is
accepted by a real worker.

Connect stops at the first problem; we report every entry's problems together, but within one
partition (or offset) map only the first failing check, as Connect would.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import NamedTuple

Path = tuple[str | int, ...]
# A Kafka partition, as Connect's TopicPartition: (topic, partition number). Defined here, the
# lowest layer that names one; the plugin API (`connectors.api`) exports it to plugins.
TopicPartition = tuple[str, int]

KAFKA_TOPIC = "kafka_topic"
KAFKA_PARTITION = "kafka_partition"
KAFKA_OFFSET = "kafka_offset"

ALTER_NEEDS_OFFSETS = "Partitions / offsets need to be provided for an alter offsets request"
RESET_TAKES_NO_OFFSETS = "a reset request takes no `offsets` list (it resets every partition)"
SINK_PARTITION_MISSING = "The partition for a sink connector offset cannot be null or missing"
SINK_PARTITION_KEYS = (
    f"The partition for a sink connector offset must contain the keys '{KAFKA_TOPIC}' and '{KAFKA_PARTITION}'"
)
SINK_TOPIC_NULL = "Kafka topic names must be valid strings and may not be null"
SINK_PARTITION_NULL = "Kafka partitions must be valid numbers and may not be null"
SINK_OFFSET_KEY = f"The offset for a sink connector should either be null or contain the key '{KAFKA_OFFSET}'"
SOURCE_PARTITION_MISSING = "The partition for a source connector offset cannot be null or missing"
SOURCE_PARTITION_EMPTY = "The partition for a source connector offset must not be empty"
STRING_KEYS_ONLY = "Offsets may only use String keys"

_JAVA_INT_MAX = 2**31 - 1
_JAVA_LONG_MAX = 2**63 - 1
# Integer.parseInt / Long.parseLong accept an optional sign and ASCII digits, nothing else.
_JAVA_INTEGER = re.compile(r"[+-]?[0-9]+")

_SINK_PARTITION_EXAMPLE = f"e.g. {{{KAFKA_TOPIC}: orders, {KAFKA_PARTITION}: 0}}"


class OffsetsProblem(NamedTuple):
    """One problem in an offsets request; `path` is relative to the request mapping."""

    path: Path
    message: str
    hint: str | None = None


def check_request(body: Mapping[str, object], *, sink: bool) -> list[OffsetsProblem]:
    """Every problem in one request mapping (`action` + `offsets`), Connect's checks first.

    Shapes the schema already rejects (an unknown action, `offsets` not a list, an entry that
    is not a mapping) are skipped here rather than reported twice.
    """
    action = body.get("action")
    offsets = body.get("offsets")
    if action == "alter":
        if offsets is None or (isinstance(offsets, list) and not offsets):
            return [OffsetsProblem(("offsets",), ALTER_NEEDS_OFFSETS, "list the partitions to change")]
    elif action == "reset":
        if isinstance(offsets, list) and offsets:
            return [OffsetsProblem(("offsets",), RESET_TAKES_NO_OFFSETS, "use `action: alter` to set offsets")]
        return []
    else:
        return []
    if not isinstance(offsets, list):
        return []
    return check_entries(offsets, sink=sink, prefix=("offsets",))


def check_entries(entries: Sequence[object], *, sink: bool, prefix: Path = ()) -> list[OffsetsProblem]:
    """Problems in the `offsets` list of an alter request (each `{partition, offset}` entry)."""
    problems: list[OffsetsProblem] = []
    check = check_sink_entry if sink else check_source_entry
    for index, entry in enumerate(entries):
        if isinstance(entry, Mapping):
            problems.extend(p._replace(path=(*prefix, index, *p.path)) for p in check(entry))
    return problems


def check_sink_entry(entry: Mapping[str, object]) -> list[OffsetsProblem]:
    """`SinkUtils.parseSinkConnectorOffsets` for one entry, plus: no keys Connect would ignore."""
    problems: list[OffsetsProblem] = []
    partition = entry.get("partition")
    if partition is None:
        problems.append(OffsetsProblem(("partition",), SINK_PARTITION_MISSING, _SINK_PARTITION_EXAMPLE))
    elif isinstance(partition, Mapping):
        problems.extend(_sink_partition(partition))
    if "offset" in entry and isinstance(entry["offset"], Mapping):
        problems.extend(_sink_offset(entry["offset"]))
    return problems


def check_source_entry(entry: Mapping[str, object]) -> list[OffsetsProblem]:
    """`OffsetUtils.validateFormat` for the partition and offset maps of one source entry."""
    problems: list[OffsetsProblem] = []
    partition = entry.get("partition")
    if partition is None:
        problems.append(OffsetsProblem(("partition",), SOURCE_PARTITION_MISSING))
    elif isinstance(partition, Mapping):
        if not partition:
            problems.append(
                OffsetsProblem(
                    ("partition",),
                    SOURCE_PARTITION_EMPTY,
                    "a source partition names where data comes from, e.g. {filename: /data/in.txt}",
                )
            )
        problems.extend(_primitive_map(partition, ("partition",)))
    offset = entry.get("offset")
    if isinstance(offset, Mapping):
        problems.extend(_primitive_map(offset, ("offset",)))
    return problems


def parse_sink_partition(partition: Mapping[str, object]) -> TopicPartition:
    """(topic, partition) of a sink partition map already accepted by `check_sink_entry`."""
    value = partition[KAFKA_PARTITION]
    parsed = _java_integer(value, _JAVA_INT_MAX)
    if parsed is None:
        raise ValueError(_bad_partition_message(value))
    return str(partition[KAFKA_TOPIC]), parsed


def parse_sink_offset(offset: Mapping[str, object] | None) -> int | None:
    """The Kafka offset of a sink offset map accepted by `check_sink_entry` (None: delete it)."""
    if offset is None:
        return None
    value = offset[KAFKA_OFFSET]
    parsed = _java_integer(value, _JAVA_LONG_MAX)
    if parsed is None:
        raise ValueError(_bad_offset_message(value))
    return parsed


def _sink_partition(partition: Mapping[str, object]) -> list[OffsetsProblem]:
    here: Path = ("partition",)
    if KAFKA_TOPIC not in partition or KAFKA_PARTITION not in partition:
        hint = _missing_key_hint(partition, (KAFKA_TOPIC, KAFKA_PARTITION)) or _SINK_PARTITION_EXAMPLE
        return [OffsetsProblem(here, SINK_PARTITION_KEYS, hint)]
    topic = partition[KAFKA_TOPIC]
    if not isinstance(topic, str):
        quote = "quote the topic name" if topic is not None else None
        return [OffsetsProblem((*here, KAFKA_TOPIC), SINK_TOPIC_NULL, quote)]
    value = partition[KAFKA_PARTITION]
    if value is None:
        return [OffsetsProblem((*here, KAFKA_PARTITION), SINK_PARTITION_NULL)]
    number = _java_integer(value, _JAVA_INT_MAX)
    if number is None:
        return [OffsetsProblem((*here, KAFKA_PARTITION), _bad_partition_message(value))]
    if number < 0:
        return [OffsetsProblem((*here, KAFKA_PARTITION), f"Kafka partitions cannot be negative, got {number}")]
    return _unexpected_keys(partition, here, (KAFKA_TOPIC, KAFKA_PARTITION), "partition")


def _sink_offset(offset: Mapping[str, object]) -> list[OffsetsProblem]:
    here: Path = ("offset",)
    if KAFKA_OFFSET not in offset:
        hint = _missing_key_hint(offset, (KAFKA_OFFSET,)) or "use `offset: null` to delete the committed offset"
        return [OffsetsProblem(here, SINK_OFFSET_KEY, hint)]
    value = offset[KAFKA_OFFSET]
    number = _java_integer(value, _JAVA_LONG_MAX)
    if number is None:
        return [OffsetsProblem((*here, KAFKA_OFFSET), _bad_offset_message(value))]
    if number < 0:
        return [OffsetsProblem((*here, KAFKA_OFFSET), f"Kafka offsets cannot be negative, got {number}")]
    return _unexpected_keys(offset, here, (KAFKA_OFFSET,), "offset")


def _unexpected_keys(
    mapping: Mapping[str, object], here: Path, allowed: tuple[str, ...], what: str
) -> list[OffsetsProblem]:
    # Connect ignores extra keys; in a reviewed manifest they are almost always a mistake.
    allowed_text = " and ".join(f"'{key}'" for key in allowed)
    return [
        OffsetsProblem((*here, key), f"unexpected key in a sink connector {what}: only {allowed_text} are allowed")
        for key in mapping
        if key not in allowed
    ]


def _primitive_map(mapping: Mapping[object, object], here: Path) -> list[OffsetsProblem]:
    problems: list[OffsetsProblem] = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            problems.append(OffsetsProblem((*here, _path_key(key)), STRING_KEYS_ONLY, "quote the key"))
        elif value is not None and not isinstance(value, str | int | float | bool):
            message = (
                f"Offsets may only contain primitive types as values, but field {key} contains {_java_type(value)}"
            )
            problems.append(OffsetsProblem((*here, key), message, "use a string, number, boolean or null"))
    return problems


def _java_integer(value: object, maximum: int) -> int | None:
    """Java's `parseInt(String.valueOf(value))` / `parseLong(…)`: None when Java would throw."""
    if isinstance(value, bool):
        return None  # String.valueOf(true) is "true"
    if isinstance(value, int):
        number = value
    elif isinstance(value, str) and _JAVA_INTEGER.fullmatch(value):
        number = int(value)
    else:
        return None  # floats print as "1.0", which Java refuses
    return number if -maximum - 1 <= number <= maximum else None


def _bad_partition_message(value: object) -> str:
    return (
        f"Failed to parse the following Kafka partition value in the provided offsets: '{_java_str(value)}'. "
        "Partition values for sink connectors need to be integers."
    )


def _bad_offset_message(value: object) -> str:
    return (
        f"Failed to parse the following Kafka offset value in the provided offsets: '{_java_str(value)}'. "
        "Offset values for sink connectors need to be integers."
    )


def _missing_key_hint(mapping: Mapping[str, object], required: tuple[str, ...]) -> str | None:
    present = [key for key in mapping if isinstance(key, str) and key not in required]
    for key in required:
        if key in mapping:
            continue
        close = difflib.get_close_matches(key, present, n=1, cutoff=0.6)
        if close:
            return f"did you mean `{key}` instead of `{close[0]}`?"
    return None


def _java_str(value: object) -> str:
    """How Java's string concatenation prints a JSON value (for Connect-identical messages)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _java_type(value: object) -> str:
    if isinstance(value, Mapping):
        return "MAP"
    if isinstance(value, list | tuple):
        return "ARRAY"
    return f"class {type(value).__name__}"


def _path_key(key: object) -> str | int:
    return key if isinstance(key, str | int) else str(key)


def partition_order(partition: object) -> tuple[tuple[str, int, float, str], ...]:
    """A stable order for offsets entries (Connect lists them in its maps' hash order), what
    tables and generated manifests show: field by field, numbers by value (`shard` 2 before
    10), then anything else by its JSON text."""
    if not isinstance(partition, dict):
        return (("", 2, 0.0, json.dumps(partition, sort_keys=True)),)
    return tuple(
        (str(key), 0, float(value), "") if isinstance(value, int | float) and not isinstance(value, bool)
        else (str(key), 1, 0.0, json.dumps(value, sort_keys=True))
        for key, value in sorted(partition.items())
    )
