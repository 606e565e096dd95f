"""A sink task's records as Arrow (`runtime.sink.reader.to_arrow`): every message's offset and
field; and a range from which nothing comes ends its batch instead of failing the task."""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Message

from reconciler.connectors.api import sink_schema
from reconciler.kafka.settings import KafkaSettings
from reconciler.runtime.sink.ranges import SinkPartitionWork
from reconciler.runtime.sink.reader import RangeReader, to_arrow


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


def test_a_range_nothing_comes_from_ends_its_batch_undone_as_a_java_sinks_empty_poll() -> None:
    with socket.socket() as closed:  # bound, never listening: the broker is away
        closed.bind(("127.0.0.1", 0))
        settings = KafkaSettings(bootstrap_servers=f"127.0.0.1:{closed.getsockname()[1]}", timeout_s=1.0)
        item = SinkPartitionWork(settings=settings, connector="c", connector_class="file-sink", task_id=0,
                                 task_config={}, topic="t", partition=0, start=5, committed=True, end=8)
        reader = RangeReader(item, 5)
        began = time.monotonic()
        assert list(reader.batches()) == []  # no ConnectorError: the task is not FAILED for it
        assert 1.0 <= time.monotonic() - began < 10
        assert not reader.done and reader.delivered is None and reader.position == 5  # nothing claimed as read
