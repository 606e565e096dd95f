"""Every benchmark in bench/ that runs on this machine, run at a tiny size as its command runs,
so that a benchmark broken by a product change fails the build instead of printing a figure;
and the shared piece that keeps them honest (bench/measure.py).

Each run is checked for its exit code 0 and the figure lines it prints; the benches check their
own results (counts read back, exit codes, no duplicates) and exit 1 with no figure otherwise,
which a broken bench of plan_scale shows here. throughput runs in this process on the session's
broker and Spark session (`in_session`): a Spark start of its own would cost more than the run;
delta_task needs neither Kafka nor Spark;
state_read, many_connectors, watch_idle and spark_backends run on the session's broker
(`--bootstrap`, in groups and topics of their own): a broker's start each was seconds of CI.
Not run here: the benches that time Java Connect against us for minutes (connect_head_to_head,
watch_latency); connect_head_to_head's per-run check and its rounds' pairing are tested here
without a broker.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

import connect_head_to_head as h2h  # noqa: E402  (bench/connect_head_to_head.py)
import throughput  # noqa: E402  (bench/throughput.py)
from h2h_sides import ID_BASE, Result, job_times, one_file  # noqa: E402  (bench/h2h_sides.py)
from measure import RunFailed, Spread, Usage, alternating, ratios, run_notes  # noqa: E402  (bench/measure.py, by plain name)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from tests.conftest import KafkaUnderTest


def run_bench(script: str | Path, *args: str, timeout_s: float = 900) -> str:
    """The bench's output; fails the test with its last lines unless it exited 0."""
    done = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=timeout_s, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{output[-3000:]}"
    return done.stdout


@pytest.mark.timeout(900)  # its own broker and Spark session: 1-2 min on a quiet machine, 5 when loaded
def test_plan_scale_times_commands_that_succeed_and_refuses_a_figure_when_they_fail(tmp_path: Path) -> None:
    out = run_bench(BENCH / "plan_scale.py", "--connectors", "40", "--drift", "0.1", "--runs", "1")
    assert re.search(r"^validate \+ plan: [\d.]+ s \(", out, re.MULTILINE), out
    # The same bench on manifests that do not validate (the key it carried before): exit 1, no figure.
    broken = tmp_path / "plan_scale.py"
    broken.write_text((BENCH / "plan_scale.py").read_text().replace("    compression: zstd\n", "    db.password: x\n"))
    (tmp_path / "measure.py").write_text((BENCH / "measure.py").read_text())
    done = subprocess.run([sys.executable, str(broken), "--connectors", "5", "--runs", "1"], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 1 and "FAILED, no figure printed: validate exited 1" in done.stderr, done
    assert "validate + plan" not in done.stdout


@pytest.mark.timeout(900)  # its own Spark session: 1-2 min on a quiet machine, 5 when loaded
def test_many_connectors_at_a_tiny_size(kafka: KafkaUnderTest) -> None:
    out = run_bench(BENCH / "many_connectors.py", "--connectors", "3", "--records", "20", "--runs", "1",
                    "--idle-ticks", "1", "--warm-up-rounds", "0", "--bootstrap", kafka.bootstrap)
    assert re.search(r"^idle tick over 3 connectors .* ms per connector", out, re.MULTILINE), out
    assert re.search(r"^many / one: [\d.]+ x", out, re.MULTILINE), out
    assert re.search(r"^bare / one: [\d.]+ x", out, re.MULTILINE), out


@pytest.mark.timeout(900)  # its own `watch` and Spark session: 1-2 min on a quiet machine, 5 when loaded
def test_watch_idle_at_a_tiny_size(kafka: KafkaUnderTest) -> None:
    out = run_bench(BENCH / "watch_idle.py", "--connectors", "2", "--records", "10", "--ticks", "10",
                    "--warmup-ticks", "1", "--interval", "0.05", "--bootstrap", kafka.bootstrap)
    assert re.search(r"^CPU per idle tick .*: [\d.]+ ms", out, re.MULTILINE), out
    assert re.search(r"^goals: .* idle tick: (not )?met; no growth .*: (not )?met$", out, re.MULTILINE), out


@pytest.mark.timeout(900)  # its own Spark session: 1-2 min on a quiet machine, 5 when loaded
def test_spark_backends_at_a_tiny_size(kafka: KafkaUnderTest) -> None:
    out = run_bench(BENCH / "spark_backends.py", "--records", "2000", "--rounds", "1", "--bootstrap", kafka.bootstrap)
    assert out.count("2000 records in") == 2, out


@pytest.mark.timeout(600)
def test_throughput_at_a_tiny_size(
    spark_session: SparkSession, kafka: KafkaUnderTest, capsys: pytest.CaptureFixture[str]
) -> None:
    pid = kafka.broker.pid if kafka.broker is not None else None
    throughput.in_session(["--records", "2000", "--runs", "1", "--spark-master", "local[2]"], spark_session,
                          kafka.bootstrap, pid)
    out = capsys.readouterr().out
    for path in (r"\(b\) datagen → topic, Spark", r"\(a\) topic → parquet-sink, Spark", "    confluent-kafka produce\\(\\)"):
        assert re.search(rf"^{path} +[\d.]+ s \(.*[\d.]+ x \(", out, re.MULTILINE), out
    assert re.search(r"^    kcat -P from a file +[\d.]+ s", out, re.MULTILINE), out


@pytest.mark.timeout(600)
def test_state_read_at_a_tiny_size(kafka: KafkaUnderTest) -> None:
    out = run_bench(BENCH / "state_read.py", "--connectors", "50", "--runs", "1", "--bootstrap", kafka.bootstrap)
    assert re.search(r"^ours: read_live_state \(in process\) +[\d.]+ s \(.*[\d.]+ x \(", out, re.MULTILINE), out
    assert re.search(r"^goal: snapshot process within 2.5x of kcat: (met|NOT MET) \([\d.]+ x", out, re.MULTILINE), out


def test_delta_task_at_a_tiny_size_rolls_its_files() -> None:
    out = run_bench(BENCH / "delta_task.py", "--records", "2000", "--rounds", "1",
                    "--key", "delta.max.records.per.file=500")
    assert re.search(r"^this: 2,000 records, task [\d.]+ s .* peak RSS \d+ MB .*, 4 file\(s\)$", out, re.MULTILINE), out


def test_medians_alternate_and_a_failed_run_has_no_figure() -> None:
    order: list[str] = []
    runs = alternating(3, {"a": lambda: order.append("a") or 1.0, "b": lambda: order.append("b") or 2.0})
    assert order == ["a", "b", "b", "a", "a", "b"] and runs == {"a": [1.0] * 3, "b": [2.0] * 3}
    spread = Spread.of([3.0, 1.0, 2.0, 10.0])
    assert (spread.median, spread.low, spread.high, spread.runs) == (2.5, 1.0, 10.0, 4)
    assert spread.show() == "2.50 s (1.00–10.00, 4 runs)"
    assert ratios([2.0, 4.0, 9.0], [1.0, 2.0, 3.0]).median == 2.0
    with pytest.raises(RunFailed, match="no figure printed: sides ran a different number of times"):
        ratios([1.0], [1.0, 2.0])


def test_head_to_head_checks_each_run_and_pairs_each_round_with_its_fixed_cost(tmp_path: Path) -> None:
    """connect_head_to_head's rounds (the bench itself takes minutes of Java Connect: not run here)."""
    nothing = cast(Any, None)
    bench = h2h.Bench(argparse.Namespace(records=3), "kcat", tmp_path, nothing, nothing, nothing)

    def writes(ids: list[int]) -> Callable[[Path, str], Result]:
        def run(path: Path, name: str) -> Result:
            path.write_bytes(b"".join(b'{"id":%d,"pad":""}\n' % (ID_BASE + i) for i in ids))
            return Result("side", Usage(1.0), len(ids), 0.0)
        return run

    assert bench.checked_output("good", 3, writes([0, 1, 2]), one_file)(1).records == 3
    assert not (tmp_path / "out" / "good-1").exists()  # checked, then removed
    with pytest.raises(RunFailed, match="no figure printed: side, run 2: 3 lines, 1 records missing, 1 duplicated"):
        bench.checked_output("bad", 3, writes([0, 1, 1]), one_file)(2)

    def result(seconds: float, job_s: float | None = None) -> Result:
        return Result("ours", Usage(seconds, 1.0, 2**20), 3, 0.5, session_s=1.0, job_s=job_s)

    ours, fixed, kcat = [result(4.0, 1.0), result(8.0, 2.0)], [result(3.0, 0.1), result(5.0, 0.2)], [result(1.0), result(4.0)]
    rows = h2h.with_fixed_runs({"kcat": kcat, "ours": ours, "ours" + h2h.FIXED: fixed})
    assert rows == [kcat, ours] and [r.fixed_s for r in ours] == [3.0, 5.0]
    lines = h2h.side_lines(ours, [r.usage.seconds for r in kcat])
    assert "6.00 s (4.00–8.00, 2 runs)" in lines[0] and "0.38 x (0.25–0.50, 2 runs)" in lines[0], lines
    assert "4.00 s (3.00–5.00, 2 runs)" in lines[3], lines  # one record, the fixed cost
    assert run_notes([["a", "b"], ["a"]]) == ["a", "run 1: b"]


def test_a_jobs_time_leaves_out_the_session_start_it_waited_for() -> None:
    """The runtime starts its Spark session inside its first job's timing: 3 s of that job's 4 s."""
    log = ("INFO reconciler.runtime.spark.session: Spark session (local[*]) ready in 3.0s @5000ms\n"
           "DEBUG reconciler.runtime.source.job: source s: job of 2 task(s) 4.000s (tasks 0.50, 0.40 s) @6000ms\n"
           "DEBUG reconciler.runtime.sink.job: sink k: 1 range(s) planned in 0.010s, job 0.500s (partitions 0.40 s), "
           "1 offset(s) committed in 0.010s @7000ms\n")
    assert job_times(log) == (3.0, 1.5)
    assert job_times(log.splitlines()[0]) == (3.0, None)  # no job line: no figure (the bench refuses it)
    packed = "DEBUG reconciler.runtime.source.job: sources: 3 connectors: job of 6 task(s) 2.000s (tasks 0.1 s) @9000ms"
    assert job_times(f"{log}{packed}\n") == (3.0, 3.5)  # sources packed into one job count too
