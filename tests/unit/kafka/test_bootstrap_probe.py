"""`probe_bootstrap`: a wrong address or a broker that is down fails in milliseconds, naming
each address and why, instead of after librdkafka's 30 s of retries (real sockets, no Kafka)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from reconciler.errors import BrokerUnreachable
from reconciler.kafka.io import client
from reconciler.kafka.settings import KafkaSettings


def settings(bootstrap: str) -> KafkaSettings:
    return KafkaSettings(bootstrap_servers=bootstrap, group_id="g")


@pytest.fixture
def listening() -> Iterator[int]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        yield server.getsockname()[1]


@pytest.fixture
def closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as server:
        return int(server.getsockname()[1])  # nothing listens there once closed


@pytest.fixture(autouse=True)
def forget_probes() -> Iterator[None]:
    client._probed.clear()
    yield
    client._probed.clear()


def test_a_refused_address_fails_at_once_naming_it(closed_port: int) -> None:
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as caught:
        client.probe_bootstrap(settings(f"127.0.0.1:{closed_port}"))
    assert time.monotonic() - started < 2
    assert caught.value.message == f"cannot reach Kafka at 127.0.0.1:{closed_port}: connection refused (nothing listens on that port)"
    assert "--bootstrap-servers" in (caught.value.hint or "")


def test_every_address_is_named_with_its_own_reason(closed_port: int) -> None:
    bootstrap = f"PLAINTEXT://127.0.0.1:{closed_port},nosuchhost.invalid:9092"
    with pytest.raises(BrokerUnreachable) as caught:
        client.probe_bootstrap(settings(bootstrap))
    message = caught.value.message
    assert f"127.0.0.1:{closed_port}: connection refused" in message
    assert "nosuchhost.invalid:9092: cannot resolve host 'nosuchhost.invalid'" in message


def test_one_address_that_accepts_is_enough(closed_port: int, listening: int) -> None:
    client.probe_bootstrap(settings(f"127.0.0.1:{closed_port},127.0.0.1:{listening}"))
    client.probe_bootstrap(settings(f"[::1]:{closed_port},localhost:{listening}"))


def test_a_list_that_answered_once_is_not_probed_again() -> None:
    """A kept store's ticks do not pay for the probe: a broker that goes away later is the
    clients' timeout's to report."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        reached = settings(f"127.0.0.1:{server.getsockname()[1]}")
        client.probe_bootstrap(reached)
    client.probe_bootstrap(reached)  # nothing listens any more: not asked again
    client._probed.clear()
    with pytest.raises(BrokerUnreachable):
        client.probe_bootstrap(reached)


def test_an_address_without_a_port_is_probed_at_librdkafkas_default_port() -> None:
    """librdkafka takes `host` as `host:9092`; one that does not resolve fails at once too."""
    started = time.monotonic()
    with pytest.raises(BrokerUnreachable) as caught:
        client.probe_bootstrap(settings("nosuchhost.invalid"))
    assert time.monotonic() - started < 2
    assert caught.value.message.startswith("cannot reach Kafka at nosuchhost.invalid: cannot resolve host 'nosuchhost.invalid'")
    assert client._connect_failure("[::1]", 1.0) == client._connect_failure("[::1]:9092", 1.0)


def test_a_port_that_is_not_a_number_fails_at_once_naming_it() -> None:
    with pytest.raises(BrokerUnreachable) as caught:
        client.probe_bootstrap(settings("localhost:9O92"))
    assert caught.value.message == "cannot reach Kafka at localhost:9O92: the port '9O92' is not a port number (1-65535)"
    with pytest.raises(BrokerUnreachable, match="the port '99092' is not a port number"):
        client.probe_bootstrap(settings("localhost:99092"))
