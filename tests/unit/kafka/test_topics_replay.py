"""The one read model's replay (`kafka.replay.topics`): a view built after incremental reads
equals the one a read from offset 0 builds, on random record sequences of all three topics
(catalogues of ordinary and odd records, tests/unit/kafka/test_replay_feed.py), with views built
in between as a long-running `run`/`watch` builds them."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from reconciler import masking
from reconciler.kafka.formats import records as rec
from reconciler.core.transitions import PendingRestart
from reconciler.kafka.formats.own_records import connector_failed_record as failure_mark_record
from reconciler.kafka.formats.own_records import restart_processed_record as processed_record
from reconciler.kafka.formats.own_records import runtime_started_record as started_record
from reconciler.kafka.settings import Topics
from reconciler.kafka.replay.status import StatusReplay
from reconciler.kafka.replay.topics import StoreView, TopicsReplay, connector_names
from test_replay_feed import CONFIG_KEYS, CONFIG_VALUES, STATUS_KEYS, STATUS_VALUES, Msg, _status_view

TOPICS = Topics.for_group("g")
OURS: list[tuple[bytes | None, bytes | None]] = [
    (b"owner/a", b'{"owner":"connect-reconciler","created-by-plan":"p1"}'),
    (b"owner/a", None),
    (b"applied/restart/a/r1", b'{"applied-at":5}'),
    (b"applied/offsets/b/o1", b'{"applied-at":6}'),
    (b"offsets-progress/a", b'{"id":"o2","step":"alter","connector-confirmed":true}'),
    (b"offsets-progress/a", None),
    (b"offsets-snapshot/a/o2", b'{"offsets":[{"partition":{"p":1},"offset":{"o":1}}],"taken-at":7}'),
    (b"sensitive/a", b'{"keys":["k"]}'),
    (b"sensitive/x-y", None),
    (started_record(3).key, started_record(3).value),
    (processed_record("a", 4, 9).key, processed_record("a", 4, 9).value),
    (processed_record("a", 4, 9).key, None),
    (failure_mark_record("b", 2, "boom").key, failure_mark_record("b", 2, "boom").value),
    (failure_mark_record("b", 2, "boom").key, None),
    (b"weird", b"{}"),
]
# Well-formed status records only: what the status topic mostly holds.
PLAIN_STATUSES = [
    b'{"state":"%s","trace":null,"worker_id":"w:1","generation":%d}' % (state, gen)
    for state in (b"RUNNING", b"UNASSIGNED", b"PAUSED", b"FAILED")
    for gen in (0, 1, 2)
]


def _records(rng: random.Random, n: int, statuses: list[bytes | None]) -> list[tuple[str, Msg]]:
    """`n` records over the three topics, each topic's offsets counting from 0 (5% negative)."""
    out: list[tuple[str, Msg]] = []
    offsets = dict.fromkeys((TOPICS.configs, TOPICS.status, TOPICS.reconciler), 0)
    for _ in range(n):
        topic = rng.choice(list(offsets))
        if topic == TOPICS.configs:
            key, value = rng.choice(CONFIG_KEYS), rng.choice(CONFIG_VALUES)
        elif topic == TOPICS.status:
            key, value = rng.choice(STATUS_KEYS[:8]), rng.choice(statuses)
        else:
            key, value = rng.choice(OURS)
        out.append((topic, Msg(key, value, -1 if rng.random() < 0.05 else offsets[topic])))
        offsets[topic] += 1
    return out


def _runs(records: list[tuple[str, Msg]]) -> list[tuple[str, list[Msg]]]:
    return [(topic, [m for _, m in run]) for topic, run in itertools.groupby(records, key=lambda r: r[0])]


def _full(records: list[tuple[str, Msg]], task_configs: bool) -> StoreView:
    replay = TopicsReplay(TOPICS)
    for topic, run in _runs(records):
        replay.feed(topic, run)
    return replay.view("g", task_configs=task_configs)


def _dump(view: StoreView) -> dict[str, Any]:
    return {**view.__dict__, "live": view.live.model_dump()}


@pytest.mark.parametrize("seed", range(150))
def test_incremental_reads_equal_a_full_read(seed: int) -> None:
    rng = random.Random(seed)
    statuses = PLAIN_STATUSES if seed % 2 else STATUS_VALUES
    records = _records(rng, rng.choice((10, 80, 300)), statuses)
    task_configs = seed % 3 != 0
    replay = TopicsReplay(TOPICS)
    cuts = sorted(rng.sample(range(len(records)), k=min(4, len(records))))
    for a, b in itertools.pairwise([0, *cuts, len(records)]):
        for topic, run in _runs(records[a:b]):
            replay.feed(topic, run)
        replay.view("g", task_configs=rng.random() < 0.7 or task_configs)  # what a tick reads in between
    incremental = replay.view("g", task_configs=task_configs)
    full = _full(records, task_configs)
    assert incremental == full
    assert _dump(incremental) == _dump(full)


def test_a_view_with_nothing_fed_since_is_the_same_value() -> None:
    replay = TopicsReplay(TOPICS)
    replay.feed(TOPICS.configs, [Msg(b"connector-a", b'{"properties":{"k":"v"}}', 0)])
    first = replay.view("g")
    assert replay.view("g") is first
    assert replay.view("g", task_configs=False) is not first
    replay.feed(TOPICS.status, [Msg(b"status-connector-a", PLAIN_STATUSES[0], 0)])
    second = replay.view("g")
    assert second is not first and second.live.connectors["a"].connector_status is not None


def test_only_the_connectors_read_about_are_built_again() -> None:
    replay = TopicsReplay(TOPICS)
    replay.feed(TOPICS.configs, [Msg(f"connector-{n}".encode(), b'{"properties":{}}', i) for i, n in enumerate("abc")])
    before = replay.view("g").live.connectors
    replay.feed(TOPICS.status, [Msg(b"status-task-b-0", PLAIN_STATUSES[0], 0)])
    after = replay.view("g").live.connectors
    assert after["a"] is before["a"] and after["c"] is before["c"]
    assert after["b"] is not before["b"] and 0 in after["b"].task_statuses


def test_the_runtime_marks_and_offsets_records_come_with_the_view() -> None:
    replay = TopicsReplay(TOPICS)
    restart = rec.restart_record("a", include_tasks=True, only_failed=False)
    replay.feed(TOPICS.configs, [
        Msg(b"connector-a", b'{"properties":{}}', 0),
        Msg(restart.key, restart.value, 1),
        Msg(b"commit-a", b'{"tasks":0}', 2),
    ])
    replay.feed(TOPICS.reconciler, [Msg(key, value, i) for i, (key, value) in enumerate(OURS)])
    view = replay.view("g")
    assert view.config_end == 3 and view.config_offsets == {"a": 0}
    assert view.first_tick is False  # `runtime-started` at 3: the restart at 1 predates the runtime,
    # but our apply recorded a restart id for it and no tick processed one (the mark is gone)
    assert view.pending_restarts == {"a": PendingRestart(True, False, 1)}
    assert view.failures == {} and view.pending_fencing == frozenset({"a"})
    assert "a" not in view.progress and view.snapshot("a", "o2") == [{"partition": {"p": 1}, "offset": {"o": 1}}]
    assert view.applied_offsets == {"b": {"o1": 6}}
    assert view.live.is_applied("a", "restart", "r1")


def test_contiguous_offsets_are_tracked_up_to_the_first_gap() -> None:
    replay = TopicsReplay(TOPICS)
    replay.feed(TOPICS.configs, [Msg(b"connector-a", b'{"properties":{}}', o) for o in (0, 1, 2)])
    assert replay.contiguous_end == 3
    replay.feed(TOPICS.configs, [Msg(b"connector-a", b'{"properties":{}}', o) for o in (3, 5, 6)])  # 4: a marker
    assert replay.contiguous_end == 4 and replay.config_records == 6
    replay.feed(TOPICS.configs, [Msg(b"connector-a", b'{"properties":{}}', 7)])
    assert replay.contiguous_end == 4


def test_connector_names_of_records() -> None:
    config = [Msg(k, None, 0) for k in (b"task-x-y-0", b"connector-a", b"commit-b", b"target-state-c", b"session-key")]
    assert connector_names(TOPICS.configs, TOPICS, config) == {"x-y", "a", "b", "c"}
    status = [Msg(k, None, 0) for k in (b"status-task-d-1", b"status-connector-e", b"status-topic-t:connector-f")]
    assert connector_names(TOPICS.status, TOPICS, status) == {"d", "e"}
    ours = [Msg(k, None, 0) for k in (b"sensitive/g", b"applied/restart/h/1", b"runtime-started")]
    assert connector_names(TOPICS.reconciler, TOPICS, ours) == {"g", "h"}


def test_secrets_of_connectors_built_again_are_remembered() -> None:
    masking.forget_all()
    replay = TopicsReplay(TOPICS)
    replay.feed(TOPICS.configs, [Msg(b"connector-a", b'{"properties":{"db.password":"hunter22"}}', 0)])
    replay.view("g")
    replay.feed(TOPICS.configs, [Msg(b"connector-b", b'{"properties":{"db.password":"letmein1"}}', 1)])
    replay.view("g")
    assert {"hunter22", "letmein1"} <= masking.known()


@pytest.mark.parametrize("seed", range(150))
def test_status_runs_fed_equal_applying_every_record(seed: int) -> None:
    """Runs of well-formed statuses only (the common case), fed in chunks: the state applying them gives."""
    rng = random.Random(seed)
    topic_key, topic_value = b"status-topic-t:connector-a", b'{"topic":{"name":"t","connector":"a","task":0,"discoverTimestamp":5}}'
    records = []
    for offset in range(rng.choice((5, 40, 200))):
        if rng.random() < 0.03:
            records.append(Msg(topic_key, topic_value, offset))
        else:
            records.append(Msg(rng.choice(STATUS_KEYS[: rng.choice((2, 8))]), rng.choice(PLAIN_STATUSES), offset))
    reference, fed = StatusReplay(), StatusReplay()
    for m in records:
        reference.apply(m.k, m.v, m.o)
    cuts = sorted(rng.sample(range(len(records)), k=min(3, len(records))))
    for a, b in itertools.pairwise([0, *cuts, len(records)]):
        fed.feed(records[a:b])
    assert _status_view(fed) == _status_view(reference)
