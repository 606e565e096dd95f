"""`reconciler watch` with its REST API on, as a real process, against the real broker.

A Connect REST client from PyPI (`kafka-connect-py`) lists and reads what the loop runs;
every mutation is refused with 403; a pause edited into a manifest shows in `GET …/status`;
a broken file makes `/readyz` degraded while the connector keeps its state; bad requests get a
clear 4xx and the loop keeps ticking; `/metrics` parses and holds Connect's names; SIGTERM
exits 0 and leaves the statuses UNASSIGNED, as a stopping Connect worker does. Against an
unreachable broker the REST stays up and says not ready.
"""

from __future__ import annotations

import re
import signal
import socket
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests
from kafka_connect import KafkaConnect
from prometheus_client.parser import text_string_to_metric_families

from reconciler.api.refusals import READ_ONLY_MESSAGE, VALIDATE
from reconciler.kafka.io.store import read_live_state
from reconciler.kafka.settings import KafkaSettings
from loop_support import Running, manifest, served_url, until, write
from run_support import create_topic

WAIT_S = 120.0


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def every_mutation(openapi: dict[str, Any]) -> list[tuple[str, str]]:
    """(method, path) for every path of the document, concrete, and every mutating method."""
    concrete = [re.sub(r"\{task\}", "0", re.sub(r"\{[^}]+\}", "gen", path)) for path in openapi["paths"]]
    return [(method, path) for path in concrete + ["/anything/else"]
            for method in ("POST", "PUT", "PATCH", "DELETE")
            if not (method == "PUT" and VALIDATE.fullmatch(path))]


def test_watch_serves_connects_read_only_rest_health_and_metrics(kafka_settings: KafkaSettings, tmp_path: Path) -> None:
    topic = f"{kafka_settings.group_id}.gen"
    create_topic(kafka_settings, topic, 1)
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    file = manifests / "gen.yaml"
    # `batch.size` made sensitive by the manifest (`spec.sensitive`): datagen has no secret of its own.
    config = {"topic": topic, "count": 500, "batch.size": 777}
    write(file, sensitive(manifest("gen", config)))
    args = ["watch", str(manifests), "--interval", "1", "--http-bind", "127.0.0.1:0", "--worker-id", "watcher:1"]
    watch = Running(args + ["--spark-master", "local[2]", "--spark-conf", "spark.driver.memory=768m"], kafka_settings)
    try:
        url = served_url(watch)
        with httpx.Client(base_url=url, timeout=30) as http:
            until(lambda: http.get("/readyz").status_code == 200)
            _read_with_a_connect_client(url)
            _everything_mutating_is_refused(http, url)
            metrics = samples(until(lambda: _moved(http, 500)))
            assert metrics[("kafka_connect_source_task_source_record_write_total", (("connector", "gen"), ("task", "0")))] == 500
            assert metrics[("kafka_connect_connector_status", (("connector", "gen"), ("status", "running")))] == 1
            assert metrics[("reconciler_task_bytes_total", (("connector", "gen"), ("task", "0")))] > 500 * 10

            paused = _pause_by_edit(http, file, config)
            print(f"manifest edit to PAUSED in GET /connectors/gen/status: {paused:.2f}s")
            assert paused < 2.0
            _broken_file_is_degraded_until_fixed(http, file, config, watch)
            _bad_requests_get_a_clear_4xx_and_the_loop_goes_on(http)
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()
    assert "stopped: 2 status(es) now UNASSIGNED" in watch.output()
    live = read_live_state(kafka_settings)
    gen = live.connector("gen")
    assert gen is not None and gen.connector_status is not None
    assert gen.connector_status.state.value == "UNASSIGNED" and gen.connector_status.worker_id == "watcher:1"
    assert live.last_batches["gen"].records == 0 and live.last_batches["gen"].worker_id == "watcher:1"


def sensitive(doc: dict[str, Any]) -> dict[str, Any]:
    doc["spec"]["sensitive"] = ["batch.size"]
    return doc


def _read_with_a_connect_client(url: str) -> None:
    client = KafkaConnect(url=url)
    assert client.list_connectors() == ["gen"]
    assert client.get_connector_status("gen")["connector"]["state"] == "RUNNING"
    assert client.get_connector_config("gen")["batch.size"] == "(sensitive)"
    assert client.list_connectors(expand="status")["gen"]["status"]["tasks"][0]["state"] == "RUNNING"
    assert client.list_connector_tasks("gen")[0]["id"] == {"connector": "gen", "task": 0}
    assert client.get_connector_task_status("gen", 0)["worker_id"] == "watcher:1"
    assert [p["class"] for p in client.list_connector_plugins()] == [
        "delta-sink", "file-sink", "iceberg-sink", "jdbc-sink", "parquet-sink", "datagen", "file-source", "jdbc-source"]
    checked = client.validate_connector_config("datagen", {"connector.class": "datagen", "name": "x", "tasks.max": "0"})
    assert checked["error_count"] > 0  # validation is allowed: it changes nothing


def _everything_mutating_is_refused(http: httpx.Client, url: str) -> None:
    for method, path in every_mutation(http.get("/openapi.json").json()):
        response = http.request(method, path, json={"name": "gen"})
        assert (response.status_code, response.json()) == (403, {"error_code": 403, "message": READ_ONLY_MESSAGE}), (method, path)
    client = KafkaConnect(url=url)
    for call in (lambda: client.create_connector({"name": "x", "config": {}}), lambda: client.pause_connector("gen"),
                 lambda: client.delete_connector("gen"), lambda: client.update_connector("gen", {"count": "1"}),
                 lambda: client.restart_connector("gen", include_tasks=True)):
        with pytest.raises(requests.HTTPError) as refused:
            call()
        answer = refused.value.response  # (restart_connector raises with the body as its only message)
        assert (answer is not None and answer.status_code == 403) or READ_ONLY_MESSAGE in str(refused.value)
    status = http.get("/connectors/gen/status").json()
    assert status["connector"]["state"] == "RUNNING"
    # Each status carries the plugin's version, as Kafka 4's workers write theirs (KIP-891).
    assert {status["connector"]["version"]} | {task["version"] for task in status["tasks"]} == {version("connect-reconciler")}


def _moved(http: httpx.Client, records: int) -> str | None:
    text = http.get("/metrics").text
    key = ("kafka_connect_source_task_source_record_poll_total", (("connector", "gen"), ("task", "0")))
    return text if samples(text).get(key) == records else None


def _pause_by_edit(http: httpx.Client, file: Path, config: dict[str, Any]) -> float:
    edited = time.monotonic()
    write(file, sensitive(manifest("gen", config, state="paused")))
    until(lambda: http.get("/connectors/gen/status").json()["connector"]["state"] == "PAUSED", timeout_s=30)
    return time.monotonic() - edited


def _broken_file_is_degraded_until_fixed(http: httpx.Client, file: Path, config: dict[str, Any], watch: Running) -> None:
    """A typo is a condition, not a reason to leave the Service: 200 and degraded (503 only when
    strict), the metric 0, a log line, and a status line under the ticks while it lasts."""
    valid = ("reconciler_manifests_valid", ())
    file.write_text(file.read_text().replace("tasksMax: 1", "tasksMax: zero"))
    degraded = until(lambda: (r := http.get("/readyz")).json()["status"] == "degraded" and r)
    assert degraded.status_code == 200 and degraded.json()["checks"]["reconcile"]["ok"]
    assert degraded.json()["checks"]["manifests"]["ok"] is False
    assert any("tasksMax" in problem for problem in degraded.json()["manifest_problems"])
    assert http.get("/readyz", params={"strict": "true"}).status_code == 503
    assert samples(http.get("/metrics").text)[valid] == 0
    watch.wait_for_line("manifests changed but are invalid")  # the log line
    watch.wait_for_line("manifests on disk: invalid (1 problem(s))")  # the status line, under a tick
    assert http.get("/connectors/gen/status").json()["connector"]["state"] == "PAUSED"  # the last valid ones run
    write(file, sensitive(manifest("gen", config, state="paused")))
    until(lambda: http.get("/readyz").json()["status"] == "ready")
    assert http.get("/readyz", params={"strict": "true"}).status_code == 200
    assert samples(http.get("/metrics").text)[valid] == 1


def _bad_requests_get_a_clear_4xx_and_the_loop_goes_on(http: httpx.Client) -> None:
    ticks = _ticks(http)
    assert http.get("/connectors/gen/tasks/x/status").status_code == 404
    assert http.get("/no/such/thing").json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
    assert http.request("PROPFIND", "/connectors").status_code == 405
    assert 400 <= http.get("/connectors", headers={"X-Huge": "x" * 200_000}).status_code < 500
    assert http.get("/connectors?expand=status", headers={"Accept": "text/html"}).status_code == 200
    until(lambda: _ticks(http) >= ticks + 2, timeout_s=30)
    assert http.get("/readyz").status_code == 200


def _ticks(http: httpx.Client) -> float:
    return samples(http.get("/metrics").text)[("reconciler_reconcile_total", (("outcome", "succeeded"),))]


def test_watch_against_an_unreachable_broker_is_alive_but_never_ready(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write(tmp_path / "c.yaml", manifest("idle", {"topic": "t", "count": 1}))
    nowhere = KafkaSettings(bootstrap_servers=f"127.0.0.1:{port}", group_id="nowhere")
    watch = Running(["watch", str(tmp_path), "--interval", "1", "--timeout", "2", "--http-bind", "127.0.0.1:0"], nowhere)
    try:
        url = served_url(watch)
        with httpx.Client(base_url=url, timeout=10) as http:
            watch.wait_for_line("error:")  # a tick failed
            ready = until(lambda: (r := http.get("/readyz")).json()["checks"]["broker"]["detail"] != (
                "the broker has not been probed yet") and r)
            body = ready.json()
            assert ready.status_code == 503 and body["status"] == "not ready"
            assert not body["checks"]["broker"]["ok"] and f"127.0.0.1:{port}" in body["checks"]["broker"]["detail"]
            assert not body["checks"]["reconcile"]["ok"] and body["checks"]["manifests"]["ok"]
            assert http.get("/healthz").status_code == 200
            assert http.get("/connectors").status_code == 503  # nothing read yet: no answer made up
            failed = ("reconciler_reconcile_total", (("outcome", "failed"),))
            metrics = until(lambda: (m := samples(http.get("/metrics").text))[failed] >= 1 and m)
            assert metrics[("reconciler_broker_reachable", ())] == 0
        assert watch.stop(signal.SIGTERM) == 0
    finally:
        watch.close()
