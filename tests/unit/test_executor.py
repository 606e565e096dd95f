"""Pure parts of the Spark runtime: partition assignment, sink topics and groups, session
settings, failpoint arming. (Jobs themselves run in tests/integration/test_spark_*.py.)"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest

from reconciler.connectors.api import ConnectorError
from reconciler import failpoints
from reconciler.runtime.batch.tasks import TaskWork, assign_partitions, connector_task_count
from reconciler.kafka.io.offset_stores import sink_group
from reconciler.runtime.sink.job import consumer_overrides, sink_topics
from reconciler.kafka.io.produce import task_transactional_id as transactional_id
from reconciler.runtime.spark.session import is_local, master_addresses, session_conf


@pytest.mark.parametrize(
    ("partitions", "tasks", "expected"),
    [
        ([("a", 0), ("a", 1), ("a", 2)], 2, {0: [("a", 0), ("a", 2)], 1: [("a", 1)]}),
        ([("b", 1), ("a", 0), ("b", 0)], 2, {0: [("a", 0), ("b", 1)], 1: [("b", 0)]}),  # sorted first
        ([("a", 0)], 3, {0: [("a", 0)], 1: [], 2: []}),  # idle tasks get nothing
        ([], 1, {0: []}),
        ([("a", 0), ("a", 0)], 1, {0: [("a", 0)]}),  # each partition once
    ],
)
def test_partitions_are_dealt_round_robin_over_the_sorted_list(
    partitions: list[tuple[str, int]], tasks: int, expected: dict[int, list[tuple[str, int]]]
) -> None:
    assert assign_partitions(partitions, tasks) == expected


def test_assignment_needs_a_task() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        assign_partitions([("a", 0)], 0)


def work(task_id: int, task_count: int | None = None) -> TaskWork:
    return TaskWork("c", task_id, "parquet-sink", "sink", {}, {}, task_count)


@pytest.mark.parametrize(
    ("works", "expected"),
    [
        ([work(0, 3)], 3),  # the connector's count, even when only task 0 runs
        ([work(0), work(2)], 3),  # unknown: highest id + 1
        ([work(1)], 2),
    ],
)
def test_task_count(works: list[TaskWork], expected: int) -> None:
    assert connector_task_count(works) == expected


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"topics": "b, a,b"}, ["b", "a"]),
        ({"topics": "a,missing"}, ["a"]),
        ({"topics.regex": "a|b"}, ["a", "b"]),
        ({"topics.regex": "c.*"}, ["c1", "c2"]),
        ({"topics": "b", "topics.regex": "a"}, ["b", "a"]),
        ({}, []),
    ],
)
def test_sink_topics(config: dict[str, str | None], expected: list[str]) -> None:
    assert sink_topics(config, {"a": 1, "b": 2, "c1": 1, "c2": 1}) == expected


def test_bad_topics_regex_is_a_connector_error() -> None:
    with pytest.raises(ConnectorError, match="topics.regex"):
        sink_topics({"topics.regex": "("}, {"a": 1})


def test_sink_group_and_consumer_overrides_as_connect() -> None:
    config: dict[str, str | None] = {
        "consumer.override.group.id": "custom",
        "consumer.override.isolation.level": "read_uncommitted",
        "consumer.override.unset": None,
        "topics": "a",
    }
    assert sink_group("archive", {}) == "connect-archive"
    assert sink_group("archive", config) == "custom"
    assert consumer_overrides(config) == {"isolation.level": "read_uncommitted"}


def test_transactional_id_is_connects() -> None:
    assert transactional_id("connect-cluster", "orders", 3) == "connect-cluster-orders-3"


def test_local_sessions_bind_loopback_and_run_this_interpreters_path() -> None:
    conf = session_conf("local[*]", {"spark.ui.enabled": "true", "spark.executor.memory": "2g"})
    assert conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.ui.enabled"] == "true" and conf["spark.executor.memory"] == "2g"  # user wins
    paths = conf["spark.executorEnv.PYTHONPATH"].split(os.pathsep)
    assert all(os.path.isabs(p) for p in paths) and any(p.endswith("site-packages") for p in paths)
    assert all(p in paths for p in map(os.path.abspath, sys.path) if p and os.path.isdir(p))
    assert conf["spark.python.daemon.module"] == "reconciler.runtime.spark.daemon"  # in this package


def test_cluster_sessions_advertise_the_address_that_routes_to_the_master(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_LOCAL_IP", raising=False)
    assert not is_local("spark://host:7077") and is_local("local") and is_local("local[2]")
    conf = session_conf("spark://127.0.0.1:7077", {})
    # Executors call the driver back: the address on the route to the master, not the host name's.
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert "spark.executorEnv.PYTHONPATH" not in conf  # the code is shipped instead
    assert "spark.python.daemon.module" not in conf  # PySpark's own: executors may lack this package
    assert conf["spark.ui.enabled"] == "false"
    assert session_conf("spark://127.0.0.1:7077", {"spark.driver.host": "10.0.0.5"})["spark.driver.host"] == "10.0.0.5"


def test_master_urls_with_several_masters_are_all_read() -> None:
    assert master_addresses("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert master_addresses("spark://[::1]:7077") == [("::1", 7077)]
    assert master_addresses("spark://nohost") == []


def test_spark_target_takes_the_remote_from_spark_remote_unless_a_master_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from reconciler.cli.run_cmd import spark_target
    from reconciler.errors import ReconcilerError

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert spark_target(None, None) == ("local[*]", None)
    monkeypatch.setenv("SPARK_REMOTE", "sc://h:15002")
    assert spark_target(None, None) == ("local[*]", "sc://h:15002")
    assert spark_target("spark://m:7077", None) == ("spark://m:7077", None)
    with pytest.raises(ReconcilerError, match="not both"):
        spark_target("spark://m:7077", "sc://h:1")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("bogus", "cannot read the Spark Connect URL 'bogus'"),
        ("http://h:15002", "cannot read the Spark Connect URL 'http://h:15002'"),
        ("sc://h:abc", "the Spark Connect URL 'sc://h:abc' has no valid port"),  # urlparse raised ValueError
        ("sc://h:99999", "the Spark Connect URL 'sc://h:99999' has no valid port"),
    ],
)
def test_a_spark_connect_url_that_cannot_work_fails_before_anything_is_written(
    monkeypatch: pytest.MonkeyPatch, url: str, message: str
) -> None:
    """`run` resolves its Spark target before it applies: flag or SPARK_REMOTE alike."""
    from reconciler.cli.run_cmd import spark_target
    from reconciler.runtime.spark.session import SparkUnavailable, connect_address

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    with pytest.raises(SparkUnavailable, match=re.escape(message)):
        spark_target(None, url)
    monkeypatch.setenv("SPARK_REMOTE", url)
    with pytest.raises(SparkUnavailable, match=re.escape(message)):
        spark_target(None, None)
    assert connect_address("sc://h") == ("h", 15002) and connect_address("sc://h:1/;token=x") == ("h", 1)


def test_plugins_outside_installed_distributions_are_shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from reconciler.runtime.spark.ship import plugin_files

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "plainmod.py").write_text("X = 1\n")
    (tmp_path / "pkgmod").mkdir()
    (tmp_path / "pkgmod" / "__init__.py").write_text("")
    (tmp_path / "pkgmod" / "sinks.py").write_text("Y = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert plugin_files("plainmod:Sink") == [tmp_path / "plainmod.py"]
    [archive] = plugin_files("pkgmod.sinks:Sink")
    import zipfile

    assert sorted(zipfile.ZipFile(archive).namelist()) == ["pkgmod/__init__.py", "pkgmod/sinks.py"]
    assert plugin_files("parquet-sink") == [] and plugin_files("reconciler.connectors.datagen:X") == []
    assert plugin_files("yaml:Loader") == []  # an installed distribution: the environment's


def test_the_shipped_project_zip_carries_the_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import zipfile

    from reconciler.runtime.spark.ship import project_zip

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    names = zipfile.ZipFile(project_zip()).namelist()
    assert "reconciler/runtime/spark/ship.py" in names and not any("__pycache__" in n for n in names)
    assert any(n.endswith(".dist-info/entry_points.txt") for n in names)


@pytest.mark.parametrize(
    ("env", "armed"),
    [("", False), ("sink.after_files", True), ("x, sink.after_files ,y", True), ("sink.after", False)],
)
def test_failpoints_are_armed_by_name(monkeypatch: pytest.MonkeyPatch, env: str, armed: bool) -> None:
    monkeypatch.setenv(failpoints.ENV_POINTS, env)
    assert failpoints.armed(failpoints.SINK_AFTER_FILES) is armed


def test_an_unarmed_failpoint_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(failpoints.ENV_POINTS, "source.after_commit")
    failpoints.hit(failpoints.SINK_AFTER_FILES)  # still alive
    assert failpoints.armed(failpoints.SOURCE_AFTER_COMMIT)


@pytest.mark.parametrize(
    "offsets",
    [
        pytest.param([7, 8, 9, 10], id="contiguous"),
        pytest.param([7, 8, 10, 13], id="gaps: transaction markers or compaction"),
        pytest.param([42], id="one record"),
    ],
)
def test_to_arrow_keeps_every_message_offset_and_field(offsets: list[int]) -> None:
    from confluent_kafka import Message

    from reconciler.connectors.api import sink_schema
    from reconciler.runtime.sink.reader import to_arrow

    messages = [
        Message(topic="t", partition=3, offset=o, key=b"k%d" % o, value=None if o == 8 else b"v%d" % o, timestamp=(1, 1000 + o))
        for o in offsets
    ]
    batch = to_arrow("t", 3, messages)
    assert batch.schema == sink_schema()
    assert batch.column("offset").to_pylist() == offsets
    assert batch.column("timestamp").to_pylist() == [1000 + o for o in offsets]
    assert batch.column("key").to_pylist() == [b"k%d" % o for o in offsets]
    assert batch.column("value").to_pylist() == [None if o == 8 else b"v%d" % o for o in offsets]
    assert set(batch.column("partition").to_pylist()) == {3}


def test_a_sink_commit_says_how_far_a_record_free_tail_was_read() -> None:
    """Connect's offset (last delivered + 1) is committed; `scanned-to` only when offsets that
    hold no record (a transaction's commit marker) follow it, so the next batch skips them."""
    from reconciler.runtime.sink.ranges import SinkPartitionResult, commit_metadata, scanned_to

    def result(offset: int | None, scanned: int | None) -> SinkPartitionResult:
        return SinkPartitionResult(0, "t", 0, 10, offset, scanned_to=scanned)

    assert commit_metadata(result(32, 33)) == "reconciler scanned-to=33"
    assert commit_metadata(result(33, 33)) == ""  # nothing past the offset: Java's empty metadata
    assert commit_metadata(result(32, None)) == "" and commit_metadata(result(None, 33)) == ""
    assert scanned_to("reconciler scanned-to=33") == 33
    for other in ("", "scanned-to=33", "reconciler scanned-to=x", "reconciler scanned-to=-1"):
        assert scanned_to(other) is None
