"""`watch` whose broker is away stops at once on SIGTERM, with exit 0 (a real process, no
Kafka): its ticks fail fast, nothing is left to finish, and stopping does not wait for the
broker again (no release of statuses it never wrote, no health probe held up to the timeout)."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MANIFEST = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata: {name: gen}
spec:
  class: datagen
  config: {topic: t, count: 10}
"""


def test_sigterm_stops_a_watch_whose_broker_is_away_at_once(tmp_path: Path) -> None:
    (tmp_path / "gen.yaml").write_text(MANIFEST)
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]  # nothing listens there once closed
    command = [sys.executable, "-m", "reconciler.cli.main", "watch", str(tmp_path), "--bootstrap-servers",
               f"127.0.0.1:{port}", "--group-id", "g", "--http-bind", "127.0.0.1:0", "--timeout", "20"]
    watch = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert watch.stdout is not None
    lines = []
    for line in watch.stdout:  # the first tick's error: the loop is running
        lines.append(line)
        if "cannot reach Kafka" in line:
            break
    assert any("connection refused" in line for line in lines), "".join(lines)
    started = time.monotonic()
    watch.send_signal(signal.SIGTERM)
    rest, _ = watch.communicate(timeout=25)
    assert watch.returncode == 0, "".join(lines) + rest
    assert time.monotonic() - started < 5  # not the 20 s timeout, nor the 30 s grace period
    assert "grace period" not in rest.replace("(grace period 30 s)", "")
    assert "still name" not in rest  # it never wrote a status
