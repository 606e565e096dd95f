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

Each is the best of N runs (`--repeat`). Beside the time: the CPU seconds of that run (for the
in-process readers, measured inside a fresh process that runs only them), the peak memory of
the process (the in-process readers' process includes the interpreter and imports), and the
broker's CPU seconds (the Kafka JVM's) per run. The machine's other load shows up as noise in
the times, far less in the CPU seconds; the load average is printed.

    .venv/bin/python bench/state_read.py [--connectors 10000] [--repeat 3]

Goals (issues 3 and 11): ours within 1.5x of kcat, the snapshot process within 2.5x. The reference client is Debian's `kcat`, as Debian
ships it (`apt-get install -y kcat`; bench/kcat.py), with our readers' fetch setting.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kcat import consumer_flags, kcat_binary  # bench/kcat.py
from measure import cpu_of, file_lines, load_average, run_measured  # bench/measure.py

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
    broker_cpu_s: float = float("nan")  # per run
    records: int = 0


def best_in_process(what: str, settings: KafkaSettings, repeat: int) -> dict[str, float]:
    """Runs in the child process: the best of `repeat` runs of `what`, and its CPU seconds."""
    best: dict[str, float] = {"seconds": float("inf")}
    store = LiveStore(settings)
    if what == "kept":
        store.read()  # the first read, not timed: what follows is a tick's read with nothing new
    for _ in range(repeat):
        cpu, started = time.process_time(), time.perf_counter()
        if what == "ours":
            connectors = len(read_live_state(settings).connectors)
        elif what == "kept":
            connectors = len(store.read().live.connectors)
        elif what == "decoded":
            connectors = decode_all(settings)
        else:
            topics = [settings.topics.configs, settings.topics.status, settings.topics.reconciler]
            connectors = sum(map(len, batches_to_end(settings, topics)))
        seconds = time.perf_counter() - started
        if seconds < best["seconds"]:
            best = {"seconds": seconds, "cpu": time.process_time() - cpu, "count": connectors}
    return best


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


def time_in_process(label: str, what: str, settings: KafkaSettings, repeat: int, broker_pid: int) -> Reading:
    """`best_in_process` in a fresh process of this script: its CPU and memory are its own."""
    out = Path(tempfile.mkdtemp(prefix="bench-state-read-")) / "result.json"
    command = [sys.executable, __file__, "--child", what, "--bootstrap", settings.bootstrap_servers,
               "--repeat", str(repeat), "--child-out", str(out)]
    broker = cpu_of(broker_pid)
    code, usage = run_measured(command)
    if code != 0:
        raise SystemExit(f"{label} failed (exit {code})")
    result = json.loads(out.read_text())
    return Reading(label, result["seconds"], result["cpu"], usage.peak_rss, (cpu_of(broker_pid) - broker) / repeat,
                   int(result["count"]))


def time_process(label: str, command: list[str], repeat: int, broker_pid: int, stdout: Path | None = None) -> Reading:
    """The best of `repeat` runs of a command, with that run's CPU seconds and peak memory."""
    best = Reading(label)
    broker = cpu_of(broker_pid)
    for _ in range(repeat):
        with open(stdout or os.devnull, "wb") as sink:
            code, usage = run_measured(command, stdout=sink)
        if code != 0:
            raise SystemExit(f"{label} failed (exit {code}): {' '.join(command)}")
        if usage.seconds < best.seconds:
            best = Reading(label, usage.seconds, usage.cpu_s, usage.peak_rss)
            if stdout is not None:
                best.records = file_lines(stdout)
    best.broker_cpu_s = (cpu_of(broker_pid) - broker) / repeat
    return best


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
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", choices=("ours", "floor", "decoded", "kept"), help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        args.child_out.write_text(json.dumps(best_in_process(args.child, settings_for(args.bootstrap), args.repeat)))
        return 0
    kcat = kcat_binary()
    print(f"load average at the start: {load_average()}", file=sys.stderr)
    with start_broker() as broker:
        settings = settings_for(broker.bootstrap)
        ensure_topics(settings)
        configs, statuses = config_records(args.connectors), status_records(args.connectors)
        produce(settings, settings.topics.configs, configs)
        produce(settings, settings.topics.status, statuses)
        total = len(configs) + len(statuses)
        del configs, statuses
        ours = time_in_process("ours: read_live_state (in process)", "ours", settings, args.repeat, broker.pid)
        floor = time_in_process("floor: confluent-kafka consume only", "floor", settings, args.repeat, broker.pid)
        decoded = time_in_process("floor, each record decoded", "decoded", settings, args.repeat, broker.pid)
        kept = time_in_process("ours, kept store: read, nothing new", "kept", settings, args.repeat, broker.pid)
        cli_command = [sys.executable, "-m", "reconciler.cli.main", "snapshot",
                       "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
        cli = time_process("ours: reconciler snapshot (process)", cli_command, args.repeat, broker.pid)
        lines = Path(tempfile.mkdtemp(prefix="bench-state-read-")) / "kcat.out"
        reference = time_process("kcat -C -e (both topics)", kcat_command(kcat, settings, consumer_flags()),
                                 args.repeat, broker.pid, lines)
        defaults = time_process("kcat -C -e, librdkafka's defaults", kcat_command(kcat, settings, []),
                                args.repeat, broker.pid, lines)
    if reference.records != total or defaults.records != total:
        raise SystemExit(f"kcat read {reference.records:,} and {defaults.records:,} records, not {total:,}")
    report(args, total, ours.records, reference, [ours, cli, floor, decoded, kept, defaults])
    return 0


def settings_for(bootstrap: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, group_id="bench", topics=Topics.for_group("bench"), timeout_s=60)


def report(args: argparse.Namespace, total: int, connectors: int, reference: Reading, readings: list[Reading]) -> None:
    print(f"state_read: {total:,} config + status records, {connectors:,} connectors (best of {args.repeat}), "
          f"Apache Kafka (one KRaft node) on loopback, {os.cpu_count()} cores")
    print(f"load average at the end: {load_average()} (other work on the machine slows every reader)")
    print(f"{'reader':<37} {'seconds':>8} {'records/s':>11} {'vs kcat':>8} {'CPU s':>6} {'peak MB':>8} {'broker CPU s':>13}")
    for reading in [reference, *readings]:
        print(
            f"{reading.label:<37} {reading.seconds:>8.2f} {total / reading.seconds:>11,.0f} "
            f"{reading.seconds / reference.seconds:>7.2f}x {reading.cpu_s:>6.2f} {reading.peak_rss / 2**20:>8,.0f} "
            f"{reading.broker_cpu_s:>13.2f}"
        )
    ratio, process = readings[0].seconds / reference.seconds, readings[1].seconds / reference.seconds
    print(f"goal: in-process reader within 1.5x of kcat: {'met' if ratio <= 1.5 else 'NOT MET'} ({ratio:.2f}x)")
    print(f"goal: snapshot process within 2.5x of kcat: {'met' if process <= 2.5 else 'NOT MET'} ({process:.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
