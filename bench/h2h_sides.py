"""The sides of bench/connect_head_to_head.py: Java Connect's FileStream connectors through the
worker's REST API, and ours through `reconciler run --once`; plus the topics and the checks.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING

from measure import ClusterMeter, JvmMeter, RunFailed, Usage, cpu_of, require, run_measured  # bench/measure.py

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect

POLL_S = 0.02
STALL_S = 120.0  # no progress for this long: the side is stuck; say why and stop
MAX_RUNS = 5
ID_BASE = 1_000_000_000  # record ids are ID_BASE + 0…N-1: `{"id":<10 digits>,…`
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
_MOVED = re.compile(r"(\d+) record\(s\) moved")
_SESSION = re.compile(r"Spark session \(.*?\) ready in ([\d.]+)s")
# The runtime's debug line of each batch's Spark job (reconciler.runtime.sink.job, .source.job), and
# the session's, each stamped by bench/reconciler_timed.py with its time since start (` @1234ms`).
# The runtime's lines: "sink NAME: … job 0.5s …", "source NAME: job of 2 task(s) 0.5s …" and,
# for sources packed into one job, "sources: 3 connectors: job of 6 task(s) 0.5s …".
_JOB = re.compile(r"^DEBUG reconciler\.runtime\.[\w.]+: (?:sink \S+|source \S+|sources: \d+ connectors): "
                  r"(?:.*?, )?job (?:of \d+ task\(s\) )?([\d.]+)s.* @(\d+)ms$", re.MULTILINE)
_SESSION_AT = re.compile(r"Spark session \(.*?\) ready in ([\d.]+)s @(\d+)ms$", re.MULTILINE)
TIMED = Path(__file__).resolve().parent / "reconciler_timed.py"


@dataclass
class Result:
    label: str
    usage: Usage
    records: int
    broker_cpu_s: float
    fixed_s: float | None = None  # the side's fixed cost per run (None: kcat, nothing to speak of)
    session_s: float | None = None  # ours: Spark session start, within `usage.seconds`
    job_s: float | None = None  # ours: the batch's Spark job (from the runtime's log), within it too
    fixed_job_s: float | None = None  # ours: the Spark job of a batch of one record
    fixed_run: Result | None = None  # ours: the run that moved one record, in the same round
    notes: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.records / self.usage.seconds



# --- topics ---------------------------------------------------------------------------------


class Topics:
    """Creating the bench's topics and counting what a non-transactional producer wrote."""

    def __init__(self, bootstrap: str, partitions: int) -> None:
        from reconciler.kafka.settings import KafkaSettings

        self.bootstrap, self.partitions = bootstrap, partitions
        self.settings = KafkaSettings(bootstrap_servers=bootstrap, group_id="h2h")
        # Counted by the project's `end_offsets` (a new consumer each time, 5 s at most): one
        # consumer kept for the watermark queries of a new topic kept answering "Not leader for
        # partition" for minutes in two runs of three on 2026-11-27 (while the Java source had
        # written everything in 10 s).
        self.counting = replace(self.settings, timeout_s=5.0)

    def create(self, topic: str) -> None:
        """Created as our runtime creates a topic: usable once this returns (its leaders answer)."""
        from reconciler.kafka.io.admin import create_topic

        create_topic(self.settings, topic, self.partitions)

    def count(self, topic: str) -> int:
        """The sum of the partitions' end offsets (= records, without transaction markers); -1
        while a partition's leader does not answer."""
        from reconciler.errors import ReconcilerError
        from reconciler.kafka.io.consume import end_offsets

        try:
            return sum(end_offsets(self.counting, topic, isolation_level="read_uncommitted").values())
        except ReconcilerError:
            return -1

    def produce_one(self, topic: str) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap})
        producer.produce(topic, b'{"id":%d,"pad":""}' % ID_BASE)
        require(producer.flush(30) == 0, f"could not produce to {topic}")


def count_topic_lines(kcat: str, bootstrap: str, topic: str, dump: Path) -> None:
    """Every committed record's value of `topic` as a line of `dump` (librdkafka reads committed)."""
    with dump.open("wb") as out:
        subprocess.run([kcat, "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n",
                        "-X", "fetch.wait.max.ms=10"], stdout=out, check=True)


def verify_lines(paths: list[Path], records: int, what: str) -> None:
    """Every id 0…records-1 exactly once across the files' lines, or `RunFailed` saying what is off."""
    seen, lines, duplicates = bytearray(records), 0, 0
    for path in paths:
        with path.open("rb") as handle:
            for line in handle:
                lines += 1
                number = int(line[6:16]) - ID_BASE
                duplicates += seen[number]
                seen[number] = 1
    missing = records - sum(seen)
    require(not missing and not duplicates and lines == records,
            f"{what}: {lines:,} lines, {missing:,} records missing, {duplicates:,} duplicated")


def check_topic(kcat: str, bootstrap: str, topic: str, workdir: Path, n: int) -> None:
    """Every id 0…n-1 exactly once in the topic's committed records."""
    dump = workdir / f"{topic}.lines"
    count_topic_lines(kcat, bootstrap, topic, dump)
    verify_lines([dump], n, f"topic {topic}")
    dump.unlink()


def one_file(path: Path, records: int, what: str) -> None:
    """kcat's or Java's sink output: one file."""
    verify_lines([path], records, what)


def txt_files(path: Path, records: int, what: str) -> None:
    """our file-sink's output: a directory of files (a file per partition), hidden ones not counted."""
    verify_lines(sorted(p for p in path.rglob("*.txt") if not p.name.startswith(".")), records, what)


def verify_parquet(path: Path, records: int, what: str) -> None:
    """Every id exactly once in the Parquet files' values (the same check as `verify_lines`)."""
    import pyarrow.parquet as pq  # only for this check: the bench's other sides do not need pyarrow

    lines = path / "lines.txt"
    with lines.open("wb") as out:
        for file in sorted(p for p in path.rglob("*.parquet") if not p.name.startswith(".")):
            out.writelines(v + b"\n" for v in pq.read_table(file, columns=["value"]).column("value").to_pylist())
    verify_lines([lines], records, what)


def job_times(log: str) -> tuple[float, float | None]:
    """From `reconciler_timed`'s log: (the Spark session's start, the batch jobs' time without
    it; None when the log has no job line). The runtime starts its session at its first job
    (`session()` is called inside the timed part), so a job's time can hold the session's start:
    the part of each job that overlaps the session's start is taken off."""
    session = _SESSION_AT.search(log)
    ready = int(session.group(2)) / 1000 if session else 0.0
    session_s = float(session.group(1)) if session else 0.0
    jobs = [(float(seconds), int(at) / 1000) for seconds, at in _JOB.findall(log)]
    if not jobs:
        return session_s, None
    overlaps = [max(0.0, min(end, ready) - max(end - seconds, ready - session_s)) for seconds, end in jobs]
    return session_s, sum(seconds for seconds, _ in jobs) - sum(overlaps)


# --- Java -----------------------------------------------------------------------------------


def wait_for(progress: Callable[[], int], target: int, side: str, diagnose: Callable[[], str]) -> tuple[float, float]:
    """Poll `progress()` until it reaches `target`: the perf_counter times of the first
    progress and of the end. Stops with `diagnose()` when nothing moves for STALL_S."""
    first: float | None = None
    last, last_change = -1, time.perf_counter()
    while True:
        now, value = time.perf_counter(), progress()
        if value > 0 and first is None:
            first = now
        if value >= target:
            return first or now, now
        if value != last:
            last, last_change = value, now
        elif now - last_change > STALL_S:
            raise RunFailed(f"{side}: stuck at {value:,} of {target:,} for {STALL_S:g}s; {diagnose()}")
        time.sleep(POLL_S)


@dataclass
class JavaSide:
    worker: RunningConnect
    bootstrap: str
    broker_pid: int

    def source(self, file: Path, topic: str, records: int, topics: Topics, name: str = "java-file-source") -> Result:
        """Into `topic`, as connector `name` (a new name per run: Connect keeps a source's offsets by it)."""
        config = {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(file), "topic": topic}
        return self._run(name, config, lambda: topics.count(topic), records, records, "Java FileStreamSource")

    def sink(self, topic: str, file: Path, records: int, expected_bytes: int, partitions: int,
             name: str = "java-file-sink") -> Result:
        """Into `file`, as connector `name` (a new name per run: its consumer group is named after it)."""
        config = {"connector.class": FILE_SINK, "tasks.max": str(partitions), "file": str(file), "topics": topic}
        return self._run(name, config, lambda: _size(file), expected_bytes, records, "Java FileStreamSink")

    def _run(self, name: str, config: dict[str, str], progress: Callable[[], int], target: int, records: int,
             label: str) -> Result:
        usage, broker = Usage(), cpu_of(self.broker_pid)
        with JvmMeter(self.worker.pid).phase(usage):
            started = time.perf_counter()
            status, body = self.worker.rest("POST", "/connectors", {"name": name, "config": config})
            require(status == 201, f"creating {name} failed: {status} {body}")
            first, done = wait_for(progress, target, label, lambda: str(self.worker.rest("GET", f"/connectors/{name}/status")))
            usage.seconds = done - started
        broker_cpu = cpu_of(self.broker_pid) - broker
        self.worker.rest("DELETE", f"/connectors/{name}")
        return Result(label, usage, records, broker_cpu, fixed_s=first - started)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


# --- ours -----------------------------------------------------------------------------------


SOURCE_MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata: {{name: {name}}}
spec:
  class: file-source
  tasksMax: 1
  config: {{path: "{path}", topic: {topic}, format: jsonl, key: none}}
"""

SINK_MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata: {{name: {name}}}
spec:
  class: {sink}
  tasksMax: {tasks}
  config: {{topics: {topic}, path: "{path}"}}
"""


@dataclass
class OursSide:
    """`reconciler run --once` on `local[*]`, or on a standalone cluster: `spark_args` name it
    (`--spark-master`, the packed environment), `cluster` meters its workers' processes (the
    executors are theirs, not the command's), `where` labels the rows."""

    bootstrap: str
    broker_pid: int
    workdir: Path
    spark_args: tuple[str, ...] = ()
    cluster: ClusterMeter | None = None
    where: str = "local[*]"

    def source(self, directory: Path, topic: str, records: int, name: str = "bench") -> Result:
        manifest = SOURCE_MANIFEST.format(name=f"{name}-file-source", path=directory, topic=topic)
        return self._run(f"{name}-source", manifest, records, f"ours: file-source, {self.where}")

    def sink(self, topic: str, path: Path, records: int, partitions: int, name: str = "bench",
             sink: str = "file-sink") -> Result:
        manifest = SINK_MANIFEST.format(name=f"{name}-{sink}", sink=sink, tasks=partitions, topic=topic, path=path)
        return self._run(f"{name}-{sink}", manifest, records, f"ours: {sink}, {self.where}")

    def _run(self, name: str, manifest: str, records: int, label: str) -> Result:
        """`reconciler run --once` on a group of its own (no other connector runs in its tick),
        repeated while a batch's limits leave records for the next (the runs are added up)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        path = self.workdir / f"{name}.yaml"
        path.write_text(manifest)
        # `reconciler run`, with the runtime's log: the session start and the batch job's time.
        command = [sys.executable, str(TIMED), "run", str(path), "--once",
                   "--bootstrap-servers", self.bootstrap, "--group-id", f"h2h-ours-{name}", *self.spark_args]
        total, moved, runs, broker, session_s, job_s = Usage(), 0, 0, cpu_of(self.broker_pid), 0.0, 0.0
        while moved < records and runs < MAX_RUNS:
            runs += 1
            output, log = self.workdir / f"{name}-{runs}.out", self.workdir / f"{name}-{runs}.log"
            with output.open("wb") as out, log.open("wb") as err:
                code, usage = self._measured(command, out, err)
            text = output.read_text()
            match = _MOVED.search(text)
            require(code == 0 and match is not None and "FAILED" not in text,
                    f"{label}: run {runs} failed (exit {code}):\n{text[-3000:]}\n{log.read_text()[-3000:]}")
            assert match is not None  # for mypy: required just above
            moved += int(match.group(1))
            session, jobs = job_times(log.read_text())
            require(jobs is not None, f"{label}: run {runs}: no batch job time in its debug log (h2h_sides._JOB no "
                    "longer matches the runtime's line?): no figure for its job")
            session_s, job_s = session_s + session, job_s + (jobs or 0.0)
            total = Usage(total.seconds + usage.seconds, total.cpu_s + usage.cpu_s, max(total.peak_rss, usage.peak_rss))
        require(moved == records, f"{label}: moved {moved:,} records in {runs} runs, not {records:,}")
        notes = [f"{runs} runs of `reconciler run --once` (each batch's limits)"] if runs > 1 else []
        return Result(label, total, records, cpu_of(self.broker_pid) - broker, notes=notes, session_s=session_s,
                      job_s=job_s)

    def _measured(self, command: list[str], out: IO[bytes], err: IO[bytes]) -> tuple[int, Usage]:
        """The command's own usage, plus its executors' on a cluster (CPU added, peaks summed)."""
        if self.cluster is None:
            return run_measured(command, stdout=out, stderr=err)
        executors = Usage()
        with self.cluster.phase(executors):
            code, usage = run_measured(command, stdout=out, stderr=err)
        return code, Usage(usage.seconds, usage.cpu_s + executors.cpu_s, usage.peak_rss + executors.peak_rss)


@contextmanager
def on_spark_connect(ours: OursSide) -> Iterator[OursSide]:
    """Our side on a Spark Connect server started once for every round (`local[2]` on this
    machine, its Python workers on the packed environment, as the tests' server), as a server
    already running is met: `reconciler run --spark-remote` keeps its server session across runs
    (docs/runtime.md#spark-connect), and the bench's first run on it sets that session up."""
    from reconciler.devtools.pack_env import cached_pack
    from reconciler.devtools.spark_cluster import start_connect_server

    target = ours.workdir.parent / "connect-env"
    with tarfile.open(cached_pack()) as archive:
        archive.extractall(target, filter="tar")
    with start_connect_server(ours.workdir.parent / "spark-connect", python=str(target / "bin" / "python")) as server:
        yield OursSide(ours.bootstrap, ours.broker_pid, ours.workdir.parent / "ours-connect",
                       ("--spark-remote", server.url), None, "spark connect")
