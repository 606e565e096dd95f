"""file-source on a real directory: each complete line exactly once across simulated runs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from reconciler.connectors.api import (
    ConfigProblem,
    ConnectorError,
    OffsetsRefused,
    PartitionKey,
    SourceOffset,
    partition_key,
)
from reconciler.connectors.file_lines import all_json, check_json, csv_rows, read_complete_lines
from reconciler.connectors.file_source import BadRecord, FileSourceConnector, FileSourceTask, owner_task

Committed = dict[PartitionKey, SourceOffset]
Produced = list[tuple[bytes | None, bytes | None]]


def config(directory: Path, **overrides: str) -> dict[str, str]:
    return {"name": "files", "path": str(directory), "topic": "events", **overrides}


def one_run(
    directory: Path, committed: Committed, tasks: int = 1, max_records: int = 1000, **overrides: str
) -> Produced:
    """One `run --once`: every task polls until it has nothing new; offsets are committed."""
    produced: Produced = []
    for task_config in FileSourceConnector().task_configs(config(directory, **overrides), tasks):
        task = FileSourceTask(task_config)
        while not (batch := task.poll_batch(committed, max_records)).is_empty:
            assert set(batch.topics) <= {"events"}
            produced.extend(zip(batch.keys, batch.values, strict=True))
            committed.update(batch.offsets)
    return produced


def append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(text)


def values(produced: Produced) -> list[object]:
    return [json.loads(v) for _, v in produced if v is not None]


# --- config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        ({"path": ""}, [ConfigProblem("path", "is required")]),
        ({"topic": " "}, [ConfigProblem("topic", "is required")]),
        ({"format": "xml"}, [ConfigProblem("format", "must be one of jsonl, csv; got 'xml'")]),
        ({"batch.size": "0"}, [ConfigProblem("batch.size", "must be at least 1; got 0")]),
        ({"errors.tolerance": "some"}, [ConfigProblem("errors.tolerance", "must be one of none, all; got 'some'")]),
        ({"key": "id"}, [ConfigProblem("key", "must be one of location, none; got 'id'")]),
        ({"glob": "/etc/*"}, [ConfigProblem("glob", "must be relative to `path`, inside it; got '/etc/*'")]),
        ({"glob": "../*"}, [ConfigProblem("glob", "must be relative to `path`, inside it; got '../*'")]),
        ({"format": "csv", "glob": "**/*.csv"}, []),
    ],
)
def test_validate_names_the_bad_key(
    tmp_path: Path, overrides: dict[str, str], expected: list[ConfigProblem]
) -> None:
    assert FileSourceConnector().validate(config(tmp_path, **overrides)) == expected


def test_missing_directory_fails_the_task_with_its_name(tmp_path: Path) -> None:
    with pytest.raises(ConnectorError, match="does not exist"):
        one_run(tmp_path / "absent", {})


# --- reading lines --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "position", "limit", "lines", "end"),
    [
        (b"a\nbb\nccc", 0, 10, [b"a", b"bb"], 5),
        (b"a\nbb\nccc\n", 2, 10, [b"bb", b"ccc"], 9),
        (b"a\nbb\nccc\n", 0, 1, [b"a"], 2),
        (b"partial", 0, 10, [], 0),
        (b"", 0, 10, [], 0),
        (b"\n\n", 0, 10, [b"", b""], 2),
    ],
)
def test_read_complete_lines(
    tmp_path: Path, content: bytes, position: int, limit: int, lines: list[bytes], end: int
) -> None:
    path = tmp_path / "f"
    path.write_bytes(content)
    with path.open("rb") as handle:
        assert read_complete_lines(handle, position, limit) == (lines, end)


def test_read_complete_lines_across_chunk_boundaries(tmp_path: Path) -> None:
    path = tmp_path / "big"
    lines = [b"x" * (i % 5000) for i in range(3000)]  # ~7.5 MB: several 1 MiB chunks
    path.write_bytes(b"\n".join(lines) + b"\n")
    handle = path.open("rb")
    read, end = read_complete_lines(handle, 0, 10_000)
    assert read == lines and end == path.stat().st_size
    head, middle = read_complete_lines(handle, 0, 1234)
    rest, end2 = read_complete_lines(handle, middle, 10_000)
    handle.close()
    assert head + rest == lines and end2 == end


# --- exactly once across runs ---------------------------------------------------------------


def test_appended_lines_and_new_files_are_produced_exactly_once(tmp_path: Path) -> None:
    committed: Committed = {}
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":2}\n')
    assert values(one_run(tmp_path, committed)) == [{"n": 1}, {"n": 2}]
    assert one_run(tmp_path, committed) == []

    append(tmp_path / "a.jsonl", '{"n":3}\n')
    append(tmp_path / "b.jsonl", '{"n":4}\n')
    assert values(one_run(tmp_path, committed)) == [{"n": 3}, {"n": 4}]
    assert one_run(tmp_path, committed) == []
    assert committed == {
        partition_key({"filename": "a.jsonl"}): {"position": 24, "line": 3},
        partition_key({"filename": "b.jsonl"}): {"position": 8, "line": 1},
    }


def test_a_partial_last_line_waits_for_its_newline(tmp_path: Path) -> None:
    committed: Committed = {}
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":')
    assert values(one_run(tmp_path, committed)) == [{"n": 1}]
    assert one_run(tmp_path, committed) == []
    append(tmp_path / "a.jsonl", '2}\n{"n":3')
    assert values(one_run(tmp_path, committed)) == [{"n": 2}]
    append(tmp_path / "a.jsonl", "}\n")
    assert values(one_run(tmp_path, committed)) == [{"n": 3}]


def test_keys_name_file_and_line_or_are_absent(tmp_path: Path) -> None:
    append(tmp_path / "a.jsonl", '{"n":1}\n\n{"n":2}\n')
    assert [k for k, _ in one_run(tmp_path, {})] == [b"a.jsonl:1", b"a.jsonl:3"]
    assert [k for k, _ in one_run(tmp_path, {}, key="none")] == [None, None]


def test_same_committed_offsets_give_the_same_batch_after_a_crash(tmp_path: Path) -> None:
    for name in ("a.jsonl", "b.jsonl", "c.jsonl"):
        append(tmp_path / name, "".join(f'{{"f":"{name}","n":{i}}}\n' for i in range(50)))
    [task_config] = FileSourceConnector().task_configs(config(tmp_path), 1)
    committed: Committed = {partition_key({"filename": "a.jsonl"}): {"position": 0, "line": 0}}
    first = FileSourceTask(task_config).poll_batch(committed, 70)
    # The runtime crashed before committing: a new task instance polls from the same offsets.
    again = FileSourceTask(task_config).poll_batch(dict(committed), 70)
    assert first == again and len(first) == 70
    b_lines = (tmp_path / "b.jsonl").read_bytes().splitlines(keepends=True)
    assert first.offsets == {
        partition_key({"filename": "a.jsonl"}): {"position": (tmp_path / "a.jsonl").stat().st_size, "line": 50},
        partition_key({"filename": "b.jsonl"}): {"position": len(b"".join(b_lines[:20])), "line": 20},
    }


@pytest.mark.parametrize("tasks", [1, 2, 3, 5])
def test_tasks_share_files_and_together_read_everything_once(tmp_path: Path, tasks: int) -> None:
    expected = []
    for f in range(12):
        append(tmp_path / f"f{f:02d}.jsonl", "".join(f'{{"f":{f},"n":{n}}}\n' for n in range(7)))
        expected += [{"f": f, "n": n} for n in range(7)]
    committed: Committed = {}
    produced = values(one_run(tmp_path, committed, tasks=tasks, max_records=5))
    assert sorted(produced, key=lambda v: (v["f"], v["n"])) == expected  # type: ignore[index]
    assert one_run(tmp_path, committed, tasks=tasks) == []


def test_a_file_belongs_to_one_task_by_a_stable_hash() -> None:
    assert owner_task("a.jsonl", 4) == owner_task("a.jsonl", 4) == 0  # crc32, not hash()
    assert owner_task("b.jsonl", 4) == 1
    assert {owner_task(f"f{i}.jsonl", 3) for i in range(30)} == {0, 1, 2}


def test_glob_subdirectories_and_hidden_files(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / ".hidden").mkdir()
    append(tmp_path / "top.jsonl", '{"n":1}\n')
    append(tmp_path / "sub" / "deep.jsonl", '{"n":2}\n')
    append(tmp_path / ".hidden" / "x.jsonl", '{"n":3}\n')
    append(tmp_path / ".swap.jsonl", '{"n":4}\n')
    append(tmp_path / "notes.txt", "not json\n")
    committed: Committed = {}
    assert values(one_run(tmp_path, committed, glob="**/*.jsonl")) == [{"n": 2}, {"n": 1}]
    assert partition_key({"filename": "sub/deep.jsonl"}) in committed


def test_a_file_shorter_than_its_offset_fails_the_task(tmp_path: Path) -> None:
    committed: Committed = {}
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":2}\n')
    one_run(tmp_path, committed)
    (tmp_path / "a.jsonl").write_text('{"n":9}\n')
    with pytest.raises(ConnectorError, match="a.jsonl is shorter .* truncated or replaced"):
        one_run(tmp_path, committed)


# --- jsonl and csv values -------------------------------------------------------------------


def test_invalid_json_fails_with_file_and_line(tmp_path: Path) -> None:
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":\n')
    with pytest.raises(BadRecord, match=r"^a.jsonl:2: invalid JSON"):
        one_run(tmp_path, {})


@pytest.mark.parametrize("line", [b'{"n":1}', b' [1, 2] ', b'"\\u00e9"', b"-0", b'{"a":1,"a":2}', b"1e999",
                                  b'{"x":NaN}', b"Infinity", b'\xef\xbb\xbf{"bom":1}', b'"\\ud800"'])
def test_a_line_is_json_as_json_loads_judges_it_also_beyond_rfc_8259(line: bytes) -> None:
    json.loads(line)  # what file-source always took, NaN, a BOM and a lone surrogate's escape included
    check_json(line)


@pytest.mark.parametrize(("line", "why"), [(b'{"n":', "Expecting value"), (b"1 2", "Extra data"),
                                           (b'{"a":"\xff"}', "can't decode"), (b'"a\tb"', "Invalid control"),
                                           (b"[" * 5000 + b"]" * 5000, "nested too deeply")])
def test_a_line_that_is_not_json_is_refused_with_json_loads_reason(line: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        check_json(line)


@pytest.mark.parametrize(("lines", "fast"), [
    ([b'{"n":1}', b"[2]", b'"\xc3\xa9"'], True),
    ([b'{"n":1}', b'{"n":2}\r'], False),  # a \r to drop
    ([b'{"n":1}', b""], False),  # a blank line to skip
    ([b'{"n":1}', b"  "], False),
    ([b'{"n":NaN}'], False),  # json.loads's to judge
    ([b'{"a":"\xff"}'], False),  # not UTF-8
    ([b"1,2"], False),  # not one value
])
def test_a_batch_is_taken_whole_only_when_every_line_is_one_json_value_as_it_is(lines: list[bytes], fast: bool) -> None:
    assert all_json(lines) is fast


def test_the_whole_batch_and_the_per_line_way_take_the_same_lines(tmp_path: Path) -> None:
    (tmp_path / "fast.jsonl").write_bytes(b'{"n":1}\n[2]\n"x"\n')
    (tmp_path / "slow.jsonl").write_bytes(b'{"n":1}\r\n\n[2]\n{"x":NaN}\n')
    produced = one_run(tmp_path, {})
    assert produced == [(b"fast.jsonl:1", b'{"n":1}'), (b"fast.jsonl:2", b"[2]"), (b"fast.jsonl:3", b'"x"'),
                        (b"slow.jsonl:1", b'{"n":1}'), (b"slow.jsonl:3", b"[2]"), (b"slow.jsonl:4", b'{"x":NaN}')]


@pytest.mark.parametrize(("lines", "rows"), [
    ([b'1,"a, b"', b"2,\xc3\xa9"], [["1", "a, b"], ["2", "\u00e9"]]),
    ([b"1,a", b""], None),  # a blank line to skip
    ([b"1,a\r"], None),  # a \r to drop
    ([b"1,a,x"], None),  # another width: the per-line way names file:line
    ([b'1,"a', b'b",2'], None),  # a quoted field running into the next line
    ([b"1,\xff"], None),  # not UTF-8
])
def test_csv_lines_are_read_at_once_only_as_the_per_line_way_reads_them(lines: list[bytes],
                                                                      rows: list[list[str]] | None) -> None:
    assert csv_rows(lines, 2) == rows


def test_csv_values_are_json_dumps_of_the_row_whichever_way_the_batch_goes(tmp_path: Path) -> None:
    text = 'id,note\n1,"a, \\ ""q"" \u00e9 \u2028"\n2,\x01x\n'
    (tmp_path / "fast.csv").write_text(text)
    (tmp_path / "slow.csv").write_text(text + "\n3,z\n")  # a blank line: the per-line way
    produced = one_run(tmp_path, {}, format="csv")
    rows = [{"id": "1", "note": 'a, \\ "q" \u00e9 \u2028'}, {"id": "2", "note": "\x01x"}]
    expected = [json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode() for row in rows]
    assert [v for _, v in produced] == expected + expected + [b'{"id":"3","note":"z"}']


def test_invalid_json_is_skipped_when_errors_are_tolerated(tmp_path: Path) -> None:
    append(tmp_path / "a.jsonl", '{"n":1}\nnope\n[2]\n')
    committed: Committed = {}
    produced = one_run(tmp_path, committed, 1, 1000, **{"errors.tolerance": "all"})
    assert values(produced) == [{"n": 1}, [2]]
    assert [k for k, _ in produced] == [b"a.jsonl:1", b"a.jsonl:3"]
    assert committed[partition_key({"filename": "a.jsonl"})] == {"position": 17, "line": 3}


def test_jsonl_values_are_the_line_bytes_without_line_endings(tmp_path: Path) -> None:
    (tmp_path / "w.jsonl").write_bytes(b'{"a": "\xc3\xa9"}\r\n{"b":2}\n')
    assert [v for _, v in one_run(tmp_path, {})] == [b'{"a": "\xc3\xa9"}', b'{"b":2}']


def test_csv_rows_become_json_objects_and_the_header_is_not_a_record(tmp_path: Path) -> None:
    committed: Committed = {}
    append(tmp_path / "p.csv", 'id,name,note\n1,ann,"a, b"\n2,bob,\n')
    produced = one_run(tmp_path, committed, format="csv")
    assert values(produced) == [
        {"id": "1", "name": "ann", "note": "a, b"},
        {"id": "2", "name": "bob", "note": ""},
    ]
    assert [k for k, _ in produced] == [b"p.csv:2", b"p.csv:3"]
    append(tmp_path / "p.csv", "3,cy,é\n")
    assert values(one_run(tmp_path, committed, format="csv")) == [{"id": "3", "name": "cy", "note": "é"}]


def test_csv_header_still_being_written_produces_nothing(tmp_path: Path) -> None:
    committed: Committed = {}
    append(tmp_path / "p.csv", "id,na")
    assert one_run(tmp_path, committed, format="csv") == [] and committed == {}
    append(tmp_path / "p.csv", "me\n1,x\n")
    assert values(one_run(tmp_path, committed, format="csv")) == [{"id": "1", "name": "x"}]


def test_csv_row_with_the_wrong_field_count_names_file_and_line(tmp_path: Path) -> None:
    append(tmp_path / "p.csv", "a,b\n1,2\n1,2,3\n")
    with pytest.raises(BadRecord, match=r"^p.csv:3: 3 CSV fields, but the header has 2"):
        one_run(tmp_path, {}, format="csv")


# --- offsets requests -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ({"kafka_topic": "events", "kafka_partition": 0}, {"kafka_offset": 8},
         "Partition objects should contain the key 'filename' and no other; "
         'got {"kafka_partition": 0, "kafka_topic": "events"}'),
        ({"filename": "a.jsonl", "task": 0}, {"position": 8}, "contain the key 'filename' and no other"),
        ({"filename": 7}, {"position": 8}, "The value for the 'filename' key in the partition should be a file's path"),
        ({"filename": ""}, {"position": 8}, "relative to the connector's 'path'"),
        ({"filename": "/in/a.jsonl"}, {"position": 8}, 'no hidden names; got "/in/a.jsonl"'),
        ({"filename": "./a.jsonl"}, {"position": 8}, "no leading '/', no '.' or '..' parts"),
        ({"filename": "../a.jsonl"}, {"position": 8}, "no '.' or '..' parts"),
        ({"filename": "d/.a.jsonl"}, {"position": 8}, "no hidden names"),
        ({"filename": "a.jsonl"}, {"line": 1}, "Offset objects should either be null or contain the key 'position'"),
        ({"filename": "a.jsonl"}, {"position": "8"}, "The value for the 'position' key in the offset is expected to be a Long value"),
        ({"filename": "a.jsonl"}, {"position": -8, "line": 1}, "The value for the 'position' key in the offset should be a non-negative value"),
        ({"filename": "a.jsonl"}, {"position": 8, "line": -1}, "The value for the 'line' key in the offset should be a non-negative"),
        ({"filename": "a.jsonl"}, {"position": 8, "line": "1"}, "'line' key in the offset should be a non-negative Long"),
    ],
)
def test_validate_offsets_refuses_what_no_task_would_read(
    tmp_path: Path, partition: dict[str, object], offset: SourceOffset, message: str
) -> None:
    with pytest.raises(OffsetsRefused, match=re.escape(message)):
        FileSourceConnector().validate_offsets(config(tmp_path), {partition_key(partition): offset})


def test_validate_offsets_reads_no_file_and_accepts_any_tombstone(tmp_path: Path) -> None:
    offsets: dict[PartitionKey, SourceOffset | None] = {
        partition_key({"filename": "d/a.jsonl"}): {"position": 3},  # no such file here: not judged yet
        partition_key({"filename": "a.jsonl"}): {"position": 3, "line": 1, "note": "x"},
        partition_key({"file": "/in/a.txt"}): None,  # removes a stray offset, as Connect allows
    }
    FileSourceConnector().validate_offsets(config(tmp_path / "elsewhere", glob="**/*.jsonl"), offsets)


@pytest.mark.parametrize(
    ("pattern", "filename", "listed"),
    [
        ("*", "a.jsonl", True),
        ("*", "d/a.jsonl", False),  # `*` lists the top level only
        ("*.jsonl", "a.JSONL", False),  # case matters, as on the file system the tasks list
        ("**/*.jsonl", "a.jsonl", True),  # `**` is zero or more directories
        ("**/*.jsonl", "d/e/a.jsonl", True),
        ("d/*.csv", "d/a.csv", True),
        ("d/*.csv", "e/a.csv", False),
        ("d/**", "e/a.csv", True),  # ends in `**`: not judged
        ("[ab].txt", "b.txt", True),
    ],
)
def test_glob_matches_what_list_files_lists(tmp_path: Path, pattern: str, filename: str, listed: bool) -> None:
    from reconciler.connectors.file_source import glob_matches, list_files
    from reconciler.connectors.storage import open_store

    assert glob_matches(pattern, filename) is listed
    if not pattern.endswith("**"):
        target = tmp_path / filename
        target.parent.mkdir(parents=True, exist_ok=True)
        target.touch()
        assert (filename in list_files(open_store(str(tmp_path), {}), pattern)) is listed  # the same answer as the file system's


def test_validate_offsets_refuses_a_file_the_glob_never_lists(tmp_path: Path) -> None:
    offsets: dict[PartitionKey, SourceOffset | None] = {partition_key({"filename": "d/a.jsonl"}): {"position": 3}}
    message = "The connector's 'glob' (*.jsonl) does not match \"d/a.jsonl\": its tasks never read that file"
    with pytest.raises(OffsetsRefused, match=re.escape(message)):
        FileSourceConnector().validate_offsets(config(tmp_path, glob="*.jsonl"), offsets)


@pytest.mark.parametrize(
    ("offsets", "message"),
    [
        ({'{"filename":"a.jsonl"}': {"position": 3, "line": 1}}, "position 3 in a.jsonl is not the start of a line"),
        ({'{"filename":"a.jsonl"}': {"position": 99, "line": 9}}, "position 99 in a.jsonl is not the start"),
    ],
)
def test_alter_offsets_refuses_a_position_inside_a_line(
    tmp_path: Path, offsets: dict[PartitionKey, SourceOffset | None], message: str
) -> None:
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":2}\n')
    with pytest.raises(OffsetsRefused, match=message):
        FileSourceConnector().alter_offsets(config(tmp_path), offsets)


def test_altered_offsets_are_accepted_and_replay_from_there(tmp_path: Path) -> None:
    append(tmp_path / "a.jsonl", '{"n":1}\n{"n":2}\n')
    rewind = {partition_key({"filename": "a.jsonl"}): {"position": 8, "line": 1}}
    unknown = {partition_key({"filename": "later.jsonl"}): {"position": 5, "line": 1}}
    assert FileSourceConnector().alter_offsets(config(tmp_path), {**rewind, **unknown}) is True  # as Java's
    produced = one_run(tmp_path, dict(rewind))
    assert values(produced) == [{"n": 2}] and produced[0][0] == b"a.jsonl:2"
