"""The file connectors on a real HDFS (Hadoop's MiniDFSCluster, `hdfs`), through hdfs-native:
parquet-sink and file-sink SIGKILLed at each step of a batch with their output on HDFS, then
converging (0 rows lost, 0 twice, read back by hdfs-native's own client, no temporaries left);
file-source reading HDFS files killed before its transaction commits, then each line once in
the topic, and a missing directory an error, as on a disk; a zombie's write of the same range refused by HDFS's rename, the first file kept; a
writer killed mid-file (its lease held) not blocking the next write, its temporary cleaned; a
KIP-875 rewind moving files into `_superseded/`; a user the NameNode refuses, in one line; an
unreachable NameNode failing the task in one line, at once (hdfs-native alone retries for 3
minutes).
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hdfs_native import Client, WriteOptions

from crash_support import run_once
from reconciler.connectors.api import ConnectorError
from reconciler.connectors.file_source import FileSourceConnector, FileSourceTask
from reconciler.connectors.parquet_sink import ParquetSinkConnector
from reconciler.connectors.storage import StorageUnavailable, open_store
from reconciler.devtools.broker import free_port
from reconciler.devtools.hdfs import RunningHdfs
from reconciler.kafka.io.consume import read_to_end
from range_sink_support import keyed, parquet_task, zombie_loses_the_race, zombie_race
from run_support import Pipeline, big_batches, committed_everything, ids, produce_ids
from s3_support import in_dataset

__all__ = ["big_batches"]  # the fixture

pytestmark = pytest.mark.integration
COUNT = 3000


def base() -> str:
    return f"/t-{uuid.uuid4().hex[:10]}"


def files(hdfs: RunningHdfs, root: str) -> dict[str, bytes]:
    """Every file under `root` (relative path → content), as hdfs-native's own client lists it."""
    client, found = Client(hdfs.uri()), {}
    if not _exists(client, root):
        return {}
    for path in _walk(client, root):
        with client.read(path) as handle:
            found[path[len(root) + 1:]] = handle.read()
    return found


def _exists(client: Any, path: str) -> bool:
    try:
        client.get_file_info(path)
    except FileNotFoundError:
        return False
    return True


def _walk(client: Any, directory: str) -> list[str]:
    paths: list[str] = []
    for status in client.list_status(directory):
        paths += _walk(client, status.path) if status.isdir else [status.path]
    return paths


def parquet_keys(hdfs: RunningHdfs, root: str) -> Counter[bytes]:
    found: Counter[bytes] = Counter()
    for relative, body in files(hdfs, root).items():
        if relative.endswith(".parquet") and in_dataset(relative):
            found.update(pq.read_table(pa.BufferReader(body), columns=["key"]).column("key").to_pylist())
    return found


def text_ids(hdfs: RunningHdfs, root: str) -> Counter[bytes]:
    found: Counter[bytes] = Counter()
    for relative, body in files(hdfs, root).items():
        if relative.endswith(".txt") and in_dataset(relative):
            found.update(body.splitlines())  # each value is its id
    return found


@pytest.mark.timeout(900)  # two runs start a Spark of their own each
def test_sinks_on_hdfs_killed_mid_write_and_after_files_converge(big_batches: Pipeline, hdfs: RunningHdfs) -> None:
    pipeline, root = big_batches, base()
    topic = pipeline.topic("orders", 2)
    produce_ids(pipeline.settings, topic, range(COUNT))
    parquet, text = f"{root}/parquet", f"{root}/text"
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": hdfs.uri(parquet), "flush.records": 500},
                       tasks_max=2)
    pipeline.connector("lines", "file-sink", {"topics": topic, "path": hdfs.uri(text), "flush.records": 500},
                       tasks_max=2)

    run_once(pipeline, "sink.mid_write")  # a partition's first file written, more to read
    # Each sink on its own: the two read the same ids, and both may have written their first
    # files before the kill landed (then an id is in each once, never twice in one).
    in_parquet, in_text = parquet_keys(hdfs, parquet), text_ids(hdfs, text)
    assert 0 < sum(in_parquet.values()) + sum(in_text.values()) < 2 * COUNT
    assert set(in_parquet.values()) <= {1} and set(in_text.values()) <= {1}
    assert not committed_everything(pipeline.settings, "connect-archive", topic)

    run_once(pipeline, "sink.after_files")  # files in place, offsets not committed
    assert set(parquet_keys(hdfs, parquet).values()) <= {1} and set(text_ids(hdfs, text).values()) <= {1}

    pipeline.tick()  # recovery: the listing is the truth, nothing written twice
    assert parquet_keys(hdfs, parquet) == ids(COUNT)
    assert text_ids(hdfs, text) == ids(COUNT)
    for group in ("connect-archive", "connect-lines"):
        assert committed_everything(pipeline.settings, group, topic)
    assert not [name for name in files(hdfs, root) if name.endswith(".tmp")]  # renamed, or cleaned at open


def test_file_source_on_hdfs_killed_before_its_commit_produces_each_line_once(
    big_batches: Pipeline, hdfs: RunningHdfs
) -> None:
    pipeline, root = big_batches, base()
    client = Client(hdfs.uri())
    for name, numbers in (("a.jsonl", range(0, 600)), ("sub/b.jsonl", range(600, 1000))):
        with client.create(f"{root}/{name}", WriteOptions(create_parent=True)) as out:
            out.write("".join(f'{{"n": {n}}}\n' for n in numbers).encode())
    topic = pipeline.topic("lines", 2)
    pipeline.connector("files", "file-source", {"path": hdfs.uri(root), "topic": topic, "glob": "**/*.jsonl"},
                       tasks_max=2)

    run_once(pipeline, "source.before_commit")  # records and offsets produced, the transaction open
    pipeline.tick()
    values = Counter(json.loads(m.value or b"")["n"] for m in read_to_end(pipeline.settings, topic))
    assert values == Counter(range(1000))


def test_file_source_on_a_missing_hdfs_directory_says_so(hdfs: RunningHdfs) -> None:
    config = {"name": "in", "topic": "t", "path": hdfs.uri(base())}
    task = FileSourceTask(FileSourceConnector().task_configs(config, 1)[0])
    with pytest.raises(ConnectorError, match="file-source directory 'hdfs://.*' does not exist"):
        task.poll_batch({}, 10)


def test_a_zombie_writing_the_same_range_is_refused_and_nothing_doubles(hdfs: RunningHdfs) -> None:
    root = base()
    config = {"name": "archive", "topics": "orders", "path": hdfs.uri(root), "flush.records": "1000"}
    zombie = zombie_race(config)  # both read 0-99; the current task wrote its file first
    # The zombie's rename onto the same name is refused: it re-lists and keeps the current file.
    zombie_loses_the_race(zombie, lambda: files(hdfs, root), lambda: parquet_keys(hdfs, root))


def test_a_writer_killed_mid_file_blocks_nothing_and_its_temporary_is_cleaned(hdfs: RunningHdfs) -> None:
    """A writer that died mid-file leaves a temporary under construction, its lease held for
    HDFS's soft limit (a minute): the next write of that name goes on at once, and the next
    task's open deletes the temporary."""
    root, name = base(), "orders/partition=0/orders+0+00000000000000000000-00000000000000000499.txt"
    dead = Client(hdfs.uri()).create(f"{root}/orders/partition=0/.{name.rsplit('/', 1)[1]}.0123456789ab.tmp",
                                     WriteOptions(create_parent=True))
    dead.write(b"half a fi")  # never closed: the lease stays with this client
    store = open_store(hdfs.uri(root), {})
    started = time.monotonic()
    assert store.write_new(name, lambda out: out.write(b"whole\n")) is True
    assert time.monotonic() - started < 10
    assert store.write_new(name, lambda out: out.write(b"zombie's\n")) is False
    store.remove_temp_files("orders/partition=0")
    assert files(hdfs, root) == {name: b"whole\n"}


def test_a_rewind_on_hdfs_moves_the_files_past_it_aside(hdfs: RunningHdfs) -> None:
    root = base()
    config = {"name": "archive", "topics": "orders", "path": hdfs.uri(root), "flush.records": "25"}
    task = parquet_task(config)
    task.open([("orders", 0)])
    for start in range(0, 100, 25):
        task.write(keyed(range(start, start + 25)))
    task.pre_commit({("orders", 0): 100}, closing=True)  # files 0-24, 25-49, 50-74, 75-99

    ParquetSinkConnector().alter_offsets(config, {("orders", 0): 60})
    assert parquet_keys(hdfs, root) == Counter(b"%d" % o for o in range(60))
    superseded = sorted(path.rsplit("/", 1)[1] for path in files(hdfs, root) if path.startswith("_superseded/"))
    assert superseded == [f"orders+0+{50:020d}-{74:020d}.parquet", f"orders+0+{75:020d}-{99:020d}.parquet"]


def test_a_refused_user_fails_in_one_line_naming_the_namenode_and_nothing_is_written(
    hdfs: RunningHdfs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simple authentication as HADOOP_USER_NAME: a user the directory's permissions refuse gets
    the NameNode's AccessControlException in one line, without its Java stack."""
    root = base()
    Client(hdfs.uri()).mkdirs(root, 0o755, True)  # the superuser's (this process's user)
    monkeypatch.setenv("HADOOP_USER_NAME", "bob")
    store = open_store(hdfs.uri(root), {})
    with pytest.raises(StorageUnavailable) as refused:
        store.write_new("orders/partition=0/f.txt", lambda out: out.write(b"x\n"))
    message = str(refused.value)
    assert message.startswith(f"cannot use HDFS namenode {hdfs.namenode} ({hdfs.uri(root)}/orders/partition=0/f.txt): "
                              "AccessControlException: Permission denied: user=bob"), message
    assert "\n" not in message and "\tat " not in message
    monkeypatch.delenv("HADOOP_USER_NAME")
    assert files(hdfs, root) == {}


def test_an_unreachable_namenode_fails_the_task_in_one_line_at_once(big_batches: Pipeline, hdfs: RunningHdfs) -> None:
    pipeline = big_batches
    topic = pipeline.topic("orders", 1)
    produce_ids(pipeline.settings, topic, range(20))
    nowhere = f"127.0.0.1:{free_port()}"
    pipeline.connector("away", "parquet-sink", {"topics": topic, "path": f"hdfs://{nowhere}/away"})
    started = time.monotonic()
    pipeline.tick()
    assert time.monotonic() - started < 60
    task = pipeline.state("away").task_statuses[0]
    assert task.state.value == "FAILED" and task.trace is not None
    last = task.trace.strip().splitlines()[-1]
    assert f"StorageUnavailable: cannot use HDFS namenode {nowhere}: cannot connect to {nowhere}" in last, task.trace
    assert not committed_everything(pipeline.settings, "connect-away", topic)
