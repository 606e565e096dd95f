"""What the Java worker's log counts as an error for the tests (`RunningConnect.log_errors`):
every ERROR line, but the one Java logs for its own start/restart race, recognised by its cause."""

from __future__ import annotations

import subprocess
from pathlib import Path

from reconciler.devtools.connect import RACE, RunningConnect
from reconciler.devtools.process import ManagedProcess

RACED = f"""[2026-11-29 21:46:10,866] INFO Handling connector-only config update by restarting connector file-sink-1
[2026-11-29 21:46:10,870] ERROR [Worker clientId=connect-1, groupId=g] Failed to start connector 'file-sink-1'
org.apache.kafka.connect.errors.ConnectException: Failed to start connector: file-sink-1
\tat org.apache.kafka.connect.runtime.WorkerConnector.doShutdown(WorkerConnector.java:308) ~[connect-runtime-4.3.1.jar:?]
Caused by: org.apache.kafka.connect.errors.ConnectException: {RACE}
\tat org.apache.kafka.connect.runtime.WorkerConnector.doShutdown(WorkerConnector.java:310) ~[connect-runtime-4.3.1.jar:?]
"""
PARSE = "[2026-11-29 21:47:00,000] ERROR [Worker clientId=connect-1] Failed to read a config record (KafkaConfigBackingStore)\n"


def worker(log: Path) -> RunningConnect:
    process = ManagedProcess("worker", log, subprocess.Popen(["true"]))
    process.process.wait()
    return RunningConnect(url="http://127.0.0.1:1", group_id="g", log_path=log, process=process)


def test_the_start_restart_race_is_not_an_error_and_anything_else_is(tmp_path: Path) -> None:
    log = tmp_path / "connect.log"
    log.write_text(RACED)
    assert worker(log).log_errors() == []
    log.write_text(RACED + PARSE)
    assert worker(log).log_errors() == [PARSE.strip()]
    log.write_text(RACED.replace(RACE, "Connector class not found"))
    assert worker(log).log_errors() == [RACED.splitlines()[1]]
