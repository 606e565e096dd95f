"""Our manifests → Java obeys: `reconciler apply` drives a real Java Kafka Connect worker.

Java's FileStreamSourceConnector / FileStreamSinkConnector are declared in our manifests by
class name and applied with our CLI to the `java_connect` worker's group. Java's REST must then
report the declared state, records must flow, and for each operation done both ways — through
our apply on one connector and through Java's REST on another — the config-topic records must
be the same bytes (names swapped). The one normalisation: task configs, which Java writes from
a `HashMap` (its own order), are compared as parsed JSON. The `java_connect` fixture fails a test
whose records made Java log any ERROR.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from java_write_support import (
    FILE_SINK,
    FILE_SOURCE,
    JavaGroup,
    normalised,
    renamed,
    rest_config,
    unique,
    wait_for,
)

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest


@pytest.fixture
def java(java_connect: RunningConnect, kafka: KafkaUnderTest, tmp_path: Path) -> JavaGroup:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    return JavaGroup(java_connect, kafka.settings(java_connect.group_id), manifests)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def test_apply_creates_java_file_connectors_that_run_and_move_records(java: JavaGroup, tmp_path: Path) -> None:
    source, sink, topic = unique("fsrc"), unique("fsink"), unique("lines")
    inbox, outbox = tmp_path / "in.txt", tmp_path / "out.txt"
    inbox.write_text("alpha\nbeta\ngamma\n")
    source_config = {"file": str(inbox), "topic": topic}
    java.declare(source, FILE_SOURCE, source_config)
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": topic})
    start = java.config_end()

    java.apply()

    java.wait_states(source, "RUNNING", {0: "RUNNING"})
    java.wait_states(sink, "RUNNING", {0: "RUNNING"})
    wait_for("the lines to reach the sink's file", lambda: lines(outbox) == ["alpha", "beta", "gamma"] or None)
    with inbox.open("a") as more:
        more.write("delta\n")
    wait_for("a new line to follow", lambda: lines(outbox)[-1:] == ["delta"] or None)
    assert java.agree(source)["type"] == "source" and java.agree(sink)["type"] == "sink"

    # The same create through Java's REST writes the same bytes as our apply did.
    twin = unique("fsrc")
    java.rest("POST", "/connectors", {"name": twin, "config": rest_config(twin, FILE_SOURCE, source_config)})
    java.wait_states(twin, "RUNNING", {0: "RUNNING"})
    ours = java.config_records(source, start)
    theirs = java.config_records(twin, start)
    assert ours[0][0] == f"connector-{source}".encode()
    assert renamed(ours[:1], source, twin) == theirs[:1]
    # What Java wrote next for each (task configs, commit) is the same too.
    assert normalised(renamed(ours, source, twin)) == normalised(theirs)
    java.rest("DELETE", f"/connectors/{twin}")
