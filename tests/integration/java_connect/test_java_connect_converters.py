"""A Java Connect worker and our converters on the same topics (docs/converters.md): what Java's
FileStreamSource writes with `value.converter=JsonConverter` we read into typed columns, and the
envelopes we write Java's FileStreamSink reads with the same converter."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest

from java_read_support import produce_raw
from java_write_support import FILE_SINK, FILE_SOURCE, JavaGroup, unique, wait_for
from reconciler.connectors.converters import encode
from reconciler.connectors.converters import schema as S
from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.settings import JSON, Converter
from reconciler.errors import ReconcilerError
from reconciler.kafka.io.consume import read_to_end

if TYPE_CHECKING:
    from reconciler.devtools.connect import RunningConnect
    from tests.conftest import KafkaUnderTest

pytestmark = pytest.mark.integration
WITH_SCHEMAS = {"value.converter": JSON, "value.converter.schemas.enable": "true"}


@pytest.fixture
def java(java_connect: RunningConnect, kafka: KafkaUnderTest, tmp_path: Path) -> JavaGroup:
    manifests = tmp_path / "manifests"
    manifests.mkdir()
    return JavaGroup(java_connect, kafka.settings(java_connect.group_id), manifests)


def test_a_java_source_with_json_converter_is_read_into_columns(java: JavaGroup, tmp_path: Path) -> None:
    source, topic = unique("jsonsrc"), unique("json-lines")
    inbox = tmp_path / "in.txt"
    inbox.write_text("alpha\nb\u00e9ta \U0001f600\n")
    java.declare(source, FILE_SOURCE, {"file": str(inbox), "topic": topic, **WITH_SCHEMAS})
    java.apply()

    def both() -> list[bytes | None] | None:
        try:
            found = [m.value for m in read_to_end(java.settings, topic)]
        except ReconcilerError:  # the worker has not created the topic yet
            return None
        return found if len(found) == 2 else None

    raw = wait_for("Java's source to write both lines", both)
    decoded = decode(raw, Converter("json"))
    assert decoded.failures == []
    assert decoded.table.schema.field("value").type == pa.string()
    assert decoded.table.column("value").to_pylist() == ["alpha", "b\u00e9ta \U0001f600"]
    assert raw == [encode.envelope(S.Schema("string"), text) for text in ("alpha", "b\u00e9ta \U0001f600")]
    java.rest("DELETE", f"/connectors/{source}")


def test_a_java_sink_reads_our_envelopes(java: JavaGroup, tmp_path: Path) -> None:
    sink, topic = unique("jsonsink"), unique("json-rows")
    outbox = tmp_path / "out.txt"
    row = S.struct(("id", S.Schema("int32")), ("name", S.Schema("string", optional=True)),
                   ("price", S.decimal(2)), ("tags", S.Schema("array", items=S.Schema("string"))))
    values = [{"id": 1, "name": "a", "price": Decimal("12.30"), "tags": ["x", "y"]},
              {"id": 2, "name": None, "price": Decimal("-0.05"), "tags": []}]
    produce_raw(java.settings, topic, [(b"k", encode.envelope(row, value)) for value in values])
    java.declare(sink, FILE_SINK, {"file": str(outbox), "topics": topic, **WITH_SCHEMAS})
    java.apply()

    def lines() -> list[str] | None:
        found = outbox.read_text().splitlines() if outbox.exists() else []
        return found if len(found) == len(values) else None

    # Struct.toString, as FileStreamSinkTask prints each value.
    assert wait_for("Java's sink to write both rows", lines) == [
        "Struct{id=1,name=a,price=12.30,tags=[x, y]}",
        "Struct{id=2,price=-0.05,tags=[]}",
    ]
    java.rest("DELETE", f"/connectors/{sink}")
