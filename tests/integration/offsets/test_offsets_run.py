"""Offsets requests end to end (acceptance cases B17–B24 and A12, docs/state-machine.md#acceptance-cases): manifest edits + run
ticks (what `reconciler run --once` does) on the real broker and the shared SparkSession, with a
`datagen` source → topic → `parquet-sink` pipeline; the data is checked, not just the records.

The "other Kafka cluster" variants of cases 14/15/18/21/23/24 are in test_offsets_other_cluster
(a second broker). Case 19 (zombie sink members) is in test_offsets_executor. Cases 13/16 (unknown connector → 404) are in
test_offsets_cli; a request for a connector that is not declared cannot be written (requests
live in the connector's own manifest). Case 17 differs by design: a RUNNING or PAUSED connector
is not refused but stopped first, and returned to its declared state afterwards.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any


from reconciler.app.tick import TickReport
from reconciler.core.plan import ActionKind
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.offsets import model
from reconciler.kafka.io.store import read_view
from reconciler.offsets.state import current_body
from offsets_support import child_env
from run_support import Pipeline, ids, parquet_keys, pipeline, topic_keys

__all__ = ["pipeline"]  # the fixture

COUNT = 600  # datagen ids: 1 task × 150 per batch → 4 source ticks


def sink_name(pipeline: Pipeline) -> str:
    """Unique per test: the consumer group `connect-<name>` is broker-wide, unlike the topics."""
    return "sink-" + pipeline.settings.group_id[-8:]


def declare(pipeline: Pipeline, out: Path, *, sink: dict[str, Any] | None = None) -> str:
    topic = pipeline.topic("orders", 2)
    pipeline.connector("src", "datagen", {"topic": topic, "count": COUNT, "record.bytes": 40, "shards": 2})
    pipeline.connector(sink_name(pipeline), "parquet-sink", {"topics": topic, "path": str(out), "flush.records": 50, **(sink or {})})
    return topic


def drain(pipeline: Pipeline, out: Path, max_ticks: int = 8) -> None:
    reports = []
    for _ in range(max_ticks):
        if sum(parquet_keys(out).values()) >= COUNT:
            break
        reports.append(pipeline.tick())
    assert parquet_keys(out) == ids(COUNT), tasks_by_tick(reports)


def tasks_by_tick(reports: list[TickReport]) -> str:
    """Each tick's tasks as (connector, task, state, records moved, trace): what a failed drain shows."""
    return "\n".join(
        f"tick {n}: " + "; ".join(
            f"{c.name}/{t.task} {t.state and t.state.value} ran={t.ran} moved={t.records} {t.trace or ''}".strip()
            for c in report.connectors for t in c.tasks
        )
        for n, report in enumerate(reports, 1)
    )


def files(out: Path, topic: str, partition: int) -> list[tuple[int, int]]:
    """(first, last) offsets of the dataset's files of one partition (superseded ones excluded)."""
    folder = out / f"topic={topic}" / f"partition={partition}"
    ranges = []
    for file in folder.glob("*.parquet"):
        start, end = file.name.rsplit("+", 1)[1].removesuffix(".parquet").split("-")
        ranges.append((int(start), int(end)))
    return sorted(ranges)


def sink_alter(request_id: str, topic: str, **offsets: int | None) -> dict[str, Any]:
    entries = [
        {"partition": {"kafka_topic": topic, "kafka_partition": int(p.removeprefix("p"))},
         "offset": None if o is None else {"kafka_offset": o}}
        for p, o in offsets.items()
    ]
    return {"id": request_id, "action": "alter", "offsets": entries}


def test_sink_rewind_redelivers_exactly_the_rewound_range(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 18: alter after stop; resumed from the altered offsets; unmentioned partitions keep theirs."""
    out = tmp_path / "parquet"
    topic = declare(pipeline, out)
    drain(pipeline, out)
    ends = sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}")
    assert set(ends) == {(topic, 0), (topic, 1)}
    before_p1 = files(out, topic, 1)

    pipeline.set(sink_name(pipeline), offsets=sink_alter("rewind-1", topic, p0=100))
    report = pipeline.tick()
    # What `run` prints: the plan shows the partition moving from its committed offset to 100.
    assert report.applied is not None
    (action,) = [a for a in report.applied.plan.actions if a.kind is ActionKind.OFFSETS]
    assert [e.offset for e in action.current_offsets or []] == [{"kafka_offset": ends[(topic, 0)]}]
    (outcome,) = report.offsets
    assert (outcome.status, outcome.message) == ("applied", "The offsets for this connector have been altered successfully")
    assert outcome.steps == ("stop", "snapshot", "alter", "return")
    # Same tick: back RUNNING, and partition 0 written again from offset 100 — once.
    assert pipeline.states(sink_name(pipeline))[0] == "RUNNING"
    assert parquet_keys(out) == ids(COUNT)
    p0 = files(out, topic, 0)
    assert p0[0][0] == 0 and any(start == 100 for start, _ in p0)  # the head kept, the rest re-written
    assert [start for start, _ in p0] == sorted({start for start, _ in p0})  # no overlapping files
    assert files(out, topic, 1) == before_p1  # augment only
    assert sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}") == ends
    assert read_view(pipeline.settings).snapshot(sink_name(pipeline), "rewind-1") == model.sink_body(ends)

    # Applied once: the next ticks leave it alone (the file stays in git).
    report = pipeline.tick()
    assert report.offsets == [] and parquet_keys(out) == ids(COUNT)


def test_sink_null_offset_redelivers_the_whole_partition_in_an_overridden_group(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 18 with `consumer.override.group.id` and `offset: null` (no committed offset: from the start)."""
    out = tmp_path / "parquet"
    group = f"{pipeline.settings.group_id}-archive"
    topic = declare(pipeline, out, sink={"consumer.override.group.id": group})
    drain(pipeline, out)
    ends = sink_group_offsets(pipeline.settings, group)
    assert sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}") == {}

    pipeline.set(sink_name(pipeline), offsets=sink_alter("drop-1", topic, p1=None))
    (outcome,) = pipeline.tick().offsets
    assert outcome.status == "applied", outcome.render()
    assert parquet_keys(out) == ids(COUNT)
    assert files(out, topic, 1)[0][0] == 0
    assert sink_group_offsets(pipeline.settings, group) == ends


def test_sink_reset_twice_redelivers_everything_once_each_time(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 23: reset after stop deletes the group; a repeated reset succeeds."""
    out = tmp_path / "parquet"
    declare(pipeline, out)
    drain(pipeline, out)
    ends = sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}")
    for request_id in ("reset-1", "reset-2"):
        pipeline.set(sink_name(pipeline), offsets={"id": request_id, "action": "reset"})
        (outcome,) = pipeline.tick().offsets
        assert (outcome.status, outcome.message) == ("applied", "The offsets for this connector have been reset successfully")
        assert parquet_keys(out) == ids(COUNT)
        assert sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}") == ends
        assert pipeline.states(sink_name(pipeline))[0] == "RUNNING"


def positions(pipeline: Pipeline) -> dict[int, int]:
    """datagen's committed source offsets: shard → position (ids produced from that stripe)."""
    return {e["partition"]["shard"]: e["offset"]["position"] for e in current_body(pipeline.settings, "src", {})}


def stripes(upto: dict[int, int], start: dict[int, int] | None = None) -> Counter[bytes]:
    """The datagen ids of stripes (2 shards) from `start` (default 0) up to the positions `upto`."""
    begin = start or {}
    return Counter(b"%d" % (shard + 2 * k) for shard, end in upto.items() for k in range(begin.get(shard, 0), end))


def test_source_reset_starts_from_scratch_and_repeats(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 24: reset after stop; the resumed source starts from scratch; a repeated reset succeeds."""
    out = tmp_path / "parquet"
    topic = declare(pipeline, out)
    pipeline.set(sink_name(pipeline), state="stopped")
    pipeline.tick()
    before = positions(pipeline)
    assert topic_keys(pipeline.settings, topic) == stripes(before) and all(before.values())

    expected = stripes(before)
    for request_id in ("reset-1", "reset-2"):
        pipeline.set("src", offsets={"id": request_id, "action": "reset"})
        (outcome,) = pipeline.tick().offsets
        assert outcome.status == "applied", outcome.render()
        assert outcome.message == model.success_message(model.OffsetsAction.RESET, True)  # datagen confirms, as Java's
        # From scratch in the same tick: the first ids of every stripe again.
        after = positions(pipeline)
        expected += stripes(after)
        assert topic_keys(pipeline.settings, topic) == expected
        assert after == before  # the same first batch as the very first run
        assert read_view(pipeline.settings).live.is_applied("src", "offsets", request_id)


def test_source_alter_skips_ahead_and_the_task_continues_from_there(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 21: alter source offsets after stop; the resumed connector picks them up."""
    out = tmp_path / "parquet"
    topic = declare(pipeline, out)
    pipeline.set(sink_name(pipeline), state="stopped")
    pipeline.tick()
    first = positions(pipeline)
    skip = {
        "id": "skip-1",
        "action": "alter",
        "offsets": [{"partition": {"shard": s}, "offset": {"position": 250}} for s in (0, 1)],
    }
    pipeline.set("src", offsets=skip)
    for _ in range(3):
        pipeline.tick()
    # Both stripes resume at position 250 (ids 500…599); the ids in between are never produced.
    assert positions(pipeline) == {0: 300, 1: 300}
    assert topic_keys(pipeline.settings, topic) == stripes(first) + (ids(600) - ids(500))
    state = read_view(pipeline.settings)
    assert state.live.is_applied("src", "offsets", "skip-1")
    snapshot = state.snapshot("src", "skip-1") or []
    assert {e["partition"]["shard"]: e["offset"]["position"] for e in snapshot} == first


def test_created_with_offsets_they_are_set_before_it_first_runs(pipeline: Pipeline, tmp_path: Path) -> None:
    """Case 12: a connector created (STOPPED) with an offsets request gets them before its first run;
    declared paused, it ends PAUSED with no data moved (case 17's PAUSED variant, stopped then returned)."""
    out = tmp_path / "parquet"
    topic = pipeline.topic("orders", 2)
    pipeline.connector("src", "datagen", {"topic": topic, "count": COUNT, "record.bytes": 40, "shards": 2})
    for _ in range(4):
        pipeline.tick()
    assert topic_keys(pipeline.settings, topic) == ids(COUNT)
    ends = {p: o for (t, p), o in _topic_ends(pipeline, topic).items()}

    pipeline.connector("late", "parquet-sink", {"topics": topic, "path": str(out), "flush.records": 50}, state="paused")
    pipeline.set("late", offsets=sink_alter("start-1", topic, p0=ends[0] - 10, p1=ends[1] - 20))
    (outcome,) = pipeline.tick().offsets
    assert outcome.status == "applied" and outcome.steps == ("snapshot", "alter", "return")
    assert pipeline.states("late")[0] == "PAUSED" and parquet_keys(out) == {}

    pipeline.set("late", state="running")
    pipeline.tick()
    # Only the records at or after the offsets it was given (offsets count transaction markers too).
    starts = {0: ends[0] - 10, 1: ends[1] - 20}
    after = Counter(m.key or b"" for m in read_to_end(pipeline.settings, topic) if m.offset >= starts[m.partition])
    assert parquet_keys(out) == after and 0 < sum(after.values()) <= 30


def _topic_ends(pipeline: Pipeline, topic: str) -> dict[tuple[str, int], int]:
    from reconciler.kafka.io.consume import end_offsets

    return {(topic, p): o for p, o in end_offsets(pipeline.settings, topic).items()}


# --- SIGKILL of `reconciler run --once` between the steps ----------------------------------------


def test_run_killed_between_steps_applies_the_rewind_exactly_once(pipeline: Pipeline, tmp_path: Path) -> None:
    """One chain: `run --once` killed after each step of the request in turn, each run resuming
    the request the one before left half-done; then the next run finishes it."""
    out = tmp_path / "parquet"
    topic = declare(pipeline, out)
    drain(pipeline, out)
    ends = sink_group_offsets(pipeline.settings, f"connect-{sink_name(pipeline)}")
    pipeline.set(sink_name(pipeline), offsets=sink_alter("rewind-1", topic, p0=100, p1=200))

    settings = pipeline.settings
    for point in (model.AFTER_STOP, model.AFTER_HOOK, model.AFTER_ALTER, model.AFTER_RETURN):
        run = subprocess.run(
            [sys.executable, "-m", "reconciler.cli.main", "run", "--once", str(pipeline.dir),
             "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id, "--timeout", "20"],
            env=child_env(point), capture_output=True, text=True, timeout=300,
        )
        assert run.returncode == -signal.SIGKILL, f"{point}: {run.stdout}{run.stderr}"

    pipeline.tick()  # the next run finishes the request (or finds it done) and runs the sink
    pipeline.tick()
    state = read_view(settings)
    assert state.live.is_applied(sink_name(pipeline), "offsets", "rewind-1") and sink_name(pipeline) not in state.progress
    assert state.snapshot(sink_name(pipeline), "rewind-1") == model.sink_body(ends)
    assert parquet_keys(out) == ids(COUNT)  # re-delivered once: nothing lost, nothing twice
    assert any(start == 100 for start, _ in files(out, topic, 0))
    assert any(start == 200 for start, _ in files(out, topic, 1))
    assert sink_group_offsets(settings, f"connect-{sink_name(pipeline)}") == ends
