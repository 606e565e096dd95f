"""Benchmark: time to live state from Connect's internal topics, against kcat reading the same.

Fills a config topic with 100,000 records (10,000 connectors: configs, an update, target
states, two generations of task configs and commits) and a status topic with 50,000 records,
in the exact formats a Connect worker writes, on a local broker this script starts. Then, in
the same run, times:

- ours: `read_live_state` (check the broker and topics, read the three topics to the end and
  replay them through Connect's state machines into the live-state model), in process;
- ours, CLI: `reconciler snapshot` as a fresh process (includes interpreter start, imports and
  writing the JSON snapshot to /dev/null);
- kcat: `kcat -C -e` consuming the config and status topics to the end into /dev/null;
- the floor under ours: the same topics consumed to the end with confluent-kafka, as our
  reader does (`batches_to_end`), doing nothing with the records. Every Python reader built
  on confluent-kafka pays this: one Python `Message` object per record.

Each is the best of N runs (`--repeat`); the machine's other load shows up as noise in all
three, so compare figures from one run, and prefer a quiet machine.

    .venv/bin/python bench/state_read.py [--connectors 10000] [--repeat 3]

Goal (issue 3): ours within 1.5x of kcat. Needs Debian's `kcat` (apt-get install kcat); it is
pointed at confluent-kafka's bundled librdkafka, since Debian's is too old for the test broker.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

from kcat import kcat_binary, kcat_env  # bench/kcat.py

from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.devtools.broker import start_broker
from reconciler.kafka import records as rec
from reconciler.kafka.admin import ensure_topics
from reconciler.kafka.client import new_producer
from reconciler.kafka.consume import batches_to_end
from reconciler.kafka.reader import read_live_state
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
    producer = new_producer(settings, **{"linger.ms": 20, "batch.num.messages": 10000, "queue.buffering.max.messages": 1_000_000})
    for record in records:
        while True:
            try:
                producer.produce(topic, key=record.key, value=record.value)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60) != 0:
        raise SystemExit(f"could not deliver all records to {topic}")


def time_ours(settings: KafkaSettings, repeat: int) -> tuple[float, int]:
    best, size = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        state = read_live_state(settings)
        best = min(best, time.perf_counter() - start)
        size = len(state.connectors)
    return best, size


def time_floor(settings: KafkaSettings, repeat: int) -> float:
    topics = [settings.topics.configs, settings.topics.status, settings.topics.reconciler]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _batch in batches_to_end(settings, topics):
            pass
        best = min(best, time.perf_counter() - start)
    return best


def time_cli(settings: KafkaSettings, repeat: int) -> float:
    cmd = [sys.executable, "-m", "reconciler.cli.main", "snapshot", "--bootstrap-servers", settings.bootstrap_servers, "--group-id", settings.group_id]
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def time_kcat(kcat: str, settings: KafkaSettings, repeat: int) -> tuple[float, int]:
    env = kcat_env()
    best, lines = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        total = 0
        for topic in (settings.topics.configs, settings.topics.status):
            out = subprocess.run(
                [kcat, "-C", "-b", settings.bootstrap_servers, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%k\t%s\n",
                 "-X", "fetch.queue.backoff.ms=10", "-X", "fetch.wait.max.ms=10"],
                env=env, capture_output=True,
            )
            if out.returncode != 0:
                raise SystemExit(f"kcat failed: {out.stderr.decode(errors='replace')}")
            total += out.stdout.count(b"\n")
        best = min(best, time.perf_counter() - start)
        lines = total
    return best, lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connectors", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    kcat = kcat_binary()
    with start_broker() as broker:
        settings = KafkaSettings(bootstrap_servers=broker.bootstrap, group_id="bench", topics=Topics.for_group("bench"), timeout_s=60)
        ensure_topics(settings)
        configs, statuses = config_records(args.connectors), status_records(args.connectors)
        produce(settings, settings.topics.configs, configs)
        produce(settings, settings.topics.status, statuses)
        total = len(configs) + len(statuses)
        ours, connectors = time_ours(settings, args.repeat)
        floor = time_floor(settings, args.repeat)
        cli = time_cli(settings, args.repeat)
        kcat_s, kcat_lines = time_kcat(kcat, settings, args.repeat)
    print(f"state_read: {len(configs):,} config + {len(statuses):,} status records, {connectors:,} connectors (best of {args.repeat})")
    print(f"{'reader':<34} {'seconds':>8} {'records/s':>11} {'vs kcat':>8}")
    print(f"{'kcat -C -e (both topics, /dev/null)':<34} {kcat_s:>8.2f} {kcat_lines / kcat_s:>11,.0f} {1.0:>7.2f}x")
    print(f"{'ours: read_live_state (in process)':<34} {ours:>8.2f} {total / ours:>11,.0f} {ours / kcat_s:>7.2f}x")
    print(f"{'ours: reconciler snapshot (process)':<34} {cli:>8.2f} {total / cli:>11,.0f} {cli / kcat_s:>7.2f}x")
    print(f"{'floor: confluent-kafka consume only':<34} {floor:>8.2f} {total / floor:>11,.0f} {floor / kcat_s:>7.2f}x")
    print(f"goal: in-process reader within 1.5x of kcat: {'OK' if ours / kcat_s <= 1.5 else 'NOT MET'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
