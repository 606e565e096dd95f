"""The file connectors on an S3-compatible server (moto's, real HTTP; `s3_server`): parquet-sink
and file-sink SIGKILLed at each step of a batch with their output on S3, then converging (0 rows
lost, 0 twice, read back by pyarrow and boto3); a zombie's write of the same range refused by
the conditional PUT; a rewind killed between copy and delete, completed by the next one; an
unreachable endpoint and refused credentials failing the task in one line without the secret;
file-source reading objects under a prefix.

The crashing runs are `reconciler run --once` subprocesses, the recoveries in-process ticks;
all reach the server through the connector's `s3.*` keys (the AWS variables alone: examples/s3's
test).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from collections import Counter
from pathlib import Path

import pytest

from crash_support import run_once
from reconciler import failpoints
from reconciler.connectors.api import partition_key
from reconciler.connectors.file_source import FileSourceConnector, FileSourceTask
from reconciler.connectors.parquet_sink import ParquetSinkConnector
from reconciler.devtools.broker import free_port
from reconciler.devtools.s3 import RunningS3, start_s3
from reconciler.kafka.settings import KafkaSettings
from run_support import Pipeline, big_batches, child_env, committed_everything, ids, produce_ids, topic_keys
from range_sink_support import keyed, parquet_task, zombie_race
from s3_support import client, objects, s3_keys, s3_parquet_keys, s3_text_lines

__all__ = ["big_batches"]  # the fixture

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def pipeline(kafka_settings: KafkaSettings, tmp_path: Path) -> Pipeline:
    """Manifests only: every run here is a `reconciler run --once` subprocess."""
    return Pipeline(kafka_settings, tmp_path)


def prefix() -> str:
    return f"t-{uuid.uuid4().hex[:10]}"


@pytest.mark.timeout(900)  # two runs start a Spark of their own each
def test_sinks_on_s3_killed_mid_write_and_after_files_converge(big_batches: Pipeline, s3_server: RunningS3) -> None:
    pipeline, count, base = big_batches, 40_000, prefix()
    topic = pipeline.topic("orders", 2)
    pipeline.connector("src", "datagen", {"topic": topic, "count": count, "shards": 4, "record.bytes": 40},
                       tasks_max=2)
    pipeline.tick()
    assert topic_keys(pipeline.settings, topic) == ids(count)
    pipeline.set("src", state="stopped")  # the crashing runs below are about the sinks alone
    parquet, text = f"{base}/parquet", f"{base}/text"
    keys = s3_keys(s3_server)
    pipeline.connector("archive", "parquet-sink", {"topics": topic, "path": s3_server.uri(parquet),
                                                   "flush.records": 4000, **keys}, tasks_max=2)
    pipeline.connector("lines", "file-sink", {"topics": topic, "path": s3_server.uri(text), "flush.records": 4000,
                                              **keys}, tasks_max=2)

    run_once(pipeline, "sink.mid_write")  # a partition's first file written, more to read
    # Each sink on its own: the two read the same ids, and both may have written their first
    # files before the kill landed (then an id is in each once, never twice in one).
    in_parquet, in_text = s3_parquet_keys(s3_server, parquet), Counter(_ids(s3_text_lines(s3_server, text)))
    assert 0 < sum(in_parquet.values()) + sum(in_text.values()) < 2 * count
    assert set(in_parquet.values()) <= {1} and set(in_text.values()) <= {1}
    assert not committed_everything(pipeline.settings, "connect-archive", topic)

    run_once(pipeline, "sink.after_files")  # files in place, offsets not committed
    assert set(s3_parquet_keys(s3_server, parquet).values()) <= {1}

    pipeline.tick()  # recovery: the listing is the truth, nothing written twice
    assert s3_parquet_keys(s3_server, parquet) == ids(count)
    assert Counter(_ids(s3_text_lines(s3_server, text))) == ids(count)
    assert committed_everything(pipeline.settings, "connect-archive", topic)
    assert committed_everything(pipeline.settings, "connect-lines", topic)
    assert not any(name.endswith(".tmp") for name in objects(s3_server, base))  # no rename, no temporaries


def _ids(lines: Counter[bytes]) -> Counter[bytes]:
    return Counter({b"%d" % json.loads(line)["id"]: n for line, n in lines.items()})


def test_an_unreachable_store_and_refused_credentials_fail_the_task_in_one_line(
    pipeline: Pipeline, s3_server: RunningS3, tmp_path: Path
) -> None:
    topic = pipeline.topic("orders", 1)
    produce_ids(pipeline.settings, topic, range(50))
    nowhere = f"http://127.0.0.1:{free_port()}"
    pipeline.connector("away", "parquet-sink", {"topics": topic, "path": "s3://reconciler/away",
                                                **s3_keys(s3_server), "s3.endpoint": nowhere})
    with start_s3(tmp_path / "strict", check_credentials=True) as strict:
        secret = f"planted-secret-{uuid.uuid4().hex}"
        pipeline.connector("refused", "file-sink", {"topics": topic, "path": "s3://reconciler/refused",
                                                    **s3_keys(strict), "s3.secret.access.key": secret})
        output = run_once(pipeline, None, expected=1)
        for name, endpoint in (("away", nowhere), ("refused", strict.endpoint)):
            task = pipeline.state(name).task_statuses[0]
            assert task.state.value == "FAILED" and task.trace is not None
            last = task.trace.strip().splitlines()[-1]
            assert f"StorageUnavailable: cannot use S3 endpoint {endpoint}, bucket reconciler" in last, task.trace
            assert secret not in task.trace
            assert not committed_everything(pipeline.settings, f"connect-{name}", topic)
        assert "refused" in output and secret not in output
        assert "ACCESS_DENIED" in pipeline.state("refused").task_statuses[0].trace  # type: ignore[operator]  # the store's reason


def test_a_zombie_writing_the_same_range_is_refused_and_nothing_doubles(s3_server: RunningS3) -> None:
    base = prefix()
    config = {"name": "archive", "topics": "orders", "path": s3_server.uri(base), "flush.records": "1000",
              **s3_keys(s3_server)}
    zombie = zombie_race(config)  # both read 0-99; the current task wrote its file first
    name = f"{base}/topic=orders/partition=0/orders+0+{0:020d}-{99:020d}.parquet"
    before = client(s3_server).head_object(Bucket=s3_server.bucket, Key=name)["ETag"]

    # The zombie's PUT of the same name is refused (412): it re-lists, keeps the current file.
    assert zombie.pre_commit({("orders", 0): 100}, closing=True) == {("orders", 0): 100}
    assert client(s3_server).head_object(Bucket=s3_server.bucket, Key=name)["ETag"] == before
    assert zombie.partitions[("orders", 0)].held == [(0, 99)]
    zombie.write(keyed(range(50, 150)))  # what it reads next: only 100-149 is new
    zombie.pre_commit({("orders", 0): 150}, closing=True)
    assert s3_parquet_keys(s3_server, base) == Counter(b"%d" % o for o in range(150))


REWIND_IN_A_SUBPROCESS = textwrap.dedent(
    """
    import json, sys
    from reconciler.connectors.parquet_sink import ParquetSinkConnector
    ParquetSinkConnector().alter_offsets(json.loads(sys.argv[1]), {("orders", 0): int(sys.argv[2])})
    """
)


def test_a_rewind_on_s3_killed_between_copy_and_delete_is_completed_by_the_next(s3_server: RunningS3) -> None:
    base = prefix()
    config = {"name": "archive", "topics": "orders", "path": s3_server.uri(base), "flush.records": "25",
              **s3_keys(s3_server)}
    task = parquet_task(config)
    task.open([("orders", 0)])
    for start in range(0, 100, 25):
        task.write(keyed(range(start, start + 25)))
    task.pre_commit({("orders", 0): 100}, closing=True)  # files 0-24, 25-49, 50-74, 75-99

    # Not the session's RECONCILER_DRIVER_PID: the failpoint would SIGKILL pytest (the driver of
    # the shared SparkSession) along with the subprocess.
    env = child_env(**{failpoints.ENV_POINTS: failpoints.Failpoint.STORAGE_AFTER_COPY.value})
    done = subprocess.run([sys.executable, "-c", REWIND_IN_A_SUBPROCESS, json.dumps(config), "60"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == -9, done.stderr
    left = objects(s3_server, base)
    moved = f"_superseded/topic=orders/partition=0/orders+0+{50:020d}-{74:020d}.parquet"
    assert moved in left and moved.removeprefix("_superseded/") in left  # copied, not deleted

    ParquetSinkConnector().alter_offsets(config, {("orders", 0): 60})  # the request runs again
    assert s3_parquet_keys(s3_server, base) == Counter(b"%d" % o for o in range(60))
    superseded = sorted(key.rsplit("/", 1)[1] for key in objects(s3_server, base) if key.startswith("_superseded/"))
    assert superseded == [f"orders+0+{50:020d}-{74:020d}.parquet", f"orders+0+{75:020d}-{99:020d}.parquet"]


def test_file_source_reads_objects_line_by_line_and_a_replaced_longer_object_from_its_position(
    s3_server: RunningS3,
) -> None:
    base = prefix()
    s3 = client(s3_server)
    s3.put_object(Bucket=s3_server.bucket, Key=f"{base}/a.jsonl", Body=b'{"n":1}\n{"n":2}\n{"n":3')  # last line unfinished
    s3.put_object(Bucket=s3_server.bucket, Key=f"{base}/sub/b.jsonl", Body=b'{"n":10}\n')
    s3.put_object(Bucket=s3_server.bucket, Key=f"{base}/.hidden.jsonl", Body=b'{"n":99}\n')
    config = {"name": "in", "topic": "t", "path": s3_server.uri(base), "glob": "**/*.jsonl", **s3_keys(s3_server)}
    task = FileSourceTask(FileSourceConnector().task_configs(config, 1)[0])
    first = task.poll_batch({}, 100)
    assert sorted(first.values) == [b'{"n":10}', b'{"n":1}', b'{"n":2}']
    assert first.offsets[partition_key({"filename": "a.jsonl"})] == {"position": 16, "line": 2}
    assert first.offsets[partition_key({"filename": "sub/b.jsonl"})] == {"position": 9, "line": 1}

    # Objects are replaced whole: the longer one is read on from the committed position.
    s3.put_object(Bucket=s3_server.bucket, Key=f"{base}/a.jsonl", Body=b'{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n')
    second = task.poll_batch(first.offsets, 100)
    assert list(second.values) == [b'{"n":3}', b'{"n":4}'] and list(second.keys) == [b"a.jsonl:3", b"a.jsonl:4"]
