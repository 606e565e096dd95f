"""`feed` (the replays' fast bulk path) leaves exactly the state `apply` (the reference) leaves.

Random sequences over a catalogue of ordinary and odd records (tombstones, JSON `null`, values
Java would skip, malformed keys, names with dashes, invalid UTF-8…) are replayed both ways and
every observable of the replays and of the built live state is compared.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest
from record_encoders import Consumed as Msg

from reconciler.kafka.replay.live_build import TrustedConstructor
from reconciler.kafka.replay import ConfigReplay, ReconcilerReplay, StatusReplay, build_live_state

CONFIG_KEYS: list[bytes | None] = [
    *(f"connector-{n}".encode() for n in ("a", "b", "x-y")),
    *(f"task-{n}".encode() for n in ("a-0", "a-1", "a-2", "b-0", "x-y-0", "x-y-1", "a-01")),
    *(f"commit-{n}".encode() for n in ("a", "b", "x-y", "gone")),
    *(f"target-state-{n}".encode() for n in ("a", "b", "x-y")),
    b"task-a--1",
    b"task-a-",
    b"task-a-1234567890",
    "task-a-\u0663".encode(),
    b"task--0",
    b"task-a",
    b"restart-connector-a",
    b"tasks-fencing-a",
    b"session-key",
    b"logger-cluster-x",
    b"unknown-a",
    b"connector-",
    b"connector-\xff",
    b"task-\xe2-0",
    b"commit-\xff",
    None,
]
CONFIG_VALUES: list[bytes | None] = [
    b'{"properties":{"k":"v","name":"a"}}',
    b'{"properties":{"k":"w"}}',
    b'{"properties":{"n":1,"b":true,"z":null,"f":1.5,"o":{"x":[1]}}}',
    b'{"properties":{"s":"\\ud800"}}',
    b'{"properties":[]}',
    b'{"properties":null}',
    b'{"other":{}}',
    *(b'{"tasks":%d}' % n for n in (0, 1, 2, 3, -1)),
    b'{"tasks":"2"}',
    b'{"tasks":2.0}',
    b'{"tasks":4294967298}',
    b'{"tasks":true}',
    b'{"state":"PAUSED"}',
    b'{"state":"STARTED"}',
    b'{"state":"PAUSED","state.v2":"STOPPED"}',
    b'{"state":"BOGUS"}',
    b'{"state.v2":1,"state":"PAUSED"}',
    b'{"state.v2":"STARTED"}',
    b'{"include-tasks":true,"only-failed":false}',
    b'{"task-count":2}',
    b"null",
    b"[]",
    b'"\\ud800"',
    b"not json",
    b"",
    b"\xff",
    None,
    None,
    None,
    # what Jackson reads and strict JSON does not: whitespace only, trailing tokens, leading zeros
    b"  ",
    b'{"properties":{"k":"v"}} x',
    b'{"tasks":02}',
    b'{"state":"PAUSED"}}',
    b'{"tasks":NaN}',
]
STATUS_KEYS: list[bytes | None] = [
    *(f"status-connector-{n}".encode() for n in ("a", "b", "x-y")),
    *(f"status-task-{n}".encode() for n in ("a-0", "a-1", "b-0", "x-y-0", "a-01")),
    b"status-connector-",
    b"status-task--0",
    b"status-task-a-x",
    b"status-task-a-",
    b"status-task-a",
    b"status-topic-t:connector-a",
    b"status-topic-:connector-a",
    b"status-topic-t",
    b"unknown",
    b"status-task-\xe2-0",
    None,
]
STATUS_VALUES: list[bytes | None] = [
    *(
        b'{"state":"%s","trace":null,"worker_id":"w:1","generation":%d}' % (state, gen)
        for state in (b"RUNNING", b"UNASSIGNED", b"PAUSED")
        for gen in (0, 1, 2)
    ),
    b'{"state":"FAILED","trace":"boom\\n\\tat x","worker_id":"w:2","generation":3}',
    b'{"state":"RUNNING","worker_id":"w:1","generation":"1"}',
    b'{"state":"RUNNING","worker_id":"w:1","generation":4294967298}',
    b'{"state":"RUNNING","worker_id":null,"generation":1}',
    b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1,"version":"4.3.1"}',
    b'{"state":"DESTROYED","trace":null,"worker_id":"w","generation":1,"version":null}',
    b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":01} ',
    b"",
    b'{"state":"NOPE","worker_id":"w","generation":1}',
    b'{"state":"RUNNING","trace":"\\ud800","worker_id":"w","generation":1}',
    b'{"topic":{"name":"t","connector":"a","task":0,"discoverTimestamp":5}}',
    b"null",
    b"[]",
    b"nope",
    None,
    None,
]


def _records(rng: random.Random, keys: list[bytes | None], values: list[bytes | None], n: int) -> list[Msg]:
    # Few names, so records of one connector interleave as in a real topic. Timestamps mostly
    # rise, some run backwards (another partition's records read later) and some are unknown.
    return [
        Msg(
            rng.choice(keys),
            rng.choice(values),
            -1 if rng.random() < 0.05 else i,
            -1 if rng.random() < 0.05 else max(0, i * 10 - (rng.randrange(500) if rng.random() < 0.2 else 0)),
        )
        for i in range(n)
    ]


def _chunks(rng: random.Random, records: list[Msg]) -> list[list[Msg]]:
    cuts = sorted(rng.sample(range(len(records)), k=min(5, len(records))))
    return [records[a:b] for a, b in itertools.pairwise([0, *cuts, len(records)])]


def _config_view(r: ConfigReplay) -> dict[str, Any]:
    return {
        name: getattr(r, name)
        for name in (
            "configs",
            "target_states",
            "task_counts",
            "task_configs",
            "deferred",
            "inconsistent",
            "pending_fencing",
            "task_count_records",
            "task_config_generations",
            "restart_requests",
            "offset",
            "skipped",
            "problems",
        )
    } | {"visible": {n: r.visible_task_configs(n) for n in ("a", "b", "x-y", "gone")}}


def _status_view(r: StatusReplay) -> dict[str, Any]:
    return {name: getattr(r, name) for name in ("connectors", "tasks", "topics", "offset", "skipped", "problems")}


@pytest.mark.parametrize("seed", range(200))
def test_config_feed_equals_apply(seed: int) -> None:
    rng = random.Random(seed)
    records = _records(rng, CONFIG_KEYS, CONFIG_VALUES, rng.choice((5, 40, 200)))
    reference = ConfigReplay()
    for m in records:
        reference.apply(m.k, m.v, m.o)
    fed = ConfigReplay()
    for chunk in _chunks(rng, records):
        fed.feed(chunk)
    assert _config_view(fed) == _config_view(reference)


@pytest.mark.parametrize("seed", range(200))
def test_status_feed_equals_apply(seed: int) -> None:
    rng = random.Random(seed)
    records = _records(rng, STATUS_KEYS, STATUS_VALUES, rng.choice((5, 40, 200)))
    reference = StatusReplay()
    for m in records:
        reference.apply(m.k, m.v, m.o, m.t)
    fed = StatusReplay()
    for chunk in _chunks(rng, records):
        fed.feed(chunk)
    assert _status_view(fed) == _status_view(reference)


@pytest.mark.parametrize("seed", range(40))
def test_live_state_from_feed_equals_the_one_from_apply(seed: int) -> None:
    rng = random.Random(seed)
    configs = _records(rng, CONFIG_KEYS, CONFIG_VALUES, 300)
    statuses = _records(rng, STATUS_KEYS, STATUS_VALUES, 300)
    config, status = ConfigReplay(), StatusReplay()
    for m in configs:
        config.apply(m.k, m.v, m.o)
    for m in statuses:
        status.apply(m.k, m.v, m.o, m.t)
    fed_config, fed_status = ConfigReplay(), StatusReplay()
    fed_config.feed(configs)
    fed_status.feed(statuses)
    expected = build_live_state(config, status, ReconcilerReplay(), "g")
    actual = build_live_state(fed_config, fed_status, ReconcilerReplay(), "g")
    assert actual == expected
    assert actual.model_dump() == expected.model_dump()


def test_feed_keeps_the_last_non_negative_offset() -> None:
    replay = ConfigReplay()
    replay.feed([Msg(b"connector-a", b'{"properties":{}}', 7), Msg(b"commit-a", b'{"tasks":0}', -1)])
    assert replay.offset == 7


def test_trusted_constructor_builds_what_model_construct_builds() -> None:
    from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus, LiveConnector

    values: dict[str, Any] = {
        "name": "a",
        "config": {"k": "v"},
        "target_state": ConnectTargetState.PAUSED,
        "task_count": 1,
        "task_configs": [{"t": "1"}],
        "inconsistent": False,
        "connector_status": InstanceStatus(state=InstanceState.RUNNING),
        "task_statuses": {},
    }
    fast = TrustedConstructor(LiveConnector).build(dict(values))
    slow = LiveConnector.model_construct(**values)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_dump_json() == slow.model_dump_json()
    # A field it is not given (one added to the model later): model_construct's defaults.
    partial = TrustedConstructor(LiveConnector).build({"name": "b"})
    assert partial == LiveConnector.model_construct(name="b")


@pytest.mark.parametrize(
    ("task_ids", "count", "consistent"),
    [
        ((), 0, True),
        ((), -1, True),
        ((0, 1), 2, True),
        ((1, 0, 5), 2, True),  # stale higher ids (compaction) do not matter
        ((0,), 2, False),  # the highest id missing
        ((1,), 2, False),  # the lowest id missing
        ((0, 2), 2, False),
        ((), 1, False),
    ],
)
def test_commit_completeness(task_ids: tuple[int, ...], count: int, consistent: bool) -> None:
    records = [Msg(b"connector-a", b'{"properties":{}}', 0)]
    records += [Msg(f"task-a-{i}".encode(), b'{"properties":{"i":"%d"}}' % i, 1 + n) for n, i in enumerate(task_ids)]
    records.append(Msg(b"commit-a", b'{"tasks":%d}' % count, 99))
    fed, reference = ConfigReplay(), ConfigReplay()
    fed.feed(records)
    for m in records:
        reference.apply(m.k, m.v, m.o)
    expected = [{"i": str(i)} for i in range(count)] if consistent else []
    for replay in (fed, reference):
        assert ("a" not in replay.inconsistent) is consistent
        assert replay.visible_task_configs("a") == expected
