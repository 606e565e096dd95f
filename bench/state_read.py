"""Benchmark: time to live state from Connect's internal topics, against kcat reading the same.

Fills a config topic with 100,000 records (10,000 connectors: configs, an update, target
states, two generations of task configs and commits) and a status topic with 50,000 records,
in the exact formats a Connect worker writes, on Apache Kafka (one KRaft node) that this
script starts (`reconciler.devtools.broker`). Then, in the same run, times:

- ours: `read_live_state` (check the broker and topics, read the three topics to the end and
  replay them through Connect's state machines into the live-state model), in process;
- ours, CLI: `reconciler snapshot` as a fresh process (includes interpreter start, imports and
  writing the JSON snapshot to /dev/null);
- ours, kept: `LiveStore.read()` again on a store that has read the topics (what a `run`/`watch`
  tick pays when nothing was written since: metadata, each partition's end, the same value);
- kcat: `kcat -C -e` consuming the config and status topics to the end into a file, with the
  fetch setting our readers use (bench/kcat.py), and once more with librdkafka's defaults (it
  then waits 500 ms for the broker's empty answer at the end of each topic) for comparison;
- the floor under ours: the same topics consumed to the end with confluent-kafka, as our
  reader does (`batches_to_end`), doing nothing with the records. Every Python reader built
  on confluent-kafka pays this: one Python `Message` object per record;
- the floor, decoded: the same, and each record's key, value and offset taken and its value
  decoded by msgspec (our decoder), with no state kept. A reader that looks at every record in
  Python pays at least this; what ours costs above it is its state machines and the model.

The readers take turns for `--runs` rounds (bench/measure.py `alternating`: the order reversed
every round), each run in a fresh process (the in-process readers: a process of this script
that runs only that reader once; the kept store's first read is not timed). Each figure is the
median of the runs with their spread (min–max) beside it, and each ratio to kcat the median of
the rounds' own ratios. Beside the time: CPU seconds (for the in-process readers, measured inside
their process), the peak memory of the process (the in-process readers' includes the interpreter
and imports), and the broker's CPU seconds (the Kafka JVM's), medians. Every run is checked
before any figure is printed (exit 1, no figure, otherwise): exit code 0; the live state and
the kept store hold every connector; the floors read every record; kcat printed one line per
record; the snapshot names the last connector. The machine's other load shows up as noise in
the times, far less in the CPU seconds; the load average is printed.

    .venv/bin/python bench/state_read.py [--connectors 10000] [--runs 3] [--bootstrap HOST:PORT]

`--bootstrap`: a running broker instead of one of its own (the tests' tiny run); the topics are
then a group of their own, and the broker's CPU is not counted.

Goals (issues 3 and 11): ours within 1.5x of kcat, the snapshot process within 2.5x. The reference client is Debian's `kcat`, as Debian
ships it (`apt-get install -y kcat`; bench/kcat.py), with our readers' fetch setting.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcat import consumer_flags, kcat_binary  # bench/kcat.py
from measure import Spread, alternating, cpu_of, file_lines, load_average, ratios, require, run_measured  # bench/measure.py

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.devtools.broker import start_broker
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.admin import ensure_topics
from reconciler.kafka.io.client import new_producer
from reconciler.kafka.io.consume import batches_to_end
from reconciler.kafka.io.store import LiveStore, read_live_state
from reconciler.kafka.settings import KafkaSettings, Topics


def config_records(count: int) -> list[rec.Record]:
    out: list[rec.Record] = []
    for i in range(count):
        name = f"conn-{i:05d}"
        props = {"connector.class": "parquet-sink", "name": name, "path": f"/data/{name}", "tasks.max": "2", "topics": f"t{i}"}
        out.append(rec.connector_config_record(name, props))
        out.append(rec.target_state_record(name, ConnectTargetState.PAUSED))
        out.append(rec.connector_config_record(name, {**props, "flush.records": "1000"}))
        out.append(rec.target_state_record(name, ConnectTargetState.STARTED))
        for generation in range(2):
            for task in range(2):
                task_props = {"task.class": "ParquetSinkTask", "topics": f"t{i}", "generation": str(generation), "task": str(task)}
                out.append(rec.task_config_record(name, task, task_props))
            out.append(rec.commit_record(name, 2))
    return out


def status_records(count: int) -> list[rec.Record]:
    out: list[rec.Record] = []
    for i in range(count):
        name = f"conn-{i:05d}"
        for generation, state in ((1, InstanceState.UNASSIGNED), (2, InstanceState.RUNNING)):
            status = InstanceStatus(state=state, worker_id="10.0.0.5:8083", generation=generation)
            out.append(rec.connector_status_record(name, status))
            if generation == 2:
                out.append(rec.task_status_record(name, 0, status))
                out.append(rec.task_status_record(name, 1, status))
        failed = InstanceStatus(state=InstanceState.FAILED, trace="java.lang.Exception: x\n\tat y", worker_id="10.0.0.6:8083", generation=3)
        out.append(rec.task_status_record(name, 1, failed))
    return out


def produce(settings: KafkaSettings, topic: str, records: list[rec.Record]) -> None:
    tuning: dict[str, Any] = {"linger.ms": 20, "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000}
    producer = new_producer(settings, **tuning)
    for record in records:
        while True:
            try:
                producer.produce(topic, key=record.key, value=record.value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise SystemExit(f"could not deliver all records to {topic}")


@dataclass
class Reading:
    label: str
    seconds: float = float("inf")
    cpu_s: float = float("nan")
    peak_rss: int = 0
    broker_cpu_s: float = float("nan")
    count: int = 0  # connectors or records, as the reader counts them


def one_in_process(what: str, settings: KafkaSettings) -> dict[str, float]:
    """Runs in the child process: one timed run of `what`, its CPU seconds and what it counted."""
    store = LiveStore(settings)
    if what == "kept":
        store.read()  # the first read, not timed: what follows is a tick's read with nothing new
    cpu, started = time.process_time(), time.perf_counter()
    if what == "ours":
        count = len(read_live_state(settings).connectors)
    elif what == "kept":
        count = len(store.read().live.connectors)
    elif what == "decoded":
        count = decode_all(settings)
    else:
        topics = [settings.topics.configs, settings.topics.status, settings.topics.reconciler]
        count = sum(map(len, batches_to_end(settings, topics)))
    return {"seconds": time.perf_counter() - started, "cpu": time.process_time() - cpu, "count": count}


def decode_all(settings: KafkaSettings) -> int:
    """Every record of the three topics taken apart and its value decoded; nothing kept."""
    import msgspec

    decode, count = msgspec.json.Decoder().decode, 0
    topics = [settings.topics.configs, settings.topics.status, settings.topics.reconciler]
    for batch in batches_to_end(settings, topics):
        for record in batch:
            record.key(), record.offset()
            value = record.value()
            if value is not None:
                decode(value)
        count += len(batch)
    return count


@dataclass(frozen=True)
class Target:
    """The broker the readers read, and what they must find there."""

    settings: KafkaSettings
    broker_pid: int | None
    connectors: int
    records: int

    def broker_cpu(self) -> float:
        return float("nan") if self.broker_pid is None else cpu_of(self.broker_pid)


def in_process(label: str, what: str, target: Target) -> Reading:
    """`one_in_process` in a fresh process of this script: its CPU and memory are its own."""
    out = Path(tempfile.mkdtemp(prefix="bench-state-read-")) / "result.json"
    command = [sys.executable, __file__, "--child", what, "--bootstrap", target.settings.bootstrap_servers,
               "--group", target.settings.group_id, "--child-out", str(out)]
    broker = target.broker_cpu()
    code, usage = run_measured(command)
    require(code == 0, f"{label} failed (exit {code})")
    result = json.loads(out.read_text())
    shutil.rmtree(out.parent, ignore_errors=True)
    expected = target.connectors if what in ("ours", "kept") else target.records
    require(result["count"] == expected, f"{label} counted {result['count']:,}, not {expected:,}")
    return Reading(label, result["seconds"], result["cpu"], usage.peak_rss, target.broker_cpu() - broker,
                   int(result["count"]))


def one_process(label: str, command: list[str], target: Target, check: Callable[[Path], int]) -> Reading:
    """One run of a command, its stdout to a file `check` reads (what it counts; it refuses a
    wrong output), with its CPU seconds and peak memory."""
    out = Path(tempfile.mkdtemp(prefix="bench-state-read-")) / "stdout"
    broker = target.broker_cpu()
    with open(out, "wb") as sink:
        code, usage = run_measured(command, stdout=sink)
    broker_cpu = target.broker_cpu() - broker
    require(code == 0, f"{label} failed (exit {code}): {' '.join(command)}")
    count = check(out)
    shutil.rmtree(out.parent, ignore_errors=True)
    return Reading(label, usage.seconds, usage.cpu_s, usage.peak_rss, broker_cpu, count)


def kcat_lines(target: Target, label: str) -> Callable[[Path], int]:
    def check(out: Path) -> int:
        lines = file_lines(out)
        require(lines == target.records, f"{label} printed {lines:,} records, not {target.records:,}")
        return lines

    return check


def snapshot_names_every_connector(target: Target) -> Callable[[Path], int]:
    def check(out: Path) -> int:
        text = out.read_bytes()
        last = b'"conn-%05d"' % (target.connectors - 1)
        require(last in text, f"reconciler snapshot does not name {last.decode()}")
        return target.connectors

    return check


def kcat_command(kcat: str, settings: KafkaSettings, flags: list[str]) -> list[str]:
    """Both topics to the end, one `key<TAB>value` line per record, the two reads back to back
    in one shell (kcat -C reads one topic; several need a consumer group, -G)."""
    reads = [
        f"{kcat} -C -b {settings.bootstrap_servers} -t {topic} -o beginning -e -q -f '%k\\t%s\\n' {' '.join(flags)}"
        for topic in (settings.topics.configs, settings.topics.status)
    ]
    return ["sh", "-c", " && ".join(reads)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=10_000)
    parser.add_argument("--runs", "--repeat", type=int, default=3, help="rounds of every reader, alternating")
    parser.add_argument("--bootstrap", help="a running broker's address (default: start one)")
    parser.add_argument("--child", choices=("ours", "floor", "decoded", "kept"), help=argparse.SUPPRESS)
    parser.add_argument("--group", default="bench", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.child_out.write_text(json.dumps(one_in_process(args.child, settings_for(args.bootstrap, args.group))))
        return 0
    require(args.connectors >= 1 and args.runs >= 1, "sizes must be at least 1")
    kcat = kcat_binary()
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    if args.bootstrap:
        return measure(args, kcat, settings_for(args.bootstrap, f"bench-{uuid.uuid4().hex[:8]}"), None)
    with start_broker() as broker:
        return measure(args, kcat, settings_for(broker.bootstrap, "bench"), broker.pid)


def measure(args: argparse.Namespace, kcat: str, settings: KafkaSettings, broker_pid: int | None) -> int:
    ensure_topics(settings)
    configs, statuses = config_records(args.connectors), status_records(args.connectors)
    produce(settings, settings.topics.configs, configs)
    produce(settings, settings.topics.status, statuses)
    target = Target(settings, broker_pid, args.connectors, len(configs) + len(statuses))
    del configs, statuses
    snapshot = [sys.executable, "-m", "reconciler.cli.main", "snapshot",
                "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
    kcat_label, defaults_label = "kcat -C -e (both topics)", "kcat -C -e, librdkafka's defaults"
    sides: dict[str, Callable[[], Reading]] = {
        "kcat": lambda: one_process(kcat_label, kcat_command(kcat, settings, consumer_flags()), target,
                                    kcat_lines(target, kcat_label)),
        "ours": lambda: in_process("ours: read_live_state (in process)", "ours", target),
        "cli": lambda: one_process("ours: reconciler snapshot (process)", snapshot, target,
                                   snapshot_names_every_connector(target)),
        "floor": lambda: in_process("floor: confluent-kafka consume only", "floor", target),
        "decoded": lambda: in_process("floor, each record decoded", "decoded", target),
        "kept": lambda: in_process("ours, kept store: read, nothing new", "kept", target),
        "defaults": lambda: one_process(defaults_label, kcat_command(kcat, settings, []), target,
                                        kcat_lines(target, defaults_label)),
    }
    report(args, target, alternating(args.runs, sides))
    return 0


def settings_for(bootstrap: str, group: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, group_id=group, topics=Topics.for_group(group), timeout_s=60)


def report(args: argparse.Namespace, target: Target, runs: dict[str, list[Reading]]) -> None:
    print(f"state_read: {target.records:,} config + status records, {target.connectors:,} connectors; "
          f"{args.runs} rounds, the readers alternating, median (min–max); Apache Kafka (one KRaft node) on loopback, "
          f"{os.cpu_count()} cores")
    print(f"load average at the end: {load_average()} (other work on the machine slows every reader)")
    print(f"{'reader':<37} {'seconds':>24} {'records/s':>10} {'vs kcat':>24} {'CPU s':>6} {'peak MB':>8} "
          f"{'broker CPU s':>13}")
    reference = [r.seconds for r in runs["kcat"]]
    for readings in runs.values():
        seconds = Spread.of([r.seconds for r in readings])
        ratio = ratios([r.seconds for r in readings], reference)
        print(
            f"{readings[0].label:<37} {seconds.show():>24} {target.records / seconds.median:>10,.0f} "
            f"{ratio.show('x'):>24} {Spread.of([r.cpu_s for r in readings]).median:>6.2f} "
            f"{max(r.peak_rss for r in readings) / 2**20:>8,.0f} "
            f"{Spread.of([r.broker_cpu_s for r in readings]).median:>13.2f}"
        )
    ours, process = ratios([r.seconds for r in runs["ours"]], reference), ratios([r.seconds for r in runs["cli"]], reference)
    print(f"goal: in-process reader within 1.5x of kcat: {'met' if ours.median <= 1.5 else 'NOT MET'} "
          f"({ours.show('x')})")
    print(f"goal: snapshot process within 2.5x of kcat: {'met' if process.median <= 2.5 else 'NOT MET'} "
          f"({process.show('x')})")


if __name__ == "__main__":
    sys.exit(main())
