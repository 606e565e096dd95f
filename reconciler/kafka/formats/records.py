"""Connect's internal-topic record formats, byte for byte (our own topic's: `own_records`).

Spec: docs/record-formats.md. Pure: keys and values in, bytes out (and back).
No Kafka client is imported here; the I/O layer produces the `Record`s built here and feeds the
bytes it consumes to `reconciler.kafka.replay`.

Encoding follows Java's `JsonConverter` (schemas disabled) on Jackson (`reconciler.kafka.formats.jackson`):
compact JSON, UTF-8, BMP characters not escaped and surrogates escaped, struct fields in schema
order, unset optional fields as `null`, a null value as a tombstone (`Record.value is None`,
never the bytes `null`). Offsets keys list a partition's fields in Java's `HashMap` order
(`reconciler.kafka.formats.javamap`), as Java re-serialises them.

Property maps (`{"properties":{…}}`) are written in the order the caller's mapping iterates.
Java writes a `HashMap` there, i.e. in an order no reader may rely on; we choose to preserve the
given order and `reconciler.kafka.formats.changes` passes properties sorted by key, so the same manifest
always produces the same bytes whatever the key order in the YAML.

Decoders are as tolerant as Java's readers (an int may be any JSON integer, a missing boolean is
false) and return `Invalid(reason)` instead of raising for anything Java would skip.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, NamedTuple

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.kafka.formats import jackson
from reconciler.kafka.formats.jackson import dumps as dumps
from reconciler.kafka.formats.jackson import java_double as java_double
from reconciler.kafka.formats.javamap import map_in_java_order


class TopicRole(enum.StrEnum):
    """Which internal topic a record belongs to; `KafkaSettings.topics` names each role's topic."""

    CONFIGS = "configs"
    STATUS = "status"
    OFFSETS = "offsets"
    RECONCILER = "reconciler"


# Config topic keys (KafkaConfigBackingStore). Keys are plain UTF-8 strings.
CONNECTOR_PREFIX: Final = "connector-"
TASK_PREFIX: Final = "task-"
COMMIT_PREFIX: Final = "commit-"
TARGET_STATE_PREFIX: Final = "target-state-"
RESTART_PREFIX: Final = "restart-connector-"
TASKS_FENCING_PREFIX: Final = "tasks-fencing-"
SESSION_KEY: Final = "session-key"
LOGGER_CLUSTER_PREFIX: Final = "logger-cluster-"
# Status topic keys (KafkaStatusBackingStore).
STATUS_CONNECTOR_PREFIX: Final = "status-connector-"
STATUS_TASK_PREFIX: Final = "status-task-"
STATUS_TOPIC_PREFIX: Final = "status-topic-"
STATUS_TOPIC_SEPARATOR: Final = ":connector-"

STATUS_STATES: Final = {s.value: s for s in InstanceState}
TARGET_STATES: Final = {s.value: s for s in ConnectTargetState}

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_TEXT_TYPES: Final = frozenset({str, type(None)})


@dataclass(frozen=True, slots=True)
class Record:
    """One record to produce: which topic (by role), key bytes, value bytes (None = tombstone)."""

    topic_role: TopicRole
    key: bytes
    value: bytes | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


@dataclass(frozen=True, slots=True)
class Invalid:
    """A value Java would skip, with why. `quiet`: Java skips it without logging."""

    reason: str
    quiet: bool = False


class RestartFlags(NamedTuple):
    include_tasks: bool
    only_failed: bool


# --- JSON, the way Jackson writes and reads it (`reconciler.kafka.formats.jackson`) ----------------------


def loads(data: bytes) -> object:
    """Parse bytes as Java's converter does (`jackson.loads`); `Invalid` when Java cannot."""
    try:
        return jackson.loads(data)
    except jackson.JsonError as exc:
        return Invalid(str(exc))


# --- small readers shared with the replays --------------------------------------------------------


def java_int(value: object) -> int | None:
    """Java's `intValue(Object)` on a schemaless JSON number: any integer, truncated to int32."""
    if type(value) is not int:  # bool is an int subclass in Python but a Boolean in Java
        return None
    if _INT32_MIN <= value <= _INT32_MAX:
        return value
    value &= 0xFFFFFFFF  # Java's (int) cast of a long keeps the low 32 bits
    return value - 2**32 if value > _INT32_MAX else value


def java_parse_int(text: str) -> int | None:
    """`Integer.parseInt`: optional sign, decimal digits (any script, like `Character.digit`)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isdecimal():
        return None
    number = int(text)
    return number if _INT32_MIN <= number <= _INT32_MAX else None


def parse_task_id(key: str, prefix: str) -> tuple[str, int] | None:
    """`<prefix><name>-<id>` the way Java's `parseTaskId` reads it (split on `-`, last = id)."""
    rest = key[len(prefix) :]
    cut = rest.rfind("-")
    if cut < 0:
        return None
    tail = rest[cut + 1 :]
    if tail.isascii() and tail.isdigit() and len(tail) < 10:  # the only shape Connect writes
        return rest[:cut], int(tail)
    if tail:
        number = java_parse_int(tail)
        return None if number is None else (rest[:cut], number)
    # Key ends with `-`: Java's String.split drops trailing empty strings, so the id is earlier.
    parts = key.split("-")
    while parts and not parts[-1]:
        parts.pop()
    skip = prefix.count("-")
    if len(parts) < skip + 2:
        return None
    number = java_parse_int(parts[-1])
    return None if number is None else ("-".join(parts[skip:-1]), number)


def java_string(value: object) -> str | None:
    """A non-string property value as text (Java keeps it as-is and fails later when parsing)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double(value) if math.isfinite(value) else repr(value)
    if isinstance(value, int):
        return str(value)
    return dumps(value).decode("utf-8")


def string_properties(props: dict[str, Any]) -> dict[str, str | None]:
    """Properties as Connect's `Map<String,String>` view (non-strings shown as their text).

    The normal case, all strings, is checked at C speed and returns the map itself (shared,
    not copied: replays replace property maps, never mutate them).
    """
    try:
        "".join(props.values())  # raises for anything that is not a string
        return props
    except TypeError:
        pass
    if set(map(type, props.values())) <= _TEXT_TYPES:  # strings and nulls
        return props
    return {key: java_string(value) for key, value in props.items()}


def properties_from_json(obj: object) -> dict[str, Any] | Invalid:
    if type(obj) is not dict:
        return Invalid("value is not a JSON object")
    props = obj.get("properties")
    if type(props) is not dict:
        return Invalid("'properties' field should be a map")
    return props


def target_state_from_json(obj: object) -> ConnectTargetState | Invalid:
    """Read rule (docs/state-machine.md#target-states): `state.v2` if it is a string, else `state`; an unknown name skips it all."""
    if type(obj) is not dict:
        return Invalid("target state is not a JSON object")
    chosen = obj.get("state.v2")
    if type(chosen) is not str:
        chosen = obj.get("state")
        if type(chosen) is not str:
            return Invalid("'state' field should be a string")
    state = TARGET_STATES.get(chosen)
    return Invalid(f"invalid target state {chosen!r}") if state is None else state


def restart_from_json(obj: object) -> RestartFlags | Invalid:
    if type(obj) is not dict:
        return Invalid("restart request is not a JSON object")
    include_tasks = obj.get("include-tasks")
    only_failed = obj.get("only-failed")
    return RestartFlags(include_tasks is True, only_failed is True)


def int_field_from_json(obj: object, field: str) -> int | Invalid:
    if type(obj) is not dict:
        return Invalid("value is not a JSON object")
    number = java_int(obj.get(field))
    return Invalid(f"'{field}' should be an integer") if number is None else number


StatusValue = tuple[str, str | None, str | None, int, str | None]  # state, trace, worker, generation, version


def status_from_json(obj: object) -> StatusValue | Invalid:
    """A status value as `KafkaStatusBackingStore.parse*Status` accepts it: a known state name
    (DESTROYED too), an integer generation, and strings or nulls for the rest."""
    if type(obj) is not dict:
        return Invalid("status is not a JSON object")
    state, trace, worker, version = obj.get("state"), obj.get("trace"), obj.get("worker_id"), obj.get("version")
    generation = java_int(obj.get("generation"))
    if type(state) is not str or state not in STATUS_STATES:
        return Invalid(f"invalid status state {state!r}")
    if generation is None:
        return Invalid("'generation' should be an integer")
    if any(not (field is None or type(field) is str) for field in (trace, worker, version)):
        return Invalid("'trace', 'worker_id' and 'version' should be strings")
    return state, trace, worker, generation, version


def to_instance_status(value: StatusValue) -> InstanceStatus:
    state, trace, worker, generation, version = value
    return InstanceStatus.model_construct(
        state=STATUS_STATES[state], trace=trace, worker_id=worker, generation=generation, version=version
    )


# --- config topic ---------------------------------------------------------------------------------


def text_key(key: str) -> bytes:
    return key.encode("utf-8")


def encode_properties(props: Mapping[str, str | None]) -> bytes:
    return dumps({"properties": dict(props)})


def encode_target_state(state: ConnectTargetState) -> bytes:
    """Both fields (write rule, docs/state-machine.md#target-states): STOPPED reads as PAUSED to a pre-3.5 worker."""
    legacy = ConnectTargetState.PAUSED if state is ConnectTargetState.STOPPED else state
    return dumps({"state": legacy.value, "state.v2": state.value})


def connector_config_record(name: str, props: Mapping[str, str | None]) -> Record:
    return Record(TopicRole.CONFIGS, text_key(CONNECTOR_PREFIX + name), encode_properties(props))


def connector_tombstone(name: str) -> Record:
    return Record(TopicRole.CONFIGS, text_key(CONNECTOR_PREFIX + name), None)


def task_config_record(name: str, task_id: int, props: Mapping[str, str | None]) -> Record:
    return Record(TopicRole.CONFIGS, text_key(f"{TASK_PREFIX}{name}-{task_id}"), encode_properties(props))


def commit_record(name: str, task_count: int) -> Record:
    return Record(TopicRole.CONFIGS, text_key(COMMIT_PREFIX + name), dumps({"tasks": task_count}))


def target_state_record(name: str, state: ConnectTargetState) -> Record:
    return Record(TopicRole.CONFIGS, text_key(TARGET_STATE_PREFIX + name), encode_target_state(state))


def target_state_tombstone(name: str) -> Record:
    return Record(TopicRole.CONFIGS, text_key(TARGET_STATE_PREFIX + name), None)


def restart_record(name: str, *, include_tasks: bool, only_failed: bool) -> Record:
    value = dumps({"include-tasks": include_tasks, "only-failed": only_failed})
    return Record(TopicRole.CONFIGS, text_key(RESTART_PREFIX + name), value)


def tasks_fencing_record(name: str, task_count: int) -> Record:
    return Record(TopicRole.CONFIGS, text_key(TASKS_FENCING_PREFIX + name), dumps({"task-count": task_count}))


def decode_properties(value: bytes) -> dict[str, str | None] | Invalid:
    """A `connector-…` or `task-…` value."""
    obj = loads(value)
    props = obj if isinstance(obj, Invalid) else properties_from_json(obj)
    return props if isinstance(props, Invalid) else string_properties(props)


def decode_commit(value: bytes) -> int | Invalid:
    obj = loads(value)
    return obj if isinstance(obj, Invalid) else int_field_from_json(obj, "tasks")


def decode_tasks_fencing(value: bytes) -> int | Invalid:
    obj = loads(value)
    return obj if isinstance(obj, Invalid) else int_field_from_json(obj, "task-count")


def decode_target_state(value: bytes) -> ConnectTargetState | Invalid:
    obj = loads(value)
    return obj if isinstance(obj, Invalid) else target_state_from_json(obj)


def decode_restart(value: bytes) -> RestartFlags | Invalid:
    obj = loads(value)
    return obj if isinstance(obj, Invalid) else restart_from_json(obj)


# --- status topic ---------------------------------------------------------------------------------


def encode_status(status: InstanceStatus) -> bytes:
    """Kafka 4.x's `STATUS_SCHEMA_V0`: state, trace, worker_id, generation, version (older
    workers ignore the last field; a null version is written as `null`, as Java does)."""
    return dumps(
        {
            "state": status.state.value,
            "trace": status.trace,
            "worker_id": status.worker_id,
            "generation": status.generation,
            "version": status.version,
        }
    )


def connector_status_record(name: str, status: InstanceStatus | None) -> Record:
    value = None if status is None else encode_status(status)
    return Record(TopicRole.STATUS, text_key(STATUS_CONNECTOR_PREFIX + name), value)


def task_status_record(name: str, task_id: int, status: InstanceStatus | None) -> Record:
    value = None if status is None else encode_status(status)
    return Record(TopicRole.STATUS, text_key(f"{STATUS_TASK_PREFIX}{name}-{task_id}"), value)


def decode_status(value: bytes) -> InstanceStatus | Invalid:
    obj = loads(value)
    parsed = obj if isinstance(obj, Invalid) else status_from_json(obj)
    return parsed if isinstance(parsed, Invalid) else to_instance_status(parsed)


# --- offsets topic --------------------------------------------------------------------------------


def encode_offset_key(connector: str, partition: Mapping[str, object]) -> bytes:
    """`["<name>",{…}]` as Java serialises it to look an offset up or write one from its REST
    API: the partition's fields in the order of a `HashMap` filled in `partition`'s order."""
    fields = jackson.primitive_map_json(map_in_java_order(partition))
    return jackson.jackson_text(f"[{jackson.encode_string(connector)},{fields}]")


def encode_offset_value(offset: Mapping[str, object]) -> bytes:
    """An offset map in the given order (a task's own map; Java never looks values up)."""
    return jackson.jackson_text(jackson.primitive_map_json(offset))


def offset_key_from_json(obj: object) -> tuple[str, dict[str, Any]] | Invalid:
    """`OffsetUtils.processPartitionKey`: `[string, map]`; `[name, null]` is skipped silently."""
    if type(obj) is not list:
        return Invalid("offsets key is not a JSON array")
    if len(obj) != 2:
        return Invalid(f"offsets key has {len(obj)} elements, expected 2")
    name, partition = obj
    if type(name) is not str:
        return Invalid("offsets key: first element is not a string")
    if type(partition) is not dict:
        quiet = partition is None
        return Invalid("offsets key: second element is not a map", quiet=quiet)
    return name, partition


def decode_offset_key(key: bytes) -> tuple[str, dict[str, Any]] | Invalid:
    obj = loads(key)
    return obj if isinstance(obj, Invalid) else offset_key_from_json(obj)


def decode_offset_value(value: bytes) -> dict[str, Any] | None | Invalid:
    """An offset as Java's reader returns it: None for `null` or empty bytes (a null offset, not
    a tombstone); `Invalid` where `OffsetUtils.validateFormat` fails (Java then leaves the
    partition out of `GET /connectors/{name}/offsets`)."""
    obj = loads(value)
    if obj is None or isinstance(obj, Invalid):
        return obj
    if type(obj) is not dict:
        return Invalid("offset value is not a JSON object")
    if any(isinstance(v, (dict, list)) for v in obj.values()):
        return Invalid("offset values must be primitives")
    return obj
