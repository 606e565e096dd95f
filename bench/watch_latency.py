"""Benchmark: from a manifest edit to the change being visible, `reconciler watch` vs Java Connect.

    .venv/bin/python bench/watch_latency.py [--edits 50] [--warmup 2] [--gap 0.5]

On Apache Kafka (one KRaft node, `reconciler.devtools.broker`) this script starts, with a Java
Kafka Connect worker (`reconciler.devtools.connect`) on a group of its own on the same broker,
one connector on each side, one task each, the same shape: a small source into a topic of its
own (ours: `datagen`, `count` 10; Java's: `FileStreamSourceConnector` over a 10-line file).
Edits alternate the connector between paused and running, one side at a time (ours, then
Java's, then ours…), so that each edit is measured alone:

- ours: the manifest is rewritten with `state: paused` / `state: running` (a plain write of
  the whole file, as the tests do) in the directory a `reconciler watch` process watches. It
  runs as the container does (`--spark-master local[2] --spark-conf spark.driver.memory=768m`,
  its REST API on a free loopback port) with `--interval 3600`, so that no periodic tick is
  under way when an edit lands: each edit is measured alone. (In production an edit arriving
  during a tick waits for that tick to end: add up to one tick's length.)
- Java: `PUT /connectors/X/pause` / `/resume` on the worker's REST API, as an operator would.

Timed with `time.perf_counter`, from just before the file is opened for writing (Java: just
before the PUT is sent) until:

(a) the target-state record (`target-state-X`, `PAUSED` / `STARTED`) is received by a
    confluent-kafka consumer tailing both groups' config topics (`<group>-configs`),
    `read_committed` (our apply writes in a transaction), with `fetch.wait.max.ms` 10: the
    record is seen up to ~10 ms after it is readable;
(b) `GET /connectors/X/status` on that side's REST API shows the new state for the connector
    and every task (PAUSED / RUNNING): polled every 10 ms (a request takes a few ms more),
    keep-alive connections, one httpx client per side; the time is taken when the answer
    that shows it has arrived.

The first `--warmup` edits of each side (their first pause and resume after the start; our
first tick has finished, so Spark is up) are not counted. p95 is the nearest rank (the 48th of
50 sorted values); with 50 edits it is the third-largest.

What ours is made of (docs/runtime.md#watch-mode), in order:
- the file watcher's debounce: a burst of events ends `QUIET_MS` (100 ms,
  `reconciler/manifests/watch.py`) after its last event; then the files are hashed, and a
  changed fingerprint wakes the tick loop at once (the `--interval` plays no part, unless a
  tick is under way: see above);
- the tick's apply: the manifests reloaded, the live state read from the three topics, the
  plan, and one transaction (claim the transactional id, write, commit) → (a);
- the rest of the tick: another transaction for the worker (claim, read the topics, the
  connector's and tasks' statuses), for `running` the batch on Spark (a Spark job even with
  nothing left to produce), the final statuses committed; then the REST's live state is read
  once more, and only then does `GET …/status` answer with the new state → (b). The table
  shows this part as "(a) → (b)".
Java's worker writes the target state as the PUT's answer comes back, reads it back from the
config topic, then pauses or resumes the connector and task and writes their statuses, which its
REST serves at once. A source task pauses only once its `poll()` returns, and
FileStreamSourceTask's `poll()` waits up to 1 s for new lines when its file has none: Java's
edits to PAUSED take 0–1 s for that wait alone (its resumes do not wait).

CPU seconds over the timed phase are printed for each side (ours: the `watch` process and its
descendants, Spark's JVM and Python workers, sampled every 100 ms, bench/measure.py; Java: the
worker's JVM) and for the broker; the polling itself costs both sides a little. Other work on
the machine slows both sides: the load average is printed. Goal (issue 12): ours, median from
the manifest write to `GET …/status` showing the new state, under 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import yaml
from measure import ClusterMeter, JvmMeter, Usage, cpu_of, load_average  # bench/measure.py

from reconciler.devtools.broker import start_broker
from reconciler.devtools.connect import RunningConnect, start_connect
from reconciler.kafka.io import admin
from reconciler.kafka.io.client import consumer_config
from reconciler.kafka.settings import KafkaSettings, Topics

NAME = "latency"
OURS_GROUP, JAVA_GROUP = "wl-ours", "wl-java"
POLL_S = 0.01
EDIT_TIMEOUT_S = 120.0
START_TIMEOUT_S = 300.0
INTERVAL_S = 3600  # no periodic tick: every tick is an edit's (see the docstring)
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
RECORDS = 10
ROOT = Path(__file__).resolve().parents[1]
TARGET = {"paused": ("PAUSED", "PAUSED"), "running": ("STARTED", "RUNNING")}  # (target-state record, status)
GOAL_S = 1.0


# --- what both sides share: the config-topic tail and the status poll -----------------------


class ConfigTail:
    """Tails both groups' config topics (read_committed) from their ends, in a thread: when each
    target-state record arrived."""

    def __init__(self, bootstrap: str, topics: list[str]) -> None:
        from confluent_kafka import Consumer, TopicPartition

        conf = consumer_config(KafkaSettings(bootstrap_servers=bootstrap), None, **{"isolation.level": "read_committed"})
        self.consumer = Consumer(conf)
        # Each topic's end now, as a number: OFFSET_END would be looked up later, in the
        # background, and could skip a record written meanwhile.
        ends = [self.consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1] for topic in topics]
        self.consumer.assign([TopicPartition(topic, 0, end) for topic, end in zip(topics, ends, strict=True)])
        self.seen: list[tuple[float, str, str, str]] = []  # (perf_counter, topic, key, state)
        self.arrived = threading.Condition()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="config-tail")
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            message = self.consumer.poll(0.05)
            if message is None or message.error() is not None:
                continue
            now, key, value = time.perf_counter(), (message.key() or b"").decode(), message.value()
            if key.startswith("target-state-") and value:
                parsed = json.loads(value)
                with self.arrived:
                    self.seen.append((now, message.topic() or "", key, str(parsed.get("state.v2") or parsed["state"])))
                    self.arrived.notify_all()

    def wait(self, topic: str, state: str, since: float) -> float:
        """When `target-state-NAME` with `state` arrived in `topic` after `since`."""
        deadline = time.monotonic() + EDIT_TIMEOUT_S
        with self.arrived:
            while True:
                for at, where, key, found in self.seen:
                    if at > since and (where, key, found) == (topic, f"target-state-{NAME}", state):
                        return at
                left = deadline - time.monotonic()
                if left <= 0:
                    raise SystemExit(f"no target-state {state} record in {topic} within {EDIT_TIMEOUT_S:g} s")
                self.arrived.wait(left)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.consumer.close()


def shows(http: httpx.Client, state: str) -> bool:
    """Whether `GET /connectors/NAME/status` shows the connector and every task in `state`."""
    try:
        response = http.get(f"/connectors/{NAME}/status")
    except httpx.TransportError:
        return False
    if response.status_code != 200:
        return False
    body = response.json()
    tasks = body.get("tasks") or []
    return bool(body["connector"]["state"] == state and tasks and all(t["state"] == state for t in tasks))


def until_shown(http: httpx.Client, state: str, timeout_s: float = EDIT_TIMEOUT_S) -> float:
    deadline = time.monotonic() + timeout_s
    while not shows(http, state):
        if time.monotonic() > deadline:
            raise SystemExit(f"{http.base_url}: {NAME} not {state} within {timeout_s:g} s: "
                             f"{http.get(f'/connectors/{NAME}/status').text}")
        time.sleep(POLL_S)
    return time.perf_counter()


# --- the two sides ----------------------------------------------------------------------------


@dataclass
class Side:
    label: str
    config_topic: str
    http: httpx.Client
    change: Callable[[str], None]  # "paused" / "running": make the edit
    record_s: list[float] = field(default_factory=list)
    status_s: list[float] = field(default_factory=list)
    to_state: list[str] = field(default_factory=list)

    def edit(self, tail: ConfigTail, state: str) -> tuple[float, float]:
        """(a) and (b) for one edit, in seconds from just before it."""
        record_state, status_state = TARGET[state]
        started = time.perf_counter()
        self.change(state)
        shown = until_shown(self.http, status_state)
        return tail.wait(self.config_topic, record_state, started) - started, shown - started


def manifest(topic: str, state: str) -> str:
    return yaml.safe_dump({
        "apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": NAME},
        "spec": {"class": "datagen", "tasksMax": 1, "state": state, "config": {"topic": topic, "count": RECORDS}},
    }, sort_keys=False)


class Watch:
    """`reconciler watch DIR` as a process, its output in a log file."""

    def __init__(self, bootstrap: str, workdir: Path) -> None:
        self.directory, self.log = workdir / "manifests", workdir / "watch.log"
        self.directory.mkdir()
        self.file = self.directory / f"{NAME}.yaml"
        self.topic = f"{OURS_GROUP}.data"
        self.file.write_text(manifest(self.topic, "running"))
        self.command = [sys.executable, "-m", "reconciler.cli.main", "watch", str(self.directory),
                        "--interval", str(INTERVAL_S), "--http-bind", "127.0.0.1:0", "--worker-id", "bench:1",
                        "--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=768m",
                        "--bootstrap-servers", bootstrap, "--group-id", OURS_GROUP]
        env = {k: v for k, v in os.environ.items() if k not in ("RECONCILER_DRIVER_PID", "RECONCILER_FAILPOINTS")}
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(self.command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                            stderr=subprocess.STDOUT)

    def url(self) -> str:
        """The REST URL the process announces ("REST API (read-only) on http://…: …")."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            for line in self.log.read_text(errors="replace").splitlines():
                if "REST API (read-only) on " in line:
                    return line.split(" on ", 1)[1].split(": ", 1)[0]
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise SystemExit(f"`reconciler watch` announced no REST URL:\n{self.tail()}")

    def write(self, state: str) -> None:
        self.file.write_text(manifest(self.topic, state))

    def tail(self) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-40:])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def java_connector(worker: RunningConnect, workdir: Path, bootstrap: str) -> Callable[[str], None]:
    """Create Java's connector (RUNNING) and return how to pause / resume it."""
    lines = workdir / "java-source.txt"
    lines.write_text("".join(f'{{"id":{i}}}\n' for i in range(RECORDS)))
    topic = f"{JAVA_GROUP}.data"
    admin.create_topic(KafkaSettings(bootstrap_servers=bootstrap), topic)
    config = {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(lines), "topic": topic}
    status, body = worker.rest("POST", "/connectors", {"name": NAME, "config": config})
    if status != 201:
        raise SystemExit(f"creating Java's {NAME} failed: {status} {body}")

    def change(state: str) -> None:
        status, body = worker.rest("PUT", f"/connectors/{NAME}/{'pause' if state == 'paused' else 'resume'}")
        if status != 202:
            raise SystemExit(f"Java: {state}: {status} {body}")

    return change


# --- the run ------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--edits", type=int, default=50, help="timed edits per side (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed edits per side first (default: %(default)s)")
    parser.add_argument("--gap", type=float, default=0.5, help="seconds of quiet after each edit (default: %(default)s)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="bench-watch-latency-"))
    started_load = load_average()
    try:
        with start_broker(workdir / "broker-log") as broker, \
                start_connect(broker.bootstrap, JAVA_GROUP, workdir / "connect-log") as worker:
            watch = Watch(broker.bootstrap, workdir)
            try:
                sides, usage = run(args, broker.bootstrap, broker.pid, worker, watch)
            except BaseException:
                print(f"`reconciler watch`'s last output:\n{watch.tail()}", file=sys.stderr)
                raise
            finally:
                watch.stop()
            errors = worker.log_errors()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(args, started_load, watch.command, sides, usage)
    if errors:
        print(f"\nthe Java worker logged {len(errors)} ERROR line(s); the first: {errors[0]}")
    return 0


def run(args: argparse.Namespace, bootstrap: str, broker_pid: int, worker: RunningConnect,
        watch: Watch) -> tuple[list[Side], dict[str, Usage]]:
    java_change = java_connector(worker, watch.directory.parent, bootstrap)
    ours_http = httpx.Client(base_url=watch.url(), timeout=30)
    java_http = httpx.Client(base_url=worker.url, timeout=30)
    print("  waiting for our first tick (Spark's start) and Java's connector…", file=sys.stderr, flush=True)
    until_shown(ours_http, "RUNNING", START_TIMEOUT_S)
    until_shown(java_http, "RUNNING", START_TIMEOUT_S)
    sides = [Side("ours", Topics.for_group(OURS_GROUP).configs, ours_http, watch.write),
             Side("Java", Topics.for_group(JAVA_GROUP).configs, java_http, java_change)]
    tail = ConfigTail(bootstrap, [side.config_topic for side in sides])
    usage = {"ours": Usage(), "Java": Usage(), "broker": Usage()}
    try:
        for i in range(args.warmup):
            for side in sides:
                side.edit(tail, "paused" if i % 2 == 0 else "running")
                time.sleep(args.gap)
        print(f"  {args.edits} timed edits per side… (load average {load_average()})", file=sys.stderr, flush=True)
        broker_cpu = cpu_of(broker_pid)
        started = time.perf_counter()
        with ClusterMeter([watch.process.pid]).phase(usage["ours"]), JvmMeter(worker.pid).phase(usage["Java"]):
            for i in range(args.warmup, args.warmup + args.edits):
                for side in sides:
                    timed(side, tail, "paused" if i % 2 == 0 else "running", args.gap)
        usage["broker"].cpu_s = cpu_of(broker_pid) - broker_cpu
        usage["ours"].seconds = time.perf_counter() - started
    finally:
        tail.close()
        ours_http.close()
        java_http.close()
    return sides, usage


def timed(side: Side, tail: ConfigTail, state: str, gap: float) -> None:
    record_s, status_s = side.edit(tail, state)
    side.record_s.append(record_s)
    side.status_s.append(status_s)
    side.to_state.append(state)
    time.sleep(gap)


# --- the report ---------------------------------------------------------------------------------


def p95(values: list[float]) -> float:
    """The nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-95 * len(ordered) // 100) - 1)]


def figures(values: list[float]) -> str:
    if not values:
        return f"{'-':>7} {'-':>7} {'-':>7}"
    return f"{statistics.median(values):>7.3f} {p95(values):>7.3f} {max(values):>7.3f}"


def rows(side: Side) -> dict[str, list[float]]:
    def only(state: str, values: list[float]) -> list[float]:
        return [v for v, s in zip(values, side.to_state, strict=True) if s == state]

    between = [b - a for a, b in zip(side.record_s, side.status_s, strict=True)]
    return {
        "(a) config record in <group>-configs": side.record_s,
        "(b) GET …/status shows the state": side.status_s,
        "    (b), edits to PAUSED": only("paused", side.status_s),
        "    (b), edits to RUNNING": only("running", side.status_s),
        "    (a) → (b)": between,
    }


def report(args: argparse.Namespace, started_load: str, watch_command: list[str], sides: list[Side],
           usage: dict[str, Usage]) -> None:
    ours, java = sides
    print(f"\nwatch_latency: {args.edits} edits per side alternating paused/running (after {args.warmup} untimed), "
          f"{args.gap:g} s apart, Apache Kafka (one KRaft node) on loopback, {os.cpu_count()} cores")
    print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
    print(f"ours: {' '.join(['python', *watch_command[1:]])} (a manifest file rewritten)")
    print(f"Java: Kafka Connect {JAVA_GROUP} worker, PUT /connectors/{NAME}/pause | /resume")
    print(f"load average: {started_load} at the start, {load_average()} at the end (other work slows both sides)")
    print(f"\n{'seconds from the edit to':<40} {'ours: manifest write':^23}   {'Java: PUT pause/resume':^23}")
    print(f"{'':<40} {'median':>7} {'p95':>7} {'max':>7}   {'median':>7} {'p95':>7} {'max':>7}")
    for (label, mine), theirs in zip(rows(ours).items(), rows(java).values(), strict=True):
        print(f"{label:<40} {figures(mine)}   {figures(theirs)}")
    per_edit = {name: u.cpu_s / args.edits for name, u in usage.items()}
    print(f"\nCPU s per edit over the timed phase ({usage['ours'].seconds:.0f} s, both sides' edits and the gaps): "
          f"ours (watch + Spark) {per_edit['ours']:.3f}, Java worker {per_edit['Java']:.3f}, "
          f"broker {per_edit['broker']:.3f}")
    median = statistics.median(ours.status_s)
    verdict = "met" if median < GOAL_S else "NOT MET"
    print(f"goal (issue 12): ours, median manifest write → GET …/status under {GOAL_S:g} s: {verdict} ({median:.3f} s)")


if __name__ == "__main__":
    sys.exit(main())
