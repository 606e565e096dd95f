"""The read-only REST API on a snapshot built by hand: Connect's bodies and messages, masked
secrets, 403 for every mutation, 404/405/400 for bad requests, health and metrics.
(Against the Java worker's own answers: tests/integration/java_connect/test_api_vs_java.py.)"""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from reconciler.core.kinds import Kind
from reconciler.api.app import create_app
from reconciler.api.metrics import Metrics
from reconciler.api.refusals import CONNECT_MUTATIONS, READ_ONLY_MESSAGE
from reconciler.api.server import ApiServer, bind
from reconciler.api.state import ApiState, Board, BrokerInfo, ManifestsInfo, TaskTotals, TickInfo
from reconciler.connectors.framework import framework_def
from reconciler.core.live import (
    ConnectTargetState,
    InstanceState,
    InstanceStatus,
    LastBatch,
    LiveConnector,
    LiveState,
    TaskBatch,
    Waiting,
)
from reconciler.kafka.settings import KafkaSettings

W = "10.0.0.5:8083"
SRC_CONFIG: dict[str, str | None] = {
    "connector.class": "datagen", "name": "src", "tasks.max": "1", "topic": "t", "db.password": "hunter2", "my.opaque": "x",
}
SINK_CONFIG: dict[str, str | None] = {"connector.class": "parquet-sink", "name": "sink", "tasks.max": "2", "topics": "t"}


def st(state: InstanceState, trace: str | None = None, version: str | None = None) -> InstanceStatus:
    return InstanceStatus(state=state, trace=trace, worker_id=W, generation=3, version=version)


LIVE = LiveState(
    connectors={
        "src": LiveConnector(
            name="src", config=SRC_CONFIG, task_count=1, task_configs=[{**SRC_CONFIG, "task.index": "0"}],
            connector_status=st(InstanceState.RUNNING, version="4.3.1"), task_statuses={0: st(InstanceState.RUNNING)},
        ),
        "sink": LiveConnector(
            name="sink", config=SINK_CONFIG, target_state=ConnectTargetState.PAUSED, task_count=2,
            task_configs=[SINK_CONFIG, SINK_CONFIG], connector_status=st(InstanceState.PAUSED),
            task_statuses={1: st(InstanceState.FAILED, "Traceback: boom"), 0: st(InstanceState.PAUSED)},
        ),
        "fresh": LiveConnector(name="fresh", config={"connector.class": "datagen", "name": "fresh"}),
        "gone": LiveConnector(name="gone", connector_status=st(InstanceState.UNASSIGNED)),
    },
    active_topics={"sink": ["t"]},
    last_batches={"src": LastBatch(finished_at_ms=5_000, worker_id=W, tasks={0: TaskBatch(records=9, bytes=90)})},
    waiting={"sink": Waiting(since_ms=7_000, worker_id=W, reason="cannot reach Kafka at 127.0.0.1:1")},
)


def ready_state(**changes: object) -> ApiState:
    now = time.time()
    base = ApiState(
        worker_id=W, live=LIVE, sensitive={"src": frozenset({"my.opaque"})},
        last_tick=TickInfo(started_at=now - 1, duration_s=0.5, outcome="succeeded"), last_success_at=now,
        broker=BrokerInfo(reachable=True, checked_at=now, cluster_id="cluster-1"),
        totals={("src", 0): TaskTotals(kind=Kind.SOURCE, records=9, bytes=90, batches=2),
                ("sink", 1): TaskTotals(kind=Kind.SINK, records=4, bytes=40, batches=1, failures=1, commits=1, lag=12, waits=2)},
    )
    return ApiState(**{**base.__dict__, **changes})  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Board, httpx.Client]]:
    """The app served by uvicorn on a loopback port, as `run` serves it, and an HTTP client."""
    board = Board(ready_state())
    settings = KafkaSettings(bootstrap_servers="127.0.0.1:9", timeout_s=1.0)
    app = create_app(board, Metrics(board), settings, stale_after_s=60, server_version=("0.1.0", "abc"))
    server = ApiServer(app, bind("127.0.0.1", 0))
    server.start()
    host, port = server.address
    try:
        with httpx.Client(base_url=f"http://{host}:{port}", timeout=10) as http:
            yield board, http
    finally:
        server.stop()


@pytest.fixture
def board(served: tuple[Board, httpx.Client]) -> Board:
    served[0].update(lambda _: ready_state())  # each test starts from the same snapshot
    return served[0]


@pytest.fixture
def client(served: tuple[Board, httpx.Client], board: Board) -> httpx.Client:
    return served[1]


def test_server_info_names_the_cluster_id_the_probe_found(client: httpx.Client) -> None:
    assert client.get("/").json() == {"version": "0.1.0", "commit": "abc", "kafka_cluster_id": "cluster-1"}


def test_connectors_list_only_those_with_a_config(client: httpx.Client) -> None:
    assert client.get("/connectors").json() == ["fresh", "sink", "src"]


def test_expand_status_leaves_out_connectors_without_a_status_as_java(client: httpx.Client) -> None:
    body = client.get("/connectors?expand=status").json()
    assert set(body) == {"sink", "src"}
    assert body["src"]["status"]["connector"] == {"state": "RUNNING", "worker_id": W, "version": "4.3.1"}
    assert [t["id"] for t in body["sink"]["status"]["tasks"]] == [0, 1]  # sorted by id
    assert body["sink"]["status"]["tasks"][1] == {"id": 1, "state": "FAILED", "worker_id": W, "version": None,
                                                  "trace": "Traceback: boom"}


def test_expand_info_and_both_and_unknown_expansions(client: httpx.Client) -> None:
    info = client.get("/connectors?expand=info").json()
    assert set(info) == {"fresh", "sink", "src"} and set(info["src"]) == {"info"}
    both = client.get("/connectors", params=[("expand", "status"), ("expand", "info")]).json()
    assert set(both["src"]) == {"status", "info"} and "fresh" not in both
    assert client.get("/connectors?expand=nonsense").json() == {"fresh": {}, "sink": {}, "src": {}}


def test_connector_info_config_and_tasks_mask_secrets_and_spec_sensitive_keys(client: httpx.Client) -> None:
    info = client.get("/connectors/src").json()
    assert info["tasks"] == [{"connector": "src", "task": 0}] and info["type"] == "source"
    assert info["config"]["db.password"] == "(sensitive)" and info["config"]["my.opaque"] == "(sensitive)"
    assert client.get("/connectors/src/config").json() == info["config"]
    tasks = client.get("/connectors/src/tasks").json()
    assert tasks[0]["id"] == {"connector": "src", "task": 0} and tasks[0]["config"]["db.password"] == "(sensitive)"
    for path in ("/connectors/src", "/connectors/src/config", "/connectors/src/tasks", "/connectors?expand=info"):
        assert "hunter2" not in client.get(path).text
    assert client.get("/connectors/sink").json()["type"] == "sink"


def test_statuses_and_task_statuses(client: httpx.Client) -> None:
    assert client.get("/connectors/sink/status").json()["connector"]["state"] == "PAUSED"
    assert client.get("/connectors/sink/tasks/1/status").json()["state"] == "FAILED"
    gone = client.get("/connectors/gone/status").json()  # a status without a config: Java shows it
    assert gone["type"] == "unknown" and gone["tasks"] == []


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/connectors/nope", "Connector nope not found"),
        ("/connectors/nope/config", "Connector nope not found"),
        ("/connectors/nope/tasks", "Connector nope not found"),
        ("/connectors/nope/offsets", "Connector nope not found"),
        ("/connectors/gone", "Connector gone not found"),
        ("/connectors/nope/status", "No status found for connector nope"),
        ("/connectors/fresh/status", "No status found for connector fresh"),
        ("/connectors/nope/tasks/0/status", "No status found for task nope-0"),
        ("/connectors/src/tasks/7/status", "No status found for task src-7"),
        ("/connectors/src/tasks/abc/status", "HTTP 404 Not Found"),
        ("/nope", "HTTP 404 Not Found"),
    ],
)
def test_unknown_things_answer_connects_404(client: httpx.Client, path: str, message: str) -> None:
    response = client.get(path)
    assert (response.status_code, response.json()) == (404, {"error_code": 404, "message": message})


def test_active_topics_answer_for_any_name_as_java(client: httpx.Client) -> None:
    assert client.get("/connectors/sink/topics").json() == {"sink": {"topics": ["t"]}}
    assert client.get("/connectors/nope/topics").json() == {"nope": {"topics": []}}


def test_last_batch_is_our_own_route(client: httpx.Client) -> None:
    assert client.get("/connectors/src/batch").json() == {
        "name": "src", "finished_at_ms": 5_000, "outcome": "succeeded", "records": 9, "worker_id": W,
        "tasks": [{"id": 0, "records": 9, "bytes": 90, "failed": False}],
    }
    assert client.get("/connectors/sink/batch").status_code == 404


def test_status_serves_what_the_cli_table_prints_rows_and_notes(client: httpx.Client) -> None:
    body = client.get("/status").json()
    rows = {row["name"]: row for row in body["connectors"]}
    assert list(rows) == ["fresh", "gone", "sink", "src"]  # as `reconciler status` lists them
    assert rows["sink"] == {
        "name": "sink", "type": "sink", "target": "paused", "state": "PAUSED", "tasks_running": 0,
        "tasks_total": 2, "failed_tasks": [1], "last_batch": None, "auto_restarts": None,
    }
    assert rows["fresh"]["state"] is None and rows["gone"]["target"] == "(deleted)"
    assert rows["src"]["last_batch"].endswith("succeeded, 9 records")
    assert any(note.startswith("sink: its tasks wait for the next batch") for note in body["notes"])
    assert any("UNASSIGNED" in note for note in body["notes"])


def test_offsets_history_of_an_unknown_connector_is_connects_404(client: httpx.Client) -> None:
    response = client.get("/connectors/nope/offsets/history")
    assert (response.status_code, response.json()["message"]) == (404, "Connector nope not found")


def test_offsets_history_without_a_broker_is_a_503_naming_the_connector(client: httpx.Client) -> None:
    response = client.get("/connectors/src/offsets/history")
    assert response.status_code == 503
    assert response.json()["message"].startswith("Reading the offsets history of connector src failed")


def test_every_mutation_is_refused_with_403_and_connects_error_body(client: httpx.Client) -> None:
    paths = [path.replace("{connector}", "src").replace("{task}", "0").replace("{logger}", "root")
             for _, path, _ in CONNECT_MUTATIONS]
    paths += ["/", "/connectors/src/status", "/nope/at/all", "/connector-plugins", "/metrics", "/readyz"]
    for path in paths:
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = client.request(method, path, json={"name": "x"})
            assert response.status_code == 403, (method, path)
            assert response.json() == {"error_code": 403, "message": READ_ONLY_MESSAGE}


def test_unknown_methods_and_bad_queries_are_clear_4xx(client: httpx.Client) -> None:
    assert client.request("OPTIONS", "/connectors").status_code == 405
    assert client.request("TRACE", "/connectors").json() == {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    bad = client.get("/connector-plugins?connectorsOnly=maybe")
    assert bad.status_code == 400 and bad.json()["error_code"] == 400


def test_plugins_list_our_connectors_sinks_first(client: httpx.Client) -> None:
    plugins = client.get("/connector-plugins").json()
    assert [(p["class"], p["type"]) for p in plugins] == [
        ("delta-sink", "sink"), ("file-sink", "sink"), ("iceberg-sink", "sink"), ("jdbc-sink", "sink"), ("parquet-sink", "sink"), ("datagen", "source"), ("file-source", "source"),
        ("jdbc-source", "source"),
    ]
    assert client.get("/connector-plugins?connectorsOnly=false").json() == plugins


def test_validate_changes_nothing_and_answers_config_infos(client: httpx.Client, board: Board) -> None:
    before = board.state
    good = client.put("/connector-plugins/datagen/config/validate",
                      json={"connector.class": "datagen", "name": "v", "topic": "t", "count": 10, "tasks.max": 2})
    assert good.status_code == 200 and board.state is before
    body = good.json()
    assert body["name"] == "datagen" and body["error_count"] == 0
    assert body["groups"] == ["Common", "Transforms", "Predicates", "Error Handling", "Topic Creation",
                              "Exactly Once Support", "offsets.topic", "default"]
    # The keys Connect defines for a source, then every key the plugin's ConfigDef declares, as
    # Java lists the enriched definition, then `config()`.
    names = [c["definition"]["name"] for c in body["configs"]]
    assert names == [*framework_def("source").keys, "topic", "count", "record.bytes", "batch.size", "shards"]
    by_name = {c["definition"]["name"]: c for c in body["configs"]}
    assert by_name["tasks.max"]["value"]["value"] == "2"  # Jackson turns a JSON number into the string
    assert by_name["count"]["definition"] == {
        "name": "count", "type": "LONG", "required": True, "default_value": None, "importance": "HIGH",
        "documentation": "Records over the connector's whole life (ids 0…count-1).", "group": None,
        "order_in_group": -1, "width": "NONE", "display_name": "count", "dependents": []}
    assert by_name["count"]["value"] == {
        "name": "count", "value": "10", "recommended_values": [], "errors": [], "visible": True}
    # An absent key with a default is shown with it, as Java's parsed value is.
    assert by_name["shards"]["definition"]["default_value"] == by_name["shards"]["value"]["value"] != None  # noqa: E711

    bad = client.put("/connector-plugins/datagen/config/validate",
                     json={"connector.class": "datagen", "tasks.max": "abc", "count": "-1", "api.token": "s3cret"}).json()
    errors = {c["value"]["name"]: c["value"]["errors"] for c in bad["configs"] if c["value"]["errors"]}
    assert errors["name"] == ['Missing required configuration "name" which has no default value.']
    assert errors["tasks.max"] == ["Invalid value abc for configuration tasks.max: Not a number of type INT"]
    assert set(errors) - {"name", "tasks.max"}, "the plugin's own problems are listed too"
    count = next(c for c in bad["configs"] if c["value"]["name"] == "count")
    assert count["definition"]["name"] == "count", "a declared key's problem is listed with its definition"
    assert count["value"]["value"] is None and count["value"]["errors"], "a value that does not parse is null, as in Java"
    assert [c["value"]["name"] for c in bad["configs"]].count("count") == 1
    assert bad["error_count"] == sum(len(e) for e in errors.values())


@pytest.mark.parametrize(
    ("plugin", "body", "message"),
    [
        ("parquet-sink", {"connector.class": "datagen"}, "Included connector type datagen does not match request type parquet-sink"),
        ("datagen", {"name": "v", "db.password": "p"}, "Connector config {name=v, db.password=(sensitive)} contains no connector type"),
    ],
)
def test_validate_refuses_what_java_refuses_with_400(client: httpx.Client, plugin: str, body: object, message: str) -> None:
    response = client.put(f"/connector-plugins/{plugin}/config/validate", json=body)
    assert (response.status_code, response.json()) == (400, {"error_code": 400, "message": message})
    assert client.put("/connector-plugins/datagen/config/validate", json=["not", "an", "object"]).status_code == 400
    unknown = client.put("/connector-plugins/nope/config/validate", json={"connector.class": "nope"})
    assert (unknown.status_code, unknown.json()["message"]) == (404, "Unknown plugin nope.")


def test_before_the_first_read_connector_routes_answer_503(board: Board, client: httpx.Client) -> None:
    board.replace(live=None)
    response = client.get("/connectors")
    assert response.status_code == 503 and response.json()["error_code"] == 503
    assert client.get("/healthz").status_code == 200


def test_readyz_says_which_check_failed(board: Board, client: httpx.Client) -> None:
    assert client.get("/readyz").json()["status"] == "ready"
    board.replace(manifests=ManifestsInfo(False, ("m.yaml:3:1: spec.tasksMax: must be >= 1",)))
    degraded = client.get("/readyz")
    assert degraded.status_code == 200 and degraded.json()["status"] == "degraded"  # still serves
    assert degraded.json()["checks"]["manifests"]["ok"] is False
    assert degraded.json()["manifest_problems"] == ["m.yaml:3:1: spec.tasksMax: must be >= 1"]
    strict = client.get("/readyz", params={"strict": "true"})
    assert (strict.status_code, strict.json()) == (503, degraded.json())
    assert client.get("/readyz", params={"strict": "maybe"}).status_code == 400
    board.replace(broker=BrokerInfo(reachable=False, checked_at=time.time(), error="127.0.0.1:9: connection refused"))
    assert client.get("/readyz").status_code == 503
    down = client.get("/readyz").json()
    assert down["status"] == "not ready" and down["checks"]["broker"] == {
        "ok": False, "detail": "the broker did not answer: 127.0.0.1:9: connection refused"}


def test_metrics_parse_and_carry_connects_names_and_labels(client: httpx.Client) -> None:
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(response.text) for s in family.samples}
    assert samples[("kafka_connect_worker_connector_count", ())] == 3
    assert samples[("kafka_connect_worker_task_count", ())] == 3
    assert samples[("kafka_connect_connector_status", (("connector", "sink"), ("status", "paused")))] == 1
    assert samples[("kafka_connect_connector_task_status", (("connector", "sink"), ("status", "failed"), ("task", "1")))] == 1
    assert samples[("kafka_connect_source_task_source_record_poll_total", (("connector", "src"), ("task", "0")))] == 9
    assert samples[("kafka_connect_source_task_source_record_write_total", (("connector", "src"), ("task", "0")))] == 9
    assert samples[("kafka_connect_sink_task_sink_record_read_total", (("connector", "sink"), ("task", "1")))] == 4
    assert samples[("kafka_connect_sink_task_sink_record_send_total", (("connector", "sink"), ("task", "1")))] == 4
    assert samples[("kafka_connect_sink_task_offset_commit_completion_total", (("connector", "sink"), ("task", "1")))] == 1
    assert samples[("kafka_connect_sink_task_sink_record_lag_max", (("connector", "sink"), ("task", "1")))] == 12
    assert samples[("kafka_connect_task_error_total_record_failures", (("connector", "sink"), ("task", "1")))] == 1
    assert samples[("kafka_connect_worker_connector_failed_task_count", (("connector", "sink"),))] == 1
    assert samples[("reconciler_task_bytes_total", (("connector", "src"), ("task", "0")))] == 90
    assert samples[("reconciler_task_waits_total", (("connector", "sink"), ("task", "1")))] == 2
    assert not [key for key in samples if ("connector", "gone") in key[1]]  # deleted: no metrics
    assert samples[("reconciler_manifests_valid", ())] == 1
    assert samples[("reconciler_connector_last_batch_timestamp_seconds", (("connector", "src"),))] == 5.0
    assert samples[("reconciler_connector_waiting_since_timestamp_seconds", (("connector", "sink"),))] == 7.0
    assert not [key for key in samples if key[0].startswith("reconciler_connector_waiting") and ("connector", "src") in key[1]]


def test_a_stale_probe_answer_is_not_ready_and_no_tick_yet_is_not_ready() -> None:
    from reconciler.api.health import readiness

    now = time.time()
    stale = ready_state(broker=BrokerInfo(reachable=True, checked_at=now - 500, cluster_id="cluster-1"))
    code, body = readiness(stale, now, stale_after_s=60)
    assert (code, body["status"]) == (503, "not ready") and "500s old" in body["checks"]["broker"]["detail"]
    code, body = readiness(ready_state(last_tick=None), now, stale_after_s=60)
    assert body["checks"]["reconcile"] == {"ok": False, "detail": "no reconcile has finished yet"}
    failed = ready_state(last_tick=TickInfo(started_at=now, duration_s=1.0, outcome="apply_failed", error="the plan is stale"))
    assert readiness(failed, now, 60)[1]["checks"]["reconcile"]["detail"] == "applying the manifests failed: the plan is stale"


def test_http_bind_is_checked_and_a_taken_port_is_a_clear_error() -> None:
    from reconciler.api.server import parse_bind
    from reconciler.errors import ReconcilerError

    assert parse_bind("0.0.0.0:8083") == ("0.0.0.0", 8083) and parse_bind("[::1]:80") == ("::1", 80)
    for bad in ("8083", "host:", "host:http", ":80", "h:70000"):
        with pytest.raises(ReconcilerError, match="--http-bind expects HOST:PORT"):
            parse_bind(bad)
    taken = bind("127.0.0.1", 0)
    try:
        with pytest.raises(ReconcilerError, match="cannot serve the REST API on 127.0.0.1:") as refused:
            bind("127.0.0.1", taken.getsockname()[1])
        assert refused.value.hint is not None and "--no-http" in refused.value.hint
    finally:
        taken.close()


def test_validate_never_imports_a_module_the_request_names(client: httpx.Client) -> None:
    import sys

    assert "antigravity" not in sys.modules  # importing it would open a web browser
    for plugin in ("antigravity:Nothing", ":%C3%AF", "x:", "datagen"):
        body = {"connector.class": plugin.replace("%C3%AF", "ï"), "name": "x"}
        answer = client.put(f"/connector-plugins/{plugin}/config/validate", json=body)
        assert answer.status_code in (200, 400, 404), answer.text
        assert answer.status_code != 200 or plugin == "datagen"
    assert "antigravity" not in sys.modules
