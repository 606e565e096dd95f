"""Invalid manifests on disk are a condition the loop keeps saying, not a reason to stop serving:
a status line under every tick (text and JSON), and `/readyz` degraded but 200 unless strict."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence

import pytest

from reconciler.api.health import readiness
from reconciler.api.state import ApiState, BrokerInfo, ManifestsInfo, TickInfo
from reconciler.app.reload import FixedManifests
from reconciler.app.serve import make_tick
from reconciler.cli.logs import JsonFormatter
from reconciler.cli.tick_output import JsonOutput, TextOutput


class OneTick:
    def tick(self, desired: Sequence[object], **options: object) -> str:
        return "report"


class Said:
    def __init__(self) -> None:
        self.reports: list[object] = []
        self.still_invalid: list[int] = []

    def report(self, report: object) -> None:
        self.reports.append(report)

    def manifests_still_invalid(self, problems: int) -> None:
        self.still_invalid.append(problems)

    def applied_before_failure(self, applied: object) -> None:
        raise AssertionError("no batch fails here")


@pytest.mark.parametrize(("problems", "lines"), [([], []), (["a.yaml:1:1: x", "a.yaml:2:1: y"], [2])])
def test_each_tick_says_whether_the_files_on_disk_are_still_invalid(problems: list[str], lines: list[int]) -> None:
    said = Said()
    tick = make_tick(OneTick(), FixedManifests([], ["m"], problems), said, None)  # type: ignore[arg-type]
    tick()
    tick()
    assert said.reports == ["report", "report"] and said.still_invalid == lines * 2


def test_the_status_line_in_text_and_json(capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    TextOutput().manifests_still_invalid(2)
    assert capsys.readouterr().out == (
        "  manifests on disk: invalid (2 problem(s)), still running the previous valid ones (/readyz: degraded)\n")
    with caplog.at_level(logging.WARNING, logger="reconciler.events"):
        JsonOutput().manifests_still_invalid(2)
    doc = json.loads(JsonFormatter().format(caplog.records[0]))
    assert (doc["event"], doc["problems"], doc["level"]) == ("manifests-still-invalid", 2, "warning")


def test_readiness_serves_while_degraded_unless_strict() -> None:
    now = time.time()
    serving = ApiState(worker_id="w", last_tick=TickInfo(started_at=now, duration_s=1.0, outcome="succeeded"),
                       broker=BrokerInfo(reachable=True, checked_at=now, cluster_id="cluster-1"))
    assert readiness(serving, now, 60) == readiness(serving, now, 60, strict=True)
    assert readiness(serving, now, 60)[0] == 200
    typo = ApiState(**{**serving.__dict__, "manifests": ManifestsInfo(False, ("m.yaml:3:1: bad",))})
    code, body = readiness(typo, now, 60)
    assert (code, body["status"], body["manifest_problems"]) == (200, "degraded", ["m.yaml:3:1: bad"])
    assert readiness(typo, now, 60, strict=True) == (503, body)
    away = ApiState(**{**typo.__dict__, "broker": BrokerInfo(reachable=False, checked_at=now, error="refused")})
    assert readiness(away, now, 60)[0] == 503 and readiness(away, now, 60)[1]["status"] == "not ready"
