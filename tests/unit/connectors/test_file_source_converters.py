"""file-source with Connect's converters: each line written as Java's FileStreamSource's STRING
record is by JsonConverter — the envelope byte for byte (the literal below is what Java's
JsonConverter writes for `Schema.STRING_SCHEMA`), the JSON string without schemas — keys too;
StringConverter in its charset; a line that is not UTF-8 is a bad record, named by file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.connectors.checks import check_config
from reconciler.connectors.converters.arrow import decode
from reconciler.connectors.converters.encode import encode
from reconciler.connectors.converters.schema import Schema
from reconciler.connectors.converters.settings import JSON, STRING, Converter
from reconciler.connectors.file_source import BadRecord, FileSourceConnector, FileSourceTask

LINES = ['{"n":1,"s":"é"}', '{"quote":"\\"","tab":"\\t"}', '{"u":"\u2028𝄞"}']
# Java's JsonConverter.fromConnectData(topic, Schema.STRING_SCHEMA, "{\"n\":1}"), as Jackson writes it.
JAVA_ENVELOPE = b'{"schema":{"type":"string","optional":false},"payload":"{\\"n\\":1}"}'


def polled(directory: Path, text: str, **config: str) -> tuple[list[bytes | None], list[bytes | None]]:
    (directory / "a.jsonl").write_text(text, encoding="utf-8")
    task_config = FileSourceConnector().task_configs({"name": "f", "topic": "t", "path": str(directory), **config}, 1)
    batch = FileSourceTask(task_config[0]).poll_batch({}, 100)
    return list(batch.keys), list(batch.values)


def test_json_with_schemas_writes_javas_string_envelope_for_values_and_keys(tmp_path: Path) -> None:
    assert polled(tmp_path, '{"n":1}\n', **{"value.converter": JSON})[1] == [JAVA_ENVELOPE]
    keys, values = polled(tmp_path, "\n".join(LINES) + "\n", **{"value.converter": JSON, "key.converter": JSON})
    assert values == [encode(Converter("json"), Schema("string"), line) for line in LINES]
    assert keys == [encode(Converter("json"), Schema("string"), f"a.jsonl:{n}") for n in (1, 2, 3)]
    decoded = decode(values, Converter("json"))  # what a sink with schemas.enable=true reads back
    assert decoded.failures == [] and decoded.table.column("value").to_pylist() == LINES


def test_json_without_schemas_writes_the_json_string_and_no_converter_the_line(tmp_path: Path) -> None:
    text = "\n".join(LINES) + "\n"
    _, values = polled(tmp_path, text, **{"value.converter": JSON, "value.converter.schemas.enable": "false"})
    assert values == [encode(Converter("json", schemas_enable=False), Schema("string"), line) for line in LINES]
    assert values[0] == b'"{\\"n\\":1,\\"s\\":\\"\xc3\xa9\\"}"'
    plain = polled(tmp_path, text)
    assert plain[1] == [line.encode() for line in LINES]
    assert polled(tmp_path, text, **{"value.converter": STRING}) == plain  # UTF-8: the bytes as they are


def test_csv_rows_are_wrapped_too_and_a_string_converter_recodes(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").unlink(missing_ok=True)
    _, values = polled(tmp_path, "a,b\n1,é\n", format="csv", glob="*.jsonl", **{"value.converter": JSON})
    assert values == [encode(Converter("json"), Schema("string"), '{"a":"1","b":"é"}')]
    _, utf16 = polled(tmp_path, '{"s":"é"}\n', **{"value.converter": STRING,
                                                 "value.converter.converter.encoding": "UTF-16"})
    assert utf16 == [b"\xfe\xff" + '{"s":"é"}'.encode("utf-16-be")]


def test_a_line_that_is_not_utf8_fails_naming_it_or_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b'{"ok":1}\n"\xff"\n')
    config = {"name": "f", "topic": "t", "path": str(tmp_path), "value.converter": JSON}
    task = FileSourceTask(FileSourceConnector().task_configs(config, 1)[0])
    with pytest.raises(BadRecord, match=r"a\.jsonl:2: "):
        task.poll_batch({}, 100)
    tolerant = FileSourceTask(FileSourceConnector().task_configs({**config, "errors.tolerance": "all"}, 1)[0])
    assert len(tolerant.poll_batch({}, 100).values) == 1


def test_validate_accepts_the_converters_and_checks_their_settings(tmp_path: Path) -> None:
    base = {"name": "f", "topic": "t", "path": str(tmp_path), "connector.class": "file-source"}
    both = {**base, "value.converter": JSON, "key.converter": JSON}
    assert check_config("file-source", FileSourceConnector, both) == []
    bad = check_config("file-source", FileSourceConnector, {**both, "value.converter.schemas.enable": "maybe"})
    assert [p.key for p in bad] == ["value.converter.schemas.enable"]
