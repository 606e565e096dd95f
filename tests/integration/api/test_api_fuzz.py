"""schemathesis fuzzes the REST API from its own `/openapi.json`: no 5xx, and every answer
(status code, content type, headers, body) matches the document. The server reads a real
group's topics, seeded with connectors as a Connect cluster leaves them; `/offsets` reads Kafka.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, unsupported_method

from reconciler.api.server import Service, serving
from reconciler.core.live import ConnectTargetState, InstanceState, InstanceStatus
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.produce import TransactionalWriter
from reconciler.kafka.io.store import prepare
from reconciler.kafka.settings import KafkaSettings

import record_encoders

SRC = {"connector.class": "datagen", "name": "src", "tasks.max": "1", "topic": "t", "count": "10", "db.password": "p"}
SINK = {"connector.class": "parquet-sink", "name": "sink", "tasks.max": "1", "topics": "t", "path": "/tmp/x"}


def seed(settings: KafkaSettings) -> None:
    def status(state: InstanceState, trace: str | None = None) -> InstanceStatus:
        return InstanceStatus(state=state, trace=trace, worker_id="w:1", generation=1)

    prepare(settings)
    records = [
        rec.connector_config_record("src", SRC), rec.task_config_record("src", 0, SRC), rec.commit_record("src", 1),
        rec.connector_config_record("sink", SINK), rec.target_state_record("sink", ConnectTargetState.PAUSED),
        rec.task_config_record("sink", 0, SINK), rec.commit_record("sink", 1),
        rec.connector_status_record("src", status(InstanceState.RUNNING)),
        rec.task_status_record("src", 0, status(InstanceState.FAILED, "Traceback …\nboom")),
        rec.connector_status_record("sink", status(InstanceState.PAUSED)),
        record_encoders.topic_status_record("t", "sink", 0, 1_700_000_000_000),
    ]
    with TransactionalWriter(settings, transactional_id=f"seed-{settings.group_id}") as writer:
        writer.write(records)


@pytest.fixture
def service(kafka_settings: KafkaSettings) -> Iterator[Service]:
    seed(kafka_settings)
    with serving(kafka_settings, "127.0.0.1:0", "fuzz:1", interval_s=1.0) as served:
        # As after a successful tick (which this test does not run): ready, the topics read.
        served.observer.finished([], time.time(), None)
        assert served.board.state.live is not None and served.board.state.live.connector("src") is not None
        yield served


# Operations that accept what their document calls invalid, as Java does: `expand` values it
# does not know are ignored (ConnectorsResource.listConnectors), so no `expand` is refused.
ACCEPTS_ANY_QUERY = {"GET /connectors"}


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_fuzzed_requests_get_documented_answers_and_no_5xx(service: Service, mode: GenerationMode) -> None:
    """Every operation of the document, fuzzed (pytest 9 breaks schemathesis' own pytest plugin,
    so its strategies are driven by Hypothesis directly)."""
    api = schemathesis.openapi.from_url(f"{service.url}/openapi.json")
    operations = [result.ok() for result in api.get_all_operations()]
    assert len(operations) == 30  # 17 read routes (and validate), 13 refused mutations

    # The read-only contract answers 403, not 405, to a mutating method on any path (KIP-304,
    # as the issue asks); methods that mutate nothing (OPTIONS, TRACE…) still get 405.
    @given(case=api.as_strategy(generation_mode=mode))
    @settings(max_examples=600, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def fuzz(case: schemathesis.Case) -> None:
        lenient = [negative_data_rejection] if case.operation.label in ACCEPTS_ANY_QUERY else []
        case.call_and_validate(excluded_checks=[unsupported_method, *lenient])

    fuzz()
