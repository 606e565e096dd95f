"""The test broker module and fixture: Apache Kafka starts, answers, stops by PID; clear errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.devtools import jvm
from reconciler.devtools.broker import BrokerStartError, answers_metadata, start_broker
from reconciler.kafka.io.client import check_reachable

if TYPE_CHECKING:
    from tests.conftest import KafkaUnderTest


def _host_port(bootstrap: str) -> tuple[str, int]:
    host, port = bootstrap.rsplit(":", 1)
    return host, int(port)


def test_session_broker_answers_metadata(kafka: KafkaUnderTest, group_id: str) -> None:
    assert answers_metadata(*_host_port(kafka.bootstrap))
    check_reachable(kafka.settings(group_id))  # raises when unreachable


def test_start_broker_and_stop_by_pid(tmp_path: Path) -> None:
    started = time.monotonic()
    with start_broker(tmp_path, quick=True) as broker:
        assert time.monotonic() - started < 30
        assert broker.alive()
        assert answers_metadata("127.0.0.1", broker.port)
        assert broker.log_path.parent == tmp_path
        assert "Kafka Server started" in broker.log_path.read_text()
        assert broker.data_dir.is_dir()
        os.kill(broker.pid, 0)  # the reported pid is the live broker process
    assert not broker.alive()
    assert not answers_metadata("127.0.0.1", broker.port, timeout_s=0.5)
    assert not broker.data_dir.exists()  # the data went with the broker
    broker.stop()  # idempotent
    with pytest.raises(BrokerStartError) as excinfo:  # a temp broker's data is gone: nothing to start again on
        broker.start_again()
    assert "is gone" in excinfo.value.message


def test_broker_start_failure_is_a_clear_error(kafka: KafkaUnderTest, tmp_path: Path) -> None:
    """On the port of a running broker (the session's: one start less than a broker of its own)."""
    with ExitStack() as running:
        first = kafka.broker or running.enter_context(start_broker(tmp_path))  # an external session broker
        with pytest.raises(BrokerStartError) as excinfo:
            with start_broker(tmp_path, port=first.port, ready_timeout_s=3):  # stopped if it ever starts
                pass
        assert first.alive()
    assert excinfo.value.message == f"port {first.port} on 127.0.0.1 is already in use"


def test_module_prints_bootstrap_and_stops_on_sigterm(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "reconciler.devtools.broker", "--log-dir", str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        bootstrap = proc.stdout.readline().strip()
        assert bootstrap.startswith("127.0.0.1:")
        assert answers_metadata(*_host_port(bootstrap))
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert not answers_metadata(*_host_port(bootstrap), timeout_s=0.5)
    assert "RECONCILER_BOOTSTRAP_SERVERS=" in err


def test_missing_java_is_named_with_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing runnable on it
    with pytest.raises(BrokerStartError) as excinfo:
        start_broker(tmp_path)
    assert "Java is not installed" in excinfo.value.message
    assert excinfo.value.hint is not None and "openjdk-17" in excinfo.value.hint


def test_missing_maven_with_a_cold_cache_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    java = jvm.java_binary()
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))  # no cached classpath
    with pytest.raises(jvm.JvmError) as excinfo:
        jvm.kafka_classpath()
    assert "Maven is not installed" in excinfo.value.message
    assert excinfo.value.hint is not None and "apt-get install maven" in excinfo.value.hint


def test_a_warm_cache_needs_no_maven_and_no_network(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Maven Central unreachable (here: no mvn at all) on a machine that resolved Kafka once."""
    resolved = jvm.kafka_classpath()  # warms the cache if this machine never resolved it
    java = jvm.java_binary()
    monkeypatch.setenv("JAVA_HOME", str(java.parent.parent))
    monkeypatch.setenv("PATH", str(tmp_path))
    again = jvm.kafka_classpath()
    assert again == resolved
    assert any(jar.name.startswith(f"kafka_2.13-{again.kafka_version}") for jar in again.jars)
    assert any(jar.name.startswith(f"connect-runtime-{again.kafka_version}") for jar in again.jars)


def test_an_unreachable_maven_central_with_a_cold_cache_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A cold ~/.m2 and a repository that refuses connections: one error naming Maven Central."""
    # Maven takes ~/.m2 from the user.home system property: a home with no repository and a
    # mirror of everything on a port where nothing listens.
    (tmp_path / ".m2").mkdir()
    (tmp_path / ".m2" / "settings.xml").write_text(
        "<settings><mirrors><mirror><id>nowhere</id><mirrorOf>*</mirrorOf>"
        "<url>http://127.0.0.1:9/</url></mirror></mirrors></settings>"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cold"))
    monkeypatch.setenv("MAVEN_OPTS", f"-Duser.home={tmp_path}")
    with pytest.raises(jvm.JvmError) as excinfo:
        jvm.kafka_classpath()
    assert "Maven could not resolve Apache Kafka" in excinfo.value.message
    assert excinfo.value.hint is not None and "repo1.maven.org" in excinfo.value.hint


def test_a_broker_starts_again_on_its_data_cluster_id_and_port(tmp_path: Path) -> None:
    """Stopped and started again at once: the same port (no wait for TIME_WAIT), the same
    cluster id, and the records written before the stop."""
    from confluent_kafka import Consumer

    with start_broker(tmp_path / "logs", data_dir=tmp_path / "data", quick=True) as broker:
        cluster_id, port = broker.cluster_id, broker.port
        _produce(broker.bootstrap, "kept", b"before the restart")
        broker.stop()  # a data_dir given is kept
        assert not answers_metadata("127.0.0.1", port, timeout_s=0.5)
        started = time.monotonic()
        broker.start_again()
        print(f"broker started again in {time.monotonic() - started:.1f}s")
        assert (broker.port, broker.cluster_id) == (port, cluster_id)
        assert check_reachable_cluster_id(broker.bootstrap) == cluster_id
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"})
        consumer.subscribe(["kept"])
        try:
            message = None
            deadline = time.monotonic() + 30
            while message is None and time.monotonic() < deadline:
                message = consumer.poll(1.0)
            assert message is not None and message.error() is None and message.value() == b"before the restart"
        finally:
            consumer.close()
    assert (tmp_path / "data" / "log" / "meta.properties").is_file()  # the caller's directory stays
    again = start_broker(tmp_path / "logs", data_dir=tmp_path / "data", quick=True)  # the CLI's --data-dir path
    try:
        assert (again.port, again.cluster_id) == (port, cluster_id)
    finally:
        again.stop()


def _produce(bootstrap: str, topic: str, value: bytes) -> None:
    """One record, by a producer gone when this returns (it would retry the stopped broker)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value)
    assert producer.flush(30) == 0


def check_reachable_cluster_id(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(admin.describe_cluster(request_timeout=20).result(timeout=30).cluster_id)
