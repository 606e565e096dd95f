"""bench/lakehouse.py at a tiny size on the session's broker, Java Connect worker (Apache
Iceberg's sink on its plugin.path) and S3 server, one round (`--rounds 1`): Java's Iceberg sink
and ours into one SQL catalog, our delta-sink on S3, every table read back by its own reader
before a figure is printed; and the check that refuses a figure for a table that lacks or repeats
a row, in any round."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from reconciler.devtools.s3 import RunningS3
    from tests.conftest import KafkaUnderTest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from lake_sides import Result  # noqa: E402  (bench/lake_sides.py, by plain name)
from lakehouse import JAVA_LABEL, OURS_ICEBERG, check, check_rounds  # noqa: E402
from measure import RunFailed, Usage  # noqa: E402

RECORDS = 2000


@pytest.mark.timeout(1500)  # Java's sink and two `reconciler run --once`: minutes when the VM is loaded
def test_the_lakehouse_bench_checks_both_iceberg_tables_and_prints_their_figures(
        kafka: KafkaUnderTest, connect_worker: RunningConnect, s3_server: RunningS3) -> None:
    # One partition, so one task a side: with two, Java's second task joins while the first one's
    # coordinator commits, and Iceberg's own rebalance bug loses that commit (bench/lake_sides.py,
    # JavaIceberg): the bench then retries, which is its own business, not a test's 45-120 s.
    command = [sys.executable, "lakehouse.py", "--records", str(RECORDS), "--rounds", "1", "--partitions", "1",
               "--sides", "kcat,java-iceberg,iceberg,delta-s3",
               "--bootstrap", kafka.bootstrap, "--connect-url", connect_worker.url,
               "--connect-pid", str(connect_worker.pid), "--connect-log", str(connect_worker.log_path),
               "--s3-endpoint", s3_server.endpoint, "--s3-bucket", s3_server.bucket]
    bench = subprocess.Popen(command, cwd=BENCH, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, **s3_server.env(), "PYTHONPATH": str(ROOT)}, start_new_session=True)
    try:
        out, err = bench.communicate(timeout=1400)
    finally:  # a timeout must not leave its `reconciler run` and Spark's JVM behind
        if bench.poll() is None:
            os.killpg(bench.pid, signal.SIGKILL)
            bench.wait()
    assert bench.returncode == 0, out + err[-4000:]
    for label in ("kcat -C (the reference)", JAVA_LABEL, OURS_ICEBERG, "ours: delta-sink, S3"):
        line = next((line for line in out.splitlines() if line.startswith(label)), "")
        assert f" {RECORDS:,}          0" in line, out  # every row, none twice
    assert "org.apache.iceberg:iceberg-kafka-connect:" in out, out
    assert f"Both Iceberg tables hold the same {RECORDS:,} ids in every round." in out, out
    assert re.search(r"at [\d.]+ × \([\d.]+–[\d.]+, 1 runs\) the rate of Apache Iceberg's sink", out), out
    assert "ERROR line(s) while it ran" not in out, out


@pytest.mark.parametrize(("rows", "distinct"), [(RECORDS, RECORDS - 1), (RECORDS + 1, RECORDS), (RECORDS - 1, RECORDS - 1)])
def test_a_table_that_lacks_or_repeats_a_row_prints_no_figure(rows: int, distinct: int) -> None:
    good = Result("kcat -C (the reference)", Usage(1.0, 1.0, 1), RECORDS, RECORDS)
    bad = Result("ours: delta-sink, S3", Usage(1.0, 1.0, 1), rows, distinct)
    with pytest.raises(RunFailed, match=r"no figure printed: ours: delta-sink, S3: .* expected 2,000"):
        check([good, bad], RECORDS)


@pytest.mark.parametrize("wrong_round", [1, 3])
def test_a_wrong_count_in_any_round_prints_no_figure(wrong_round: int) -> None:
    def result(label: str, rows: int = RECORDS, distinct: int = RECORDS) -> Result:
        return Result(label, Usage(1.0, 1.0, 1), rows, distinct)

    kcat = [result("kcat -C (the reference)") for _ in range(3)]
    ours = [result("ours: parquet-sink, S3", *((RECORDS, RECORDS - 1) if r == wrong_round else ())) for r in (1, 2, 3)]
    with pytest.raises(RunFailed, match=rf"no figure printed: round {wrong_round}: ours: parquet-sink, S3: "
                                        r"2,000 rows, 1,999 distinct ids"):
        check_rounds([kcat, ours], RECORDS)
    check_rounds([kcat, [result("ours: parquet-sink, S3") for _ in range(3)]], RECORDS)  # all right: no error
    with pytest.raises(RunFailed, match="ran a different number of times"):
        check_rounds([kcat, ours[:2]], RECORDS)
