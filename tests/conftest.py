"""Shared fixtures: one real Apache Kafka per test session, a unique Connect group per test.

- `kafka`: the broker under test. With RECONCILER_TEST_BOOTSTRAP=host:port the tests run
  against that cluster; otherwise Apache Kafka (one KRaft node, `reconciler.devtools.broker`)
  is started once for the session on free loopback ports and stopped by PID at the end. Its
  log is kept under .test-logs/ and named in the report of every failed test that used it.
- `other_kafka`: a second cluster, for connectors pointed elsewhere by client overrides.
- `connect_worker`: one Java Kafka Connect worker (distributed mode) for the session, on its own
  group; compatibility tests give their connectors unique names on it. Apache Iceberg's own sink
  is on its plugin.path (in its own class loader), for bench/lakehouse.py's tiny run.
- `group_id` / `kafka_settings`: a fresh group (hence fresh internal topics) per test, so
  tests share one broker without seeing each other's records.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.devtools.connect import RunningConnect, start_connect
from reconciler.devtools.connect_plugins import JDBC_SINK, JDBC_SINK_RESOLVES, debezium_plugin, iceberg_plugin
from reconciler.kafka.settings import KafkaSettings, Topics

ROOT = Path(__file__).resolve().parent.parent
TEST_LOGS = ROOT / ".test-logs"
ENV_BOOTSTRAP = "RECONCILER_TEST_BOOTSTRAP"
ENV_OTHER_BOOTSTRAP = "RECONCILER_TEST_OTHER_BOOTSTRAP"  # a second cluster, with ENV_BOOTSTRAP
# Generous for a loaded CI machine, short enough that a hung broker fails the test quickly.
TEST_TIMEOUT_S = 20.0


@dataclass
class KafkaUnderTest:
    bootstrap: str
    broker: RunningBroker | None = None  # None when RECONCILER_TEST_BOOTSTRAP is used

    @property
    def log_path(self) -> Path | None:
        return self.broker.log_path if self.broker is not None else None

    def settings(self, group_id: str, **changes: object) -> KafkaSettings:
        base = KafkaSettings(
            bootstrap_servers=self.bootstrap,
            group_id=group_id,
            topics=Topics.for_group(group_id),
            timeout_s=TEST_TIMEOUT_S,
        )
        return KafkaSettings(**{**base.__dict__, **changes})  # type: ignore[arg-type]


_SESSION_BROKER: list[KafkaUnderTest] = []


@pytest.fixture(scope="session", autouse=True)
def _manifest_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Tests (and the CLI processes they start) keep their manifest cache out of the user's home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RECONCILER_CACHE_DIR", str(tmp_path_factory.mktemp("manifest-cache")))
        yield


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaUnderTest]:
    external = os.environ.get(ENV_BOOTSTRAP)
    if external:
        target = KafkaUnderTest(bootstrap=external)
        _SESSION_BROKER.append(target)
        yield target
        return
    broker = start_broker(TEST_LOGS)
    target = KafkaUnderTest(bootstrap=broker.bootstrap, broker=broker)
    _SESSION_BROKER.append(target)
    try:
        yield target
    finally:
        broker.kill()  # nothing reads its data again: a controlled shutdown took ~3.5 s of every run
        broker.stop()


@pytest.fixture(scope="session")
def other_kafka(kafka: KafkaUnderTest) -> Iterator[KafkaUnderTest]:
    """A second cluster, for connectors whose clients are pointed elsewhere by overrides
    (KIP-875's "different Kafka cluster" cases): another Kafka process, or ENV_OTHER_BOOTSTRAP."""
    external = os.environ.get(ENV_OTHER_BOOTSTRAP)
    if external:
        yield KafkaUnderTest(bootstrap=external)
        return
    broker = start_broker(TEST_LOGS)
    try:
        yield KafkaUnderTest(bootstrap=broker.bootstrap, broker=broker)
    finally:
        broker.kill()
        broker.stop()


@pytest.fixture(scope="session")
def connect_worker(kafka: KafkaUnderTest) -> Iterator[RunningConnect]:
    """One Java Kafka Connect worker for the session, on its own group's internal topics.
    Tests use it through `java_connect`, and give their connectors unique names."""
    group = f"java-connect-{uuid.uuid4().hex[:8]}"
    # Debezium's JDBC sink and Apache Iceberg's sink on its plugin path: bench/jdbc.py's and
    # bench/lakehouse.py's tests run them here, not in a worker of their own.
    worker = start_connect(kafka.bootstrap, group, TEST_LOGS,
                           plugin_path=[debezium_plugin(JDBC_SINK, JDBC_SINK_RESOLVES), iceberg_plugin()])
    try:
        yield worker
    finally:
        worker.kill()  # nothing runs on it after the session: no group to leave cleanly


@pytest.fixture
def java_connect(connect_worker: RunningConnect) -> Iterator[RunningConnect]:
    """The session's Java worker; a test that made it log an ERROR fails in teardown: Java must
    never meet a record of ours it cannot parse (docs/compatibility.md)."""
    before = len(connect_worker.log_errors())
    yield connect_worker
    logged = connect_worker.log_errors()[before:]
    assert not logged, f"the Java Connect worker logged {len(logged)} error(s):\n" + "\n".join(logged[:20])


@pytest.fixture
def group_id(request: pytest.FixtureRequest) -> str:
    """A unique Connect group per test (it names the internal topics)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:60].strip("-")
    return f"t-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kafka_settings(kafka: KafkaUnderTest, group_id: str) -> KafkaSettings:
    return kafka.settings(group_id)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = ROOT / "tests" / "integration"
    for item in items:
        if integration_dir in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        # For fixtures whose teardown repairs what a failed test left behind (they read
        # `getattr(request.node, "call_failed", False)`; a plain attribute: test modules cannot
        # import this conftest).
        item.call_failed = report.failed  # type: ignore[attr-defined]
    if report.failed and "kafka" in getattr(item, "fixturenames", ()) and _SESSION_BROKER:
        target = _SESSION_BROKER[0]
        where = f"log: {target.log_path}" if target.log_path else "external cluster"
        report.sections.append(("test broker", f"Apache Kafka at {target.bootstrap}, {where}"))
