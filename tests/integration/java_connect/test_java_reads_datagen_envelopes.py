"""Our datagen and file-source, run by our runtime (a real broker and Spark) with
`value.converter=JsonConverter` and `key.converter=JsonConverter`, write records a Java Connect
worker's FileStreamSink reads with the same converters and `schemas.enable=true`: each datagen
value arrives as a Struct with datagen's fields (Struct.toString, as FileStreamSinkTask prints
it), each file-source value as the line itself (a STRING, as Java's FileStreamSource writes it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from java_write_support import FILE_SINK, JavaGroup, unique, wait_for
from reconciler.connectors.converters.settings import JSON
from reconciler.connectors.datagen import DatagenSettings, value_template
from run_support import Pipeline, pipeline

__all__ = ["pipeline"]  # the fixture

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest

pytestmark = pytest.mark.integration
COUNT = 12
LINES = ['{"n":1,"s":"é"}', '{"quote":"\\"","tab":"\\t"}', '{"u":"𝄞"}']
JSON_BOTH = {"value.converter": JSON, "value.converter.schemas.enable": "true", "key.converter": JSON}


def test_a_java_sink_reads_the_envelopes_datagen_wrote(pipeline: Pipeline, java_connect: RunningConnect,
                                                       kafka: KafkaUnderTest, tmp_path: Path) -> None:
    topic = pipeline.topic("generated", 2)
    source = {"topic": topic, "count": COUNT, "shards": 2, "record.bytes": 40, **JSON_BOTH}
    pipeline.connector("gen", "datagen", source, tasks_max=2)
    lines_topic, inbox = pipeline.topic("lines", 1), tmp_path / "in"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text("".join(f"{line}\n" for line in LINES), encoding="utf-8")
    pipeline.connector("files", "file-source", {"topic": lines_topic, "path": str(inbox), **JSON_BOTH})
    pipeline.tick()
    assert pipeline.states("gen") == ("RUNNING", {0: "RUNNING", 1: "RUNNING"})
    assert pipeline.states("files") == ("RUNNING", {0: "RUNNING"})

    manifests = tmp_path / "java-manifests"
    manifests.mkdir()
    java = JavaGroup(java_connect, kafka.settings(java_connect.group_id), manifests)
    sink, outbox = unique("datagen-sink"), tmp_path / "out.txt"
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": f"{topic},{lines_topic}", **JSON_BOTH})
    java.apply()

    def lines() -> list[str] | None:
        found = outbox.read_text(encoding="utf-8").splitlines() if outbox.exists() else []
        return found if len(found) == COUNT + len(LINES) else None

    head, tail = value_template(DatagenSettings.parse({"topic": topic, "count": str(COUNT), "record.bytes": "40"}))
    pad = tail.split(b'"payload":"')[-1].rstrip(b'"}').decode()
    found = wait_for("Java's sink to write every record", lines)
    assert sorted(found) == sorted([f"Struct{{id={i},payload={pad}}}" for i in range(COUNT)] + LINES)
    assert [line for line in found if not line.startswith("Struct")] == LINES  # one partition: in order
    java.rest("DELETE", f"/connectors/{sink}")
