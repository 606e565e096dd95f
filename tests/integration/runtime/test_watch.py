"""`reconciler watch` hardened for Kubernetes, as a real process against the test broker.

- In a directory laid out as the kubelet lays out a ConfigMap volume (`..<timestamp>/` data
  directories, the `..data` symlink swapped atomically, user-visible symlinks): pausing a
  connector by editing its manifest shows PAUSED in the status topic within 2 s; a swap of the
  volume is exactly one reload and one tick; editors' temporary files change nothing; a
  manifest removed without `--prune` leaves its connector running, listed as an orphan.
- A resync pass puts back what someone changed behind the manifests' back, without a tick.
- SIGTERM in the middle of a batch: the batch finishes, offsets and statuses are committed,
  the process exits 0 within the grace period, and the next run re-delivers nothing.
- `--log-format json`: every line of output is a JSON object.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from configmap_volume import ConfigMapVolume

from reconciler.core.live import ConnectTargetState, InstanceState
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.io.groups import sink_group_offsets
from reconciler.kafka.settings import KafkaSettings
from loop_support import ROOT, Running, eventually, manifest
from run_support import child_env, create_topic, ids, parquet_keys, topic_keys

PAUSE_WITHIN_S = 2.0


def dump(doc: dict[str, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False)


def lines_after(run: Running, start: int, settle_s: float) -> list[str]:
    """The lines since `start` after a quiet period: callers assert what does not come (a
    second reload or tick, any line for an editor's file), which no poll can wait for."""
    time.sleep(settle_s)
    run.output()
    return run.seen[start:]


def test_watch_in_a_configmap_volume(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    topic = f"{kafka_settings.group_id}.cm"
    create_topic(kafka_settings, topic, 1)
    gen = manifest("gen", {"topic": topic, "count": 50})
    other = manifest("other", {"topic": topic, "count": 10}, state="stopped")
    volume = ConfigMapVolume(tmp_path / "manifests")
    volume.publish({"gen.yaml": dump(gen), "other.yaml": dump(other)})
    args = ["watch", str(volume.root), "--interval", "3600", "--resync", "3600"]
    watch = Running(args + ["--spark-conf", "spark.driver.memory=768m"], kafka_settings)
    try:
        watch.wait_for_line("gen: RUNNING")
        eventually(lambda: sum(topic_keys(kafka_settings, topic).values()) == 50)

        # Edit through the volume's symlink: PAUSED in the status topic within 2 s.
        paused = manifest("gen", {"topic": topic, "count": 50}, state="paused")
        started = time.monotonic()
        (volume.root / "gen.yaml").write_text(dump(paused))
        while not _paused(kafka_settings, "gen"):
            assert time.monotonic() - started < PAUSE_WITHIN_S, "not PAUSED within 2 s:\n" + watch.output()
            time.sleep(0.05)

        # A ConfigMap update: one reload, one tick.
        watch.wait_for_line("gen: PAUSED")
        mark = len(watch.seen)
        volume.publish({"gen.yaml": dump(gen), "other.yaml": dump(other)})
        watch.wait_for_line("gen: RUNNING")
        after = lines_after(watch, mark, 3.0)
        assert sum("manifests reloaded" in line for line in after) == 1, after
        assert sum(" tick (config offset" in line for line in after) == 1, after

        # Editors' files beside the manifests: nothing happens.
        mark = len(watch.seen)
        for name in (".gen.yaml.swp", "gen.yaml~", "4913", "#gen.yaml#", ".#gen.yaml"):
            (volume.root / name).write_text("not a manifest")
        (volume.root / "4913").unlink()
        assert lines_after(watch, mark, 2.0) == []

        # A manifest removed without --prune: an orphan, listed, still there.
        mark = len(watch.seen)
        volume.publish({"gen.yaml": dump(gen)})
        watch.wait_for_line("orphan: connector other is in no manifest")
        assert sum("orphan: connector" in line for line in watch.seen[mark:]) == 1, watch.seen[mark:]
        live = read_live_state(kafka_settings).connector("other")
        assert live is not None and live.exists and live.target_state is ConnectTargetState.STOPPED
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()


def _paused(settings: KafkaSettings, name: str) -> bool:
    connector = read_live_state(settings).connector(name)
    status = None if connector is None else connector.connector_status
    return status is not None and status.state is InstanceState.PAUSED


def pause_through_connect(settings: KafkaSettings, name: str) -> None:
    """What `PUT /connectors/{name}/pause` on a Connect worker writes: the target-state record,
    outside any transaction (a worker without exactly-once support)."""
    from reconciler.kafka.formats import records as rec
    from reconciler.kafka.io.client import new_producer

    record = rec.target_state_record(name, ConnectTargetState.PAUSED)
    producer = new_producer(settings)
    producer.produce(settings.topics.configs, key=record.key, value=record.value)
    assert producer.flush(settings.timeout_s) == 0


def test_resync_corrects_drift_without_a_tick(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    """Drift written as Connect's REST API writes it. (Not by a second `reconciler apply`: that
    one claims the group's transactional id, which a resync claims every second here, so one
    of the two is fenced now and then, by design: the optimistic lock in reconciler/app/apply.py.)"""
    (tmp_path / "c.yaml").write_text(dump(manifest("idle", {"topic": "t", "count": 1}, state="stopped")))
    watch = Running(["watch", str(tmp_path), "--interval", "3600", "--resync", "1"], kafka_settings)
    try:
        watch.wait_for_line("idle: STOPPED")
        watch.wait_for_line("resync: no drift")
        pause_through_connect(kafka_settings, "idle")  # someone pauses it through a Connect worker
        watch.wait_for_line("resync: 1 change(s) applied", timeout_s=30)
        live = read_live_state(kafka_settings).connector("idle")
        assert live is not None and live.target_state is ConnectTargetState.STOPPED
        assert sum(" tick (config offset" in line for line in watch.seen) == 1  # no tick: only the first
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()


FILE = re.compile(r"\+(\d+)\+(\d+)-(\d+)\.parquet$")


def files_end(path: Path) -> dict[int, int]:
    """Per partition, the offset after the highest one the sink's files hold."""
    ends: dict[int, int] = {}
    for file in path.rglob("*.parquet"):
        found = FILE.search(file.name)
        if found and not any(part[0] in "._" for part in file.relative_to(path).parts):
            partition, last = int(found.group(1)), int(found.group(3))
            ends[partition] = max(ends.get(partition, 0), last + 1)
    return ends


def test_sigterm_finishes_the_batch_exits_0_in_the_grace_period_and_nothing_is_delivered_again(
    kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    count, grace_s = 3000, 45.0
    topic = f"{kafka_settings.group_id}.term"
    create_topic(kafka_settings, topic, 2)
    archive = tmp_path / "archive"
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    (manifests / "gen.yaml").write_text(dump(manifest("gen", {"topic": topic, "count": count})))
    sink = manifest("archive", {"topics": topic, "path": str(archive)}, tasks_max=2)
    sink["spec"]["class"] = "parquet-sink"
    (manifests / "archive.yaml").write_text(dump(sink))
    common = ["--spark-conf", "spark.driver.memory=768m", "--log-format", "json"]
    watch = Running(["-v", "watch", str(manifests), "--interval", "1", "--grace-period", str(grace_s), *common],
                    kafka_settings)
    try:
        watch.wait_for_line("task(s) of 2 connector(s) begins")  # (-v) the first batch begins
        signalled = time.monotonic()
        assert watch.stop(signal.SIGTERM) == 0
        took = time.monotonic() - signalled
        assert took < grace_s
    finally:
        watch.close()
    watch.output()
    # Every line, the JVM's too: what it writes outside logging (its launcher's warning about
    # the incubator module Spark adds) comes as a `spark.jvm` warning (runtime.spark.jvm_output).
    lines = watch.seen
    events = [json.loads(line) for line in lines if line.startswith("{")]
    assert events and len(events) == len(lines), "not JSON:\n" + "\n".join(x for x in lines if x[:1] != "{")
    assert any(e["event"] == "warning" and "SIGTERM" in e["message"] for e in events)
    assert any(e["logger"] == "spark.jvm" and "incubator" in e["message"] for e in events)
    ticks = [e for e in events if e["event"] == "tick"]
    assert len(ticks) == 1 and ticks[0]["task_batches"] == 3  # the batch under way finished; no other began

    # What the finished batch did is committed: the source's records and offsets, the sink's
    # group up to its files, the statuses.
    assert topic_keys(kafka_settings, topic) == ids(count)
    committed = {p: o for (t, p), o in sink_group_offsets(kafka_settings, "connect-archive").items() if t == topic}
    assert committed == {p: o for p, o in files_end(archive).items()}
    state = read_live_state(kafka_settings)
    live = state.connector("archive")
    assert live is not None and live.connector_status is not None
    # Released on exit (UNASSIGNED, as Connect's shutdown), after the batch's statuses and last batch.
    assert live.connector_status.state is InstanceState.UNASSIGNED
    assert state.last_batches["archive"].outcome == "succeeded"

    # The next run reads only what was never committed, and the dataset holds each record once.
    pending = sum(1 for m in read_to_end(kafka_settings, topic) if m.offset >= committed.get(m.partition, 0))
    rerun = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", "run", str(manifests), "--once", "--spark-conf",
         "spark.driver.memory=768m", "--bootstrap-servers", kafka_settings.bootstrap_servers,
         "--group-id", kafka_settings.group_id],
        cwd=ROOT, env=child_env(), capture_output=True, text=True, check=False, timeout=300,
    )
    assert rerun.returncode == 0, rerun.stderr
    read = sum(int(n) for n in re.findall(r"task \d RUNNING \((\d+) records\)", _line(rerun.stdout, "archive:")))
    assert read == pending
    assert parquet_keys(archive) == ids(count)


def _line(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)
