"""Failpoints (`reconciler.failpoints`) are armed by name from RECONCILER_FAILPOINTS; an unarmed one
does nothing. (Paused failpoints: test_failpoint_pause.py.)"""

from __future__ import annotations

import pytest

from reconciler import failpoints


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
