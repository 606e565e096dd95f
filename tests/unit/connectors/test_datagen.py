"""datagen: config validation, determinism, unique ids, the count limit, task shares, speed."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

import pytest

from reconciler.connectors.api import (
    ConfigProblem,
    InvalidConnectorConfig,
    OffsetsRefused,
    PartitionKey,
    SourceOffset,
    partition_key,
)
from reconciler.connectors.datagen import DatagenConnector, DatagenTask

BASE = {"name": "gen", "connector.class": "datagen", "tasks.max": "1", "topic": "orders"}


def config(**overrides: str) -> dict[str, str]:
    return {**BASE, "count": "1000", **overrides}


def run_to_end(
    task: DatagenTask, committed: dict[PartitionKey, SourceOffset], max_records: int
) -> list[tuple[bytes | None, bytes | None]]:
    """Poll like the runtime does: feed each batch's offsets back as committed."""
    produced: list[tuple[bytes | None, bytes | None]] = []
    while True:
        batch = task.poll_batch(committed, max_records)
        if batch.is_empty:
            return produced
        assert set(batch.topics) == {"orders"}
        produced.extend(zip(batch.keys, batch.values, strict=True))
        committed.update(batch.offsets)


def ids_of(records: list[tuple[bytes | None, bytes | None]]) -> list[int]:
    ids = []
    for key, value in records:
        assert key is not None and value is not None
        assert json.loads(value)["id"] == int(key)
        ids.append(int(key))
    return ids


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"topic": ""}, ConfigProblem("topic", "is required")),
        ({"count": "lots"}, ConfigProblem("count", "must be an integer; got 'lots'")),
        ({"count": "-5"}, ConfigProblem("count", "must be at least 0; got -5")),
        ({"record.bytes": "-1"}, ConfigProblem("record.bytes", "must be at least 0; got -1")),
        ({"batch.size": "0"}, ConfigProblem("batch.size", "must be at least 1; got 0")),
        ({"shards": "x"}, ConfigProblem("shards", "must be an integer; got 'x'")),
    ],
)
def test_validate_names_the_bad_key(bad: dict[str, str], expected: ConfigProblem) -> None:
    assert DatagenConnector().validate(config(**bad)) == [expected]


def test_validate_requires_count() -> None:
    assert DatagenConnector().validate(BASE) == [ConfigProblem("count", "is required (an integer)")]


def test_valid_config_has_no_problems() -> None:
    assert DatagenConnector().validate(config(**{"record.bytes": "0"})) == []


def test_task_refuses_an_invalid_config() -> None:
    with pytest.raises(InvalidConnectorConfig, match="`count`"):
        DatagenTask({"topic": "t"})


def test_one_task_produces_every_id_once_then_stops() -> None:
    [task_config] = DatagenConnector().task_configs(config(count="1000"), 1)
    records = run_to_end(DatagenTask(task_config), {}, 97)
    assert sorted(ids_of(records)) == list(range(1000))


@pytest.mark.parametrize("tasks", [1, 2, 3, 16, 40])
def test_tasks_split_the_ids_without_overlap(tasks: int) -> None:
    configs = DatagenConnector().task_configs(config(count="1001"), tasks)
    assert len(configs) == min(tasks, 16)  # never more tasks than shards
    committed: dict[PartitionKey, SourceOffset] = {}
    all_ids = []
    for task_config in configs:
        all_ids += ids_of(run_to_end(DatagenTask(task_config), committed, 100))
    assert sorted(all_ids) == list(range(1001))


def test_changing_tasks_max_midway_neither_repeats_nor_skips() -> None:
    connector = DatagenConnector()
    committed: dict[PartitionKey, SourceOffset] = {}
    produced: list[int] = []
    for task_config in connector.task_configs(config(count="500"), 2):
        batch = DatagenTask(task_config).poll_batch(committed, 60)
        produced += ids_of(list(zip(batch.keys, batch.values, strict=True)))
        committed.update(batch.offsets)
    for task_config in connector.task_configs(config(count="500"), 3):
        produced += ids_of(run_to_end(DatagenTask(task_config), committed, 50))
    assert sorted(produced) == list(range(500))


def test_raising_count_later_continues_where_it_stopped() -> None:
    committed: dict[PartitionKey, SourceOffset] = {}
    [first] = DatagenConnector().task_configs(config(count="300"), 1)
    produced = ids_of(run_to_end(DatagenTask(first), committed, 1000))
    [second] = DatagenConnector().task_configs(config(count="700"), 1)
    produced += ids_of(run_to_end(DatagenTask(second), committed, 1000))
    assert sorted(produced) == list(range(700))


def test_same_committed_offsets_give_the_same_batch() -> None:
    [task_config] = DatagenConnector().task_configs(config(count="5000"), 1)
    committed = {partition_key({"shard": 3}): {"position": 10}}
    first = DatagenTask(task_config).poll_batch(committed, 400)
    again = DatagenTask(task_config).poll_batch(dict(committed), 400)
    assert first == again
    assert len(first) == 400


def test_batch_size_caps_a_poll() -> None:
    [task_config] = DatagenConnector().task_configs(config(**{"batch.size": "10"}), 1)
    assert len(DatagenTask(task_config).poll_batch({}, 1000)) == 10


def test_zero_count_produces_nothing() -> None:
    [task_config] = DatagenConnector().task_configs(config(count="0"), 1)
    assert DatagenTask(task_config).poll_batch({}, 100).is_empty


@pytest.mark.parametrize("record_bytes", [0, 50, 100, 1000])
def test_values_are_json_of_about_record_bytes(record_bytes: int) -> None:
    [task_config] = DatagenConnector().task_configs(
        config(count="100000", **{"record.bytes": str(record_bytes), "shards": "1"}), 1
    )
    batch = DatagenTask(task_config).poll_batch({partition_key({"shard": 0}): {"position": 99_990}}, 10)
    sizes = {len(v) for v in batch.values if v is not None}
    assert max(sizes) == max(record_bytes, len(b'{"id":99999,"payload":""}'))
    for value in batch.values:
        assert value is not None and set(json.loads(value)) == {"id", "payload"}


def test_offsets_are_positions_per_shard() -> None:
    [task_config] = DatagenConnector().task_configs(config(count="40", shards="4"), 1)
    batch = DatagenTask(task_config).poll_batch({}, 15)
    assert batch.offsets == {partition_key({"shard": 0}): {"position": 10}, partition_key({"shard": 1}): {"position": 5}}
    assert ids_of(list(zip(batch.keys, batch.values, strict=True))) == [0, 4, 8, 12, 16, 20, 24, 28, 32, 36, 1, 5, 9, 13, 17]


SINK_SHAPED = partition_key({"kafka_topic": "orders", "kafka_partition": 0})


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ({SINK_SHAPED: {"position": 1}}, "Partition objects should contain the key 'shard' and no other; "
         'got {"kafka_partition": 0, "kafka_topic": "orders"}'),
        ({'{"shard":1,"task":0}': {"position": 1}}, "should contain the key 'shard' and no other"),
        ({'{"shard":16}': {"position": 1}}, "should be between 0 and 15 (the connector's shards is 16); got 16"),
        ({'{"shard":-1}': {"position": 1}}, "should be between 0 and 15"),
        ({'{"shard":true}': {"position": 1}}, "The value for the 'shard' key in the partition is expected to be an Integer"),
        ({'{"shard":"1"}': {"position": 1}}, "expected to be an Integer value"),
        ({'{"shard":1}': {"kafka_offset": 1}}, "Offset objects should either be null or contain the key 'position'"),
        ({'{"shard":1}': {"position": -1}}, "The value for the 'position' key in the offset should be a non-negative value"),
        ({'{"shard":1}': {"position": "3"}}, "The value for the 'position' key in the offset is expected to be a Long"),
        ({'{"shard":1}': {"position": 3.0}}, "expected to be a Long value"),
    ],
)
def test_validate_offsets_refuses_what_no_task_would_read(
    offsets: Mapping[PartitionKey, SourceOffset | None], message: str
) -> None:
    with pytest.raises(OffsetsRefused, match=re.escape(message)):
        DatagenConnector().validate_offsets(config(), offsets)


def test_validate_offsets_uses_the_connectors_shard_count() -> None:
    DatagenConnector().validate_offsets(config(shards="32"), {'{"shard":31}': {"position": 1}})
    with pytest.raises(OffsetsRefused, match=re.escape("between 0 and 1 (the connector's shards is 2); got 2")):
        DatagenConnector().validate_offsets(config(shards="2"), {'{"shard":2}': {"position": 1}})


def test_validate_offsets_accepts_what_a_task_reads_and_any_tombstone() -> None:
    offsets: dict[PartitionKey, SourceOffset | None] = {
        '{"shard":0}': {"position": 0},
        '{"shard":15}': {"position": 10**9},  # past the stripe's end: done (a larger count extends it)
        '{"shard":3}': {"position": 3, "note": "x"},  # a task reads `position` alone
        SINK_SHAPED: None,  # a tombstone removes any stray offset, as in Connect
        '{"shard":99}': None,
    }
    DatagenConnector().validate_offsets(config(), offsets)
    # Nothing outside the offsets topic to change: True, as Connect asks of a validating connector.
    assert DatagenConnector().alter_offsets(config(), offsets) is True
    # The extra key is really ignored: the stripe resumes at its position.
    task = DatagenTask(DatagenConnector().task_configs(config(shards="2", count="10"), 1)[0])
    committed: dict[PartitionKey, SourceOffset] = {'{"shard":1}': {"position": 3, "note": "x"}}
    assert sorted(ids_of(run_to_end(task, committed, 100))) == [0, 2, 4, 6, 7, 8, 9]


def test_one_task_makes_a_million_records_in_one_batch() -> None:
    """One poll can fill a whole benchmark batch (bench/throughput.py measures its speed; a
    timed assertion here would only measure the CI machine's load)."""
    [task_config] = DatagenConnector().task_configs(
        config(count="1000000", **{"batch.size": "1000000"}), 1
    )
    task = DatagenTask(task_config)
    batch = task.poll_batch({}, 1_000_000)
    assert len(batch) == 1_000_000
    assert len(set(batch.keys)) == 1_000_000  # every record its own id


@pytest.mark.parametrize("tasks", [1, 3])
def test_exhausted_exactly_when_a_poll_would_return_nothing(tasks: int) -> None:
    """`exhausted` (the runtime then runs no job for the task) agrees with `poll_batch` at
    every step: false while any of the task's stripes has ids left, true once none has, and
    false again when `count` grows; a config it cannot read says false (the task is polled)."""
    connector_config = config(count="50", shards="4", **{"tasks.max": str(tasks)})
    for task_config in DatagenConnector().task_configs(connector_config, tasks):
        task = DatagenTask(task_config)
        committed: dict[PartitionKey, SourceOffset] = {}
        while not DatagenTask.exhausted(task_config, committed):
            batch = task.poll_batch(committed, 7)
            assert not batch.is_empty
            committed.update(batch.offsets)
        assert task.poll_batch(committed, 7).is_empty
        grown = {**task_config, "count": "51"}  # id 50 lands in one task's stripe only
        assert DatagenTask.exhausted(grown, committed) == DatagenTask(grown).poll_batch(committed, 7).is_empty
    assert not DatagenTask.exhausted({**config(), "count": "many"}, {})
