"""Spark's JVM launched in two halves (`runtime.spark.gateway`) as PySpark launches it, and the
early launch of `run --once` (`runtime.spark.early`): used by the session whose settings it was
launched with, ended otherwise. (The JVM itself starts in tests/integration/: every `run --once`
in a process of its own connects to a JVM launched this way.)"""

from __future__ import annotations

import io
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from pyspark.find_spark_home import _find_spark_home
from pyspark.serializers import UTF8Deserializer, read_int

from reconciler.runtime.spark import early, gateway
from reconciler.runtime.spark.session import SparkTarget


def launched(argv: list[str]) -> gateway.Launched:
    process = subprocess.Popen(argv, stdin=subprocess.PIPE)
    return gateway.Launched(options={}, process=process, info_dir=tempfile.mkdtemp())


def test_the_command_is_pysparks() -> None:
    assert gateway.command("/spark", {"spark.master": "local[2]", "a": "b=c"}, {}) == [
        "/spark/bin/spark-submit", "--conf", "spark.master=local[2]", "--conf", "a=b=c", "pyspark-shell"]
    line = gateway.command("/s", {}, {"PYSPARK_SUBMIT_ARGS": "--jars 'x y.jar' pyspark-shell", "SPARK_TESTING": "1"})
    assert line == ["/s/bin/spark-submit", "--conf", "spark.ui.enabled=false", "--jars", "x y.jar", "pyspark-shell"]


def test_spark_home_is_pysparks_and_a_home_without_spark_submit_is_none(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert gateway.spark_home() == _find_spark_home()
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    assert gateway.spark_home() is None
    with pytest.raises(gateway.GatewayExited, match="no Spark found"):
        gateway.launch({})


def test_the_address_is_read_as_pyspark_reads_it() -> None:
    secret = "s3cr\u00e9t"
    data = struct.pack(">i", 40123) + struct.pack(">i", len(secret.encode())) + secret.encode()
    stream = io.BytesIO(data)
    assert (read_int(stream), UTF8Deserializer().loads(stream)) == (40123, secret)  # PySpark's reading
    jvm = launched([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        Path(jvm.info_file).write_bytes(data)
        assert gateway._address(jvm) == (40123, secret)
        assert not os.path.exists(jvm.info_dir)  # the secret's file is gone once read
    finally:
        jvm.abandon()


def test_a_jvm_that_exits_before_its_gateway_is_up_is_an_error() -> None:
    jvm = launched([sys.executable, "-c", "raise SystemExit(3)"])
    with pytest.raises(gateway.GatewayExited, match=r"code 3"):
        gateway._address(jvm)
    assert not os.path.exists(jvm.info_dir)
    jvm.abandon()


@pytest.fixture
def no_launch(monkeypatch: pytest.MonkeyPatch) -> list[gateway.Launched]:
    """early.launch with a stand-in JVM (a sleeping process) and no prefork."""
    made: list[gateway.Launched] = []

    def launch_jvm(options: dict[str, str], *, relay_stderr: bool) -> gateway.Launched:
        made.append(launched([sys.executable, "-c", "import time; time.sleep(30)"]))
        return made[-1]

    monkeypatch.setattr(early.context, "launch_jvm", launch_jvm)
    monkeypatch.setattr(early, "classic_options", lambda master, conf: ({"spark.master": master, **conf}, None))
    monkeypatch.setattr(early, "_LAUNCHED", [])
    monkeypatch.setattr(early, "_EVER", [])
    return made


def test_the_session_launched_early_is_taken_by_its_own_start(no_launch: list[gateway.Launched]) -> None:
    target = SparkTarget(master="local[2]", conf={"spark.x": "1"})
    early.launch(target)
    early.launch(target)  # one JVM a process
    assert len(no_launch) == 1
    taken = early.take(SparkTarget(master="local[2]", conf={"spark.x": "1"}))
    assert taken is not None and taken.jvm is no_launch[0] and taken.options["spark.x"] == "1"
    assert early.take(target) is None  # taken once
    taken.abandon()


def test_a_jvm_launched_for_other_settings_is_ended(no_launch: list[gateway.Launched]) -> None:
    early.launch(SparkTarget(master="local[2]", conf={"spark.x": "1"}))
    assert early.take(SparkTarget(master="local[2]", conf={"spark.x": "2"})) is None
    assert no_launch[0].process.poll() is not None  # killed, not left running beside the real one


@pytest.mark.parametrize("target", [SparkTarget(master="spark://h:7077"), SparkTarget(remote="sc://h:15002")])
def test_nothing_is_launched_early_for_a_cluster_or_spark_connect(no_launch: list[gateway.Launched],
                                                                  target: SparkTarget) -> None:
    early.launch(target)
    assert no_launch == [] and early.take(target) is None


def test_at_the_end_a_jvm_no_session_connected_to_is_ended_and_its_gateway_file_removed(
        no_launch: list[gateway.Launched]) -> None:
    early.launch(SparkTarget(master="local[2]"))
    early.discard()  # `run --once` with nothing to run: no take, no connect
    assert no_launch[0].process.poll() is not None and not os.path.exists(no_launch[0].info_dir)
    early.launch(SparkTarget(master="local[2]"))
    taken = early.take(SparkTarget(master="local[2]"))
    assert taken is not None
    taken.jvm.connected = True  # as `gateway.connect` marks it
    early.discard()
    assert no_launch[1].process.poll() is None  # the session's JVM is left alone
    taken.abandon()
