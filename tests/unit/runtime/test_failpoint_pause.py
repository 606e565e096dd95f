"""A paused failpoint: disarmed while its marker exists, paused by the first hit after the
marker is deleted, resumed by `<name>.resume` (the broker-restart test's sequence)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from polling import until

from reconciler import failpoints


def test_a_pause_is_armed_by_deleting_its_marker_and_resumed_by_a_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(failpoints.ENV_POINTS, "sink.mid_write")
    monkeypatch.setenv(failpoints.ENV_PAUSE_DIR, str(tmp_path))
    marker = tmp_path / "sink.mid_write.paused"
    marker.write_text("")
    started = time.monotonic()
    failpoints.hit(failpoints.SINK_MID_WRITE)  # disarmed: the marker exists
    assert time.monotonic() - started < 1
    marker.unlink()
    paused = threading.Thread(target=failpoints.hit, args=(failpoints.SINK_MID_WRITE,))
    paused.start()
    until(marker.exists, 10, 0.01, what="the paused marker")
    assert paused.is_alive()
    (tmp_path / "sink.mid_write.resume").touch()
    paused.join(5)
    assert not paused.is_alive()
    failpoints.hit(failpoints.SINK_MID_WRITE)  # later hits go on
