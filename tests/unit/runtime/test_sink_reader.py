"""A sink task's records as Arrow (`runtime.sink.reader.to_arrow`): every message's offset and field."""

from __future__ import annotations

import pytest
from confluent_kafka import Message

from reconciler.connectors.api import sink_schema
from reconciler.runtime.sink.reader import to_arrow


@pytest.mark.parametrize(
    "offsets",
    [
        pytest.param([7, 8, 9, 10], id="contiguous"),
        pytest.param([7, 8, 10, 13], id="gaps: transaction markers or compaction"),
        pytest.param([42], id="one record"),
    ],
)
def test_to_arrow_keeps_every_message_offset_and_field(offsets: list[int]) -> None:
    messages = [
        Message(topic="t", partition=3, offset=o, key=b"k%d" % o, value=None if o == 8 else b"v%d" % o, timestamp=(1, 1000 + o))
        for o in offsets
    ]
    batch = to_arrow("t", 3, messages)
    assert batch.schema == sink_schema()
    assert batch.column("offset").to_pylist() == offsets
    assert batch.column("timestamp").to_pylist() == [1000 + o for o in offsets]
    assert batch.column("key").to_pylist() == [b"k%d" % o for o in offsets]
    assert batch.column("value").to_pylist() == [None if o == 8 else b"v%d" % o for o in offsets]
    assert set(batch.column("partition").to_pylist()) == {3}
