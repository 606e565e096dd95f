"""file-sink alone on a real directory: one line per record (text as it is, or a JSON object),
bad values refused by name, files of either format held, and how each format is cut by a
rewind. What it does as parquet-sink does is in test_range_file_sinks.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from range_sink_support import JSON_LINES, TEXT, TOPIC, batch, big_batches, files, lines, local_dir, record, records_per_second

from reconciler.connectors.api import ConfigProblem, ConnectorError, OffsetsRefused, SinkRecord, records_to_batch
from reconciler.connectors.checks import check_config
from reconciler.connectors.file_sink import FileSinkConnector, FileSinkTask, UnwritableRecord

S3_KEYS = ["s3.endpoint", "s3.region", "s3.path.style.access", "s3.access.key.id", "s3.secret.access.key"]
STORE_KEYS = [*S3_KEYS, "gcs.endpoint", "gcs.anonymous", "azblob.endpoint", "azblob.account.key", "azblob.sas.token"]
STORE_DEFAULTS = [*((key, None) for key in S3_KEYS), ("gcs.endpoint", None), ("gcs.anonymous", False),
                  *((key, None) for key in ("azblob.endpoint", "azblob.account.key", "azblob.sas.token"))]
config, started, write_range = TEXT.config, TEXT.started, TEXT.write_range


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"format": "csv"}, [ConfigProblem("format", "must be one of text, json; got 'csv'")]),
        (
            {"topics": "", "path": "", "format": "xml"},
            [
                ConfigProblem("topics", "is required"),
                ConfigProblem("path", "is required"),
                ConfigProblem("format", "must be one of text, json; got 'xml'"),
            ],
        ),
        ({"topics": "a, b.c,d-e", "format": "json", "flush.records": "10"}, []),
    ],
)
def test_validate_names_every_bad_key(tmp_path: Path, overrides: dict[str, str], expected: list[ConfigProblem]) -> None:
    assert FileSinkConnector().validate(config(tmp_path, **overrides)) == expected


def test_its_keys_are_declared_so_a_typo_is_reported(tmp_path: Path) -> None:
    cls = FileSinkConnector
    assert cls.config_def is not None and list(cls.config_def.keys) == ["topics", "path", "format", "flush.records", *STORE_KEYS]
    assert [(k.name, k.default) for k in cls.config_def.keys.values() if not k.required] == [
        ("format", "text"), ("flush.records", 500_000), *STORE_DEFAULTS]
    typos = config(tmp_path, fromat="json", **{"flush.record": "10"})
    got = [(p.key, p.hint) for p in check_config("file-sink", cls, typos)]
    assert got == [("fromat", "did you mean `format`?"), ("flush.record", "did you mean `flush.records`?")]


def test_flush_records_parses_as_a_java_worker_does(tmp_path: Path) -> None:
    # Python's int() takes `1_000`; Java's Integer.parseInt, and so Connect, does not.
    assert FileSinkConnector().validate(config(tmp_path, **{"flush.records": "1_000"})) == [
        ConfigProblem("flush.records", "must be an integer; got '1_000'")]


def test_a_task_refuses_an_invalid_config_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="`format`: must be one of text, json"):
        FileSinkTask().start(config(tmp_path, format="yaml"))


# --- writing --------------------------------------------------------------------------------


def test_text_keeps_values_as_they_are_and_a_tombstone_is_an_empty_line(tmp_path: Path) -> None:
    task = started(tmp_path)
    raw = [b'{"id": 1}', "naïve ✓ 🎉".encode(), b"tab\there\r", b"", None]
    task.write(records_to_batch([SinkRecord(TOPIC, 0, o, None, v, 0) for o, v in enumerate(raw)]))
    task.pre_commit({(TOPIC, 0): 5}, closing=True)
    assert (local_dir(tmp_path, TOPIC, 0) / files(tmp_path)[0]).read_bytes() == (
        b'{"id": 1}\n' + "naïve ✓ 🎉".encode() + b"\ntab\there\r\n\n\n"
    )


def test_json_writes_each_record_as_an_object_on_its_own_line(tmp_path: Path) -> None:
    task = started(tmp_path, format="json")
    task.write(records_to_batch([
        SinkRecord(TOPIC, 0, 3, None, b"two\nlines \xe2\x9c\x93", 1_700_000_000_003),
        SinkRecord(TOPIC, 0, 5, b"k5", None, 9),
    ]))
    task.pre_commit({(TOPIC, 0): 6}, closing=True)
    assert files(tmp_path) == [JSON_LINES.file(0, (3, 5))]
    assert [json.loads(line) for line in lines(tmp_path)] == [
        {"topic": TOPIC, "partition": 0, "offset": 3, "timestamp": 1_700_000_000_003, "key": None, "value": "two\nlines ✓"},
        {"topic": TOPIC, "partition": 0, "offset": 5, "timestamp": 9, "key": "k5", "value": None},
    ]


@pytest.mark.parametrize(
    ("fmt", "bad", "message"),
    [
        ("text", b"caf\xe9", r"the value of orders-0@12 is not UTF-8 text"),
        ("text", b"two\nlines", r"the value of orders-0@12 holds a newline, so it would not be one line"),
        ("json", b"caf\xe9", r"the value of orders-0@12 is not UTF-8 text"),
    ],
)
def test_a_value_that_is_not_one_line_of_text_fails_naming_the_record(
    tmp_path: Path, fmt: str, bad: bytes, message: str
) -> None:
    task = started(tmp_path, format=fmt)
    task.open([(TOPIC, 0)])
    task.write(batch(range(0, 10)))
    good_then_bad = records_to_batch([record(10), record(11), record(12, bad), record(13)])
    with pytest.raises(UnwritableRecord, match=message) as caught:
        task.write(good_then_bad)
    if b"\n" in bad:
        assert caught.value.hint == "use `format: json`, which escapes it"
    # The runtime fails the task (no commit); nothing of the bad batch was taken, not even its
    # good records before the bad one, so the files end where the last good batch did.
    assert task.pre_commit({(TOPIC, 0): 10}, closing=True) == {(TOPIC, 0): 10}
    assert files(tmp_path) == [(TEXT if fmt == "text" else JSON_LINES).file(0, (0, 9))]
    assert len(lines(tmp_path)) == 10


# --- crashes --------------------------------------------------------------------------------


def test_files_of_the_other_format_count_as_held(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 100)
    task = started(tmp_path, format="json")
    assert task.open([(TOPIC, 0)]) == {(TOPIC, 0): 100}
    task.write(batch(range(50, 120)))  # only 100… are new
    task.pre_commit({(TOPIC, 0): 120}, closing=True)
    assert files(tmp_path) == [TEXT.file(0, (0, 99)), JSON_LINES.file(0, (100, 119))]
    assert [json.loads(line)["offset"] for line in lines(tmp_path)[100:]] == list(range(100, 120))


# --- rewinds (KIP-875 alter / reset) --------------------------------------------------------


def test_json_files_with_offset_gaps_are_cut_by_the_offsets_in_their_lines(tmp_path: Path) -> None:
    task = started(tmp_path, format="json")
    task.write(batch([0, 1, 2, 4, 5, 6, 8, 9]))
    task.pre_commit({(TOPIC, 0): 10}, closing=True)
    FileSinkConnector().alter_offsets(config(tmp_path, format="json"), {(TOPIC, 0): 6})
    assert files(tmp_path) == [JSON_LINES.file(0, (0, 5))]
    assert [json.loads(line)["offset"] for line in lines(tmp_path)] == [0, 1, 2, 4, 5]


def test_a_text_file_with_offset_gaps_is_not_cut_and_nothing_moves(tmp_path: Path) -> None:
    write_range(tmp_path, 0, 50)
    task = started(tmp_path)
    task.write(batch([50, 51, 53, 54], partition=0))  # 52: a transaction marker
    task.pre_commit({(TOPIC, 0): 55}, closing=True)
    before = files(tmp_path)
    message = (
        r"holds 4 records at offsets 50-54 \(the gaps are transaction markers\).*cannot be cut at 53\. "
        r"Rewind this partition to 50 or 55 instead"
    )
    with pytest.raises(OffsetsRefused, match=message):
        # Partition 1 is checked first and could be rewound, but nothing moves for either.
        FileSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 1): 0, (TOPIC, 0): 53})
    assert files(tmp_path) == before
    assert not (tmp_path / "_superseded").exists()
    FileSinkConnector().alter_offsets(config(tmp_path), {(TOPIC, 0): 50})  # a file boundary is fine
    assert files(tmp_path) == [TEXT.file(0, (0, 49))]


# --- speed ----------------------------------------------------------------------------------


def test_text_lines_are_built_without_a_python_object_per_record(tmp_path: Path) -> None:
    """Arrow kernels all the way: well over 1M records/s for 100-byte values."""
    n = 1_000_000
    payload, batches = big_batches(n, 100_000, keys=False)
    rate = records_per_second(started(tmp_path), batches)
    print(f"file-sink: {rate / 1e6:.2f} M records/s")
    assert lines(tmp_path) == payload.to_pylist()
    assert rate > 300_000  # loose floor for a loaded CI machine; the figure is printed
