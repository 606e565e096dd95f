"""Offsets between a real Java Connect worker and us (KIP-875), both ways.

- Java's `PATCH` and `DELETE /connectors/{name}/offsets`, on a source and on a sink: our
  `reconciler offsets NAME` then says what Java's `GET /connectors/{name}/offsets` says.
- Offsets we write (our offsets request, run as a `run` tick runs it) under keys we mint for a
  multi-field partition holding an emoji: Java's GET finds them, Java's DELETE removes them.
  That needs the fields in Java's HashMap order and the emoji as escaped surrogates.
- Records Java reads in its own way: an empty value, a partition under two encodings with one
  tombstoned, leading zeros and trailing tokens, an empty `connector-` value.

Offsets bodies are compared as sets of entries: Java lists them in a HashMap's order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from java_read_support import (
    FILE_SINK,
    FILE_SOURCE,
    JavaSide,
    OurSide,
    by_partition,
    produce_raw,
    same_eventually,
    unique,
    wait_until,
)
from reconciler.kafka.io.store import LiveStore
from reconciler.devtools.connect import RunningConnect
from reconciler.kafka.formats import records as rec
from reconciler.kafka.io.consume import read_to_end
from reconciler.kafka.formats.partitioner import partition_for
from reconciler.kafka.io.store import read_live_state
from reconciler.manifests import load_or_raise
from reconciler.app.offsets import run_pending_offsets_requests

# Fields out of HashMap order (Java iterates a, filename, zone, shard, table) and an emoji.
EMOJI_PARTITION = {"table": "t", "filename": "g😀.txt", "shard": "x", "zone": "eu", "a": 2}


def other_spelling(key: bytes, partitions: int) -> bytes:
    """The same JSON with spaces after its `{`, on the same topic partition as `key`: records of
    two partitions are read in no fixed order (by Java too), so the test keeps both in one."""
    at = key.index(b"{") + 1
    wanted = partition_for(key, partitions)
    for spaces in range(1, 1000):
        spelled = key[:at] + b" " * spaces + key[at:]
        if partition_for(spelled, partitions) == wanted:
            return spelled
    raise AssertionError(f"no other spelling of {key!r} on its partition")


@pytest.fixture
def java(java_connect: RunningConnect) -> JavaSide:
    return JavaSide(java_connect)


@pytest.fixture
def ours(kafka: Any, java_connect: RunningConnect) -> OurSide:
    return OurSide(kafka.settings(java_connect.group_id))


def same_offsets(java: JavaSide, ours: OurSide, name: str) -> list[str]:
    return same_eventually(
        f"offsets of {name}", lambda: by_partition(java.offsets(name)), lambda: by_partition(ours.offsets(name) or {"offsets": []})
    )


def stopped_source(java: JavaSide, tmp_path: Path, name: str, lines: int = 3) -> dict[str, str]:
    data = tmp_path / f"{name}.txt"
    data.write_text("".join(f"line {i}\n" for i in range(lines)))
    config = {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(data), "topic": f"{name}-out"}
    java.create(name, config)
    wait_until(f"{name}'s first offset", lambda: java.offsets(name)["offsets"])
    java.call("PUT", f"/connectors/{name}/stop", expect=204)
    java.wait_for_states(name, "STOPPED", [])
    return config


def test_source_offsets_altered_and_reset_through_java(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    name = unique("src-offsets")
    config = stopped_source(java, tmp_path, name)
    assert same_offsets(java, ours, name) == by_partition(
        {"offsets": [{"partition": {"filename": config["file"]}, "offset": {"position": 21}}]}
    )
    patch = {"offsets": [
        {"partition": {"filename": config["file"]}, "offset": {"position": 7}},
        {"partition": {**EMOJI_PARTITION, "filename": "f😀.txt"}, "offset": {"position": 5, "z": "😀", "a": 1.5}},
    ]}
    java.call("PATCH", f"/connectors/{name}/offsets", patch, expect=200)
    assert same_offsets(java, ours, name) == by_partition(patch)
    java.call("DELETE", f"/connectors/{name}/offsets", expect=200)
    assert same_offsets(java, ours, name) == []
    java.delete(name)


def test_sink_offsets_altered_and_reset_through_java(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    name = unique("sink-offsets")
    topic = f"{name}-in"
    produce_raw(ours.settings, topic, [(b"%d" % i, b"line %d" % i) for i in range(5)])
    config = {"connector.class": FILE_SINK, "tasks.max": "1", "topics": topic, "file": str(tmp_path / "out.txt")}
    java.create(name, config)
    wait_until(f"{name} to commit", lambda: java.offsets(name)["offsets"])
    java.call("PUT", f"/connectors/{name}/stop", expect=204)
    java.wait_for_states(name, "STOPPED", [])
    assert same_offsets(java, ours, name) == by_partition(
        {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 5}}]}
    )
    patch = {"offsets": [{"partition": {"kafka_topic": topic, "kafka_partition": 0}, "offset": {"kafka_offset": 2}}]}
    java.call("PATCH", f"/connectors/{name}/offsets", patch, expect=200)
    assert same_offsets(java, ours, name) == by_partition(patch)
    java.call("DELETE", f"/connectors/{name}/offsets", expect=200)
    assert same_offsets(java, ours, name) == []
    java.delete(name)


def test_java_finds_and_removes_the_offsets_we_write(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    name = unique("our-keys")
    config = stopped_source(java, tmp_path, name)
    request = {"id": "ours-1", "action": "alter", "offsets": [{"partition": EMOJI_PARTITION, "offset": {"position": 3}}]}
    spec = {"class": FILE_SOURCE, "tasksMax": 1, "state": "stopped",
            "config": {k: v for k, v in config.items() if k not in ("connector.class", "tasks.max")}, "offsets": request}
    directory = tmp_path / "manifests"
    directory.mkdir()
    (directory / f"{name}.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "reconciler.io/v1", "kind": "Connector", "metadata": {"name": name}, "spec": spec}
    ))
    desired = load_or_raise([str(directory)])
    [outcome] = run_pending_offsets_requests(
        ours.settings, desired, read_live_state(ours.settings), store=LiveStore.one_shot(ours.settings)
    )
    assert outcome.status == "applied", outcome.message

    wanted = {"partition": EMOJI_PARTITION, "offset": {"position": 3}}
    listed = same_offsets(java, ours, name)
    assert json.dumps(wanted, sort_keys=True) in listed  # Java finds it (not `"offset": null`)
    java.call("DELETE", f"/connectors/{name}/offsets", expect=200)
    assert same_offsets(java, ours, name) == []
    ours_key = rec.encode_offset_key(name, EMOJI_PARTITION)
    assert b"\\uD83D\\uDE00" in ours_key and ours_key.startswith(f'["{name}",{{"a":2,"filename":'.encode())
    history = [m.value for m in read_to_end(ours.settings, ours.settings.topics.offsets) if m.key == ours_key]
    assert history == [b'{"position":3}', None]  # our write, then Java's tombstone, under one key
    java.delete(name)


def test_records_java_reads_its_own_way(java: JavaSide, ours: OurSide, tmp_path: Path) -> None:
    """Raw records, read by Java and by us the same way (JsonDeserializer and
    OffsetUtils.processPartitionKey's rules)."""
    name = unique("odd")
    config = stopped_source(java, tmp_path, name)
    topic = ours.settings.topics.offsets
    java_bytes = f'["{name}",{{"filename":"two","n":1}}]'.encode()
    produce_raw(ours.settings, topic, [
        (json.dumps([name, {"filename": "empty"}]).encode(), b""),  # an empty value: a null offset
        (other_spelling(java_bytes, ours.settings.topics.offsets_partitions), b'{"position":1}'),
        (java_bytes, b'{"position":2}'),
        (java_bytes, None),  # tombstoned under one spelling: the partition is gone, for Java too
        (f'["{name}",{{"filename":"zeros","n":007}}] trailing'.encode(), b'{"position":0010} x'),
    ])
    listed = same_offsets(java, ours, name)
    assert listed == by_partition({"offsets": [
        {"partition": {"filename": config["file"]}, "offset": {"position": 21}},
        {"partition": {"filename": "empty"}, "offset": None},
        # read as {"filename":"zeros","n":7}, looked up under Java's bytes for that: not there
        {"partition": {"filename": "zeros", "n": 7}, "offset": None},
    ]})

    # Statuses Java accepts: a DESTROYED value (Java itself writes a tombstone instead), a null
    # worker id, Kafka 4's `version` ("undefined" is left out of REST bodies, null is shown).
    ghost = unique("ghost")
    produce_raw(ours.settings, ours.settings.topics.status, [
        (f"status-connector-{ghost}".encode(), b'{"state":"DESTROYED","trace":"","worker_id":null,"generation":1}'),
        (f"status-task-{ghost}-0".encode(), b'{"state":"RUNNING","trace":null,"worker_id":"w","generation":1,"version":"undefined"}'),
        (f"status-task-{ghost}-1".encode(), b'{"state":"FAILED","trace":"boom","worker_id":"w","generation":01,"version":"1.0"} x'),
    ])
    agreed = same_eventually(f"status of {ghost}", lambda: java.get(f"/connectors/{ghost}/status")[1], lambda: ours.status(ghost))
    assert agreed["connector"] == {"state": "DESTROYED", "worker_id": None, "version": None}
    assert [task["state"] for task in agreed["tasks"]] == ["RUNNING", "FAILED"]

    # A `connector-` record with an empty value deletes the connector, for Java and for us.
    produce_raw(ours.settings, ours.settings.topics.configs, [(f"connector-{name}".encode(), b"")])
    # (Polled on the status, which the leader removes after the rebalance: `GET /connectors/{name}`
    # during a rebalance makes Java log an ERROR, RebalanceNeededException.)
    wait_until(f"{name} deleted by an empty value", lambda: java.get(f"/connectors/{name}/status")[0] == 404)
    assert java.get(f"/connectors/{name}")[0] == 404
    connector = ours.connector(name)
    assert connector is None or connector.config is None
