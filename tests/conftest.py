"""Shared fixtures: one real broker per test session, a unique Connect group per test.

- `kafka`: the broker under test. With RECONCILER_TEST_BOOTSTRAP=host:port the tests run
  against that (real) Kafka; otherwise a Tansu broker is started once for the session on a
  free loopback port and stopped by PID at the end. Its log is kept under .test-logs/ and
  named in the report of every failed test that used it.
- `group_id` / `kafka_settings`: a fresh group (hence fresh internal topics) per test, so
  tests share one broker without seeing each other's records.
- Markers `needs_abort_filtering` / `needs_nonempty_group_refusal`: the test needs a
  capability Tansu lacks (design.md); it is skipped with that reason on Tansu, and fails on a
  broker that claims to be Kafka but lacks it.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from reconciler.devtools.broker import RunningBroker, start_broker
from reconciler.devtools.probe import ABORT_FILTERING, NONEMPTY_GROUP_REFUSAL, BrokerCapabilities, is_tansu
from reconciler.kafka.settings import KafkaSettings, Topics

ROOT = Path(__file__).resolve().parent.parent
TEST_LOGS = ROOT / ".test-logs"
ENV_BOOTSTRAP = "RECONCILER_TEST_BOOTSTRAP"
ENV_OTHER_BOOTSTRAP = "RECONCILER_TEST_OTHER_BOOTSTRAP"  # a second cluster, with ENV_BOOTSTRAP
# Generous for a loaded CI machine, short enough that a hung broker fails the test quickly.
TEST_TIMEOUT_S = 20.0

CAPABILITY_MARKERS = {
    "needs_abort_filtering": ABORT_FILTERING,
    "needs_nonempty_group_refusal": NONEMPTY_GROUP_REFUSAL,
}


@dataclass
class KafkaUnderTest:
    bootstrap: str
    tansu: bool
    broker: RunningBroker | None = None  # None when RECONCILER_TEST_BOOTSTRAP is used
    capabilities: BrokerCapabilities = field(init=False)

    def __post_init__(self) -> None:
        self.capabilities = BrokerCapabilities(self.bootstrap)

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

    def require(self, capability: str) -> None:
        if self.capabilities.has(capability):
            return
        if self.tansu:
            pytest.skip(f"broker lacks capability: {capability} (Tansu deviation, design.md); "
                        f"set {ENV_BOOTSTRAP} to run this against Apache Kafka")
        pytest.fail(f"broker at {self.bootstrap} lacks a capability Apache Kafka has: {capability}")


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
        target = KafkaUnderTest(bootstrap=external, tansu=is_tansu(external))
        _SESSION_BROKER.append(target)
        yield target
        return
    broker = start_broker(TEST_LOGS)
    target = KafkaUnderTest(bootstrap=broker.bootstrap, tansu=True, broker=broker)
    _SESSION_BROKER.append(target)
    try:
        yield target
    finally:
        # Tansu waits ~5 s for clients still connected (e.g. a fenced producer) before exiting on
        # SIGTERM; its storage is memory, so there is nothing to lose by killing it sooner.
        broker.stop(timeout_s=1.0)


@pytest.fixture(scope="session")
def other_kafka(kafka: KafkaUnderTest) -> Iterator[KafkaUnderTest]:
    """A second cluster, for connectors whose clients are pointed elsewhere by overrides
    (KIP-875's "different Kafka cluster" cases): another Tansu process, or ENV_OTHER_BOOTSTRAP."""
    external = os.environ.get(ENV_OTHER_BOOTSTRAP)
    if external:
        yield KafkaUnderTest(bootstrap=external, tansu=is_tansu(external))
        return
    if kafka.broker is None:
        pytest.skip(f"{ENV_BOOTSTRAP} names an external broker: set {ENV_OTHER_BOOTSTRAP} to a second cluster too")
    broker = start_broker(TEST_LOGS)
    try:
        yield KafkaUnderTest(bootstrap=broker.bootstrap, tansu=True, broker=broker)
    finally:
        broker.stop(timeout_s=1.0)


@pytest.fixture
def group_id(request: pytest.FixtureRequest) -> str:
    """A unique Connect group per test (it names the internal topics)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:60].strip("-")
    return f"t-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def kafka_settings(kafka: KafkaUnderTest, group_id: str) -> KafkaSettings:
    return kafka.settings(group_id)


@pytest.fixture(autouse=True)
def _capability_markers(request: pytest.FixtureRequest) -> None:
    for marker, capability in CAPABILITY_MARKERS.items():
        if request.node.get_closest_marker(marker) is not None:
            target: KafkaUnderTest = request.getfixturevalue("kafka")
            target.require(capability)


def pytest_configure(config: pytest.Config) -> None:
    for marker, capability in CAPABILITY_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: needs a broker where {capability} (skipped on Tansu)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    integration_dir = ROOT / "tests" / "integration"
    for item in items:
        if integration_dir in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.failed and "kafka" in getattr(item, "fixturenames", ()) and _SESSION_BROKER:
        target = _SESSION_BROKER[0]
        where = f"log: {target.log_path}" if target.log_path else f"external broker {target.bootstrap}"
        report.sections.append(("test broker", f"{target.bootstrap} ({'tansu' if target.tansu else 'kafka'}), {where}"))
