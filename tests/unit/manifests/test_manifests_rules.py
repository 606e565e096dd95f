"""Each validation rule, table-driven: YAML text → the exact `line:col: path: message (hint: …)` lines."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from reconciler.manifests import load_manifests

HEAD = """\
apiVersion: reconciler.io/v1
kind: Connector
metadata:
  name: c1
"""
# Every document's config is checked against its plugin, whatever else is wrong with it: the
# cases below give datagen the keys it requires (after the lines they test, so positions hold).
CONFIG = "  config: {topic: t, count: 1}\n"


def problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    file = tmp_path / "m.yaml"
    file.write_text(textwrap.dedent(text))
    result = load_manifests([file], env={} if env is None else env)
    prefix = f"{file}:"
    lines = [d.render() for d in result.diagnostics]
    assert all(line.startswith(prefix) for line in lines), lines
    assert not (result.connectors and lines), "a document with problems must not yield a connector"
    return [line.removeprefix(prefix) for line in lines]


CASES: list[tuple[str, str, list[str]]] = [
    (
        "valid",
        HEAD + "spec:\n  class: datagen\n  config: {topic: t, count: 1}\n",
        [],
    ),
    (
        "yaml syntax error",
        HEAD + "spec:\n  class: datagen\n  config: {a: 1\n",
        ["8:1: YAML syntax error: did not find expected ',' or '}' (hint: while parsing a flow mapping on line 7, column 11)"],
    ),
    (
        "tab indentation",
        HEAD + "spec:\n\tclass: datagen\n",
        [
            "6:1: YAML syntax error: found character that cannot start any token"
            " (hint: a tab? YAML indents with spaces only; while scanning for the next token on line 6, column 1)"
        ],
    ),
    (
        "unknown field, misspelt",
        HEAD + "spec:\n  class: datagen\n  tasksmax: 2\n" + CONFIG,
        ["7:3: spec.tasksmax: unknown field (hint: did you mean `tasksMax`?)"],
    ),
    (
        "unknown field, Connect's name for it",
        HEAD + "spec:\n  class: datagen\n  tasks.max: 2\n" + CONFIG,
        ['7:3: spec["tasks.max"]: unknown field (hint: use `tasksMax` instead)'],
    ),
    (
        "unknown field, a connector setting outside config",
        HEAD + "spec:\n  class: datagen\n  kafka.topic: t\n" + CONFIG,
        ['7:3: spec["kafka.topic"]: unknown field (hint: connector settings go under `spec.config`)'],
    ),
    (
        "unknown top-level field",
        HEAD + "spec:\n  class: datagen\n" + CONFIG + "config: {}\n",
        ["8:1: config: unknown field (hint: connector settings go under `spec.config`)"],
    ),
    (
        "unknown field without a close match lists the allowed ones",
        HEAD + "  colour: blue\nspec:\n  class: datagen\n" + CONFIG,
        ["5:3: metadata.colour: unknown field (hint: allowed fields: labels, name)"],
    ),
    (
        "wrong type",
        HEAD + "spec:\n  class: datagen\n  tasksMax: two\n" + CONFIG,
        ["7:13: spec.tasksMax: expected an integer, got a string ('two')"],
    ),
    (
        "quoted number where an integer is expected",
        HEAD + "spec:\n  class: datagen\n  tasksMax: '2'\n" + CONFIG,
        ["7:13: spec.tasksMax: expected an integer, got a string ('2') (hint: remove the quotes)"],
    ),
    (
        "float where an integer is expected (pydantic is stricter than JSON Schema here)",
        HEAD + "spec:\n  class: datagen\n  tasksMax: 2.5\n" + CONFIG,
        ["7:13: spec.tasksMax: expected an integer, got a number (2.5)"],
    ),
    (
        "number where a string is expected",
        "apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: 42\nspec:\n  class: datagen\n" + CONFIG,
        ["4:9: metadata.name: expected a string, got an integer (42) (hint: quote the value to make it a string)"],
    ),
    (
        "bad state value",
        HEAD + "spec:\n  class: datagen\n  state: sleeping\n" + CONFIG,
        ["7:10: spec.state: invalid value 'sleeping' (hint: one of running, paused, stopped)"],
    ),
    (
        "state in Connect's upper case",
        HEAD + "spec:\n  class: datagen\n  state: PAUSED\n" + CONFIG,
        ["7:10: spec.state: invalid value 'PAUSED' (hint: did you mean `paused`? It is one of running, paused, stopped)"],
    ),
    (
        "tasksMax below 1",
        HEAD + "spec:\n  class: datagen\n  tasksMax: 0\n" + CONFIG,
        ["7:13: spec.tasksMax: must be at least 1, got 0"],
    ),
    (
        "missing required field points at the parent",
        HEAD + "spec:\n  tasksMax: 1\n",
        [
            "5:1: spec.class: required field is missing"
            " (hint: a registered connector name (e.g. parquet-sink) or a 'module:Class' path)"
        ],
    ),
    (
        "null where a mapping is expected",
        HEAD + "spec:\n",
        ["5:6: spec: expected a mapping, got null"],
    ),
    (
        "missing spec",
        HEAD,
        ["1:1: spec: required field is missing"],
    ),
    (
        "restart without id",
        HEAD + "spec:\n  class: datagen\n  restart: {includeTasks: true}\n" + CONFIG,
        [
            "7:3: spec.restart.id: required field is missing"
            " (hint: restart, offsets and topics reset requests run once per `id`; give each new request a new id)"
        ],
    ),
    (
        "offsets without id",
        HEAD + "spec:\n  class: datagen\n  offsets:\n    action: reset\n" + CONFIG,
        [
            "7:3: spec.offsets.id: required field is missing"
            " (hint: restart, offsets and topics reset requests run once per `id`; give each new request a new id)"
        ],
    ),
    (
        "request id with whitespace",
        HEAD + "spec:\n  class: datagen\n  restart: {id: two words}\n" + CONFIG,
        ["7:17: spec.restart.id: invalid request id 'two words': it must not contain whitespace"],
    ),
    (
        "unquoted date as a request id stays text",
        HEAD + "spec:\n  class: datagen\n  config: {topic: t, count: 1}\n  restart: {id: 2026-11-22}\n",
        [],
    ),
    (
        "restart that is not a mapping",
        HEAD + "spec:\n  class: datagen\n  restart: yes\n" + CONFIG,
        ["7:12: spec.restart: expected a mapping or null, got a boolean (true)"],
    ),
    (
        "boolean as text",
        HEAD + "spec:\n  class: datagen\n  restart: {id: r1, onlyFailed: 'true'}\n" + CONFIG,
        [
            "7:33: spec.restart.onlyFailed: expected a boolean, got a string ('true')"
            " (hint: write true or false without quotes)"
        ],
    ),
    (
        "alter without offsets",
        HEAD + "spec:\n  class: datagen\n  offsets: {id: o1, action: alter}\n" + CONFIG,
        [
            "7:3: spec.offsets.offsets: Partitions / offsets need to be provided for an alter offsets request"
            " (hint: list the partitions to change)"
        ],
    ),
    (
        "reset with offsets",
        HEAD
        + "spec:\n  class: datagen\n  offsets:\n    id: o1\n    action: reset\n"
        + "    offsets: [{partition: {f: a}, offset: null}]\n"
        + CONFIG,
        [
            "10:14: spec.offsets.offsets: a reset request takes no `offsets` list (it resets every partition)"
            " (hint: use `action: alter` to set offsets)"
        ],
    ),
    (
        "bad offsets action",
        HEAD + "spec:\n  class: datagen\n  offsets: {id: o1, action: rewind}\n" + CONFIG,
        ["7:29: spec.offsets.action: invalid value 'rewind' (hint: one of alter, reset)"],
    ),
    (
        "offsets entry without offset",
        HEAD + "spec:\n  class: datagen\n  offsets:\n    id: o1\n    action: alter\n    offsets:\n"
        + "      - partition: {file: a}\n"
        + CONFIG,
        [
            "11:9: spec.offsets.offsets[0].offset: required field is missing"
            " (hint: use `offset: null` to delete the partition's offset)"
        ],
    ),
    (
        "sink partition missing kafka_partition",
        HEAD + "spec:\n  class: parquet-sink\n  config: {topics: t, path: /p}\n  offsets:\n    id: o1\n    action: alter\n"
        + "    offsets:\n      - partition: {kafka_topic: t}\n        offset: {kafka_offset: 1}\n",
        [
            "12:20: spec.offsets.offsets[0].partition: The partition for a sink connector offset must contain"
            " the keys 'kafka_topic' and 'kafka_partition' (hint: e.g. {kafka_topic: orders, kafka_partition: 0})"
        ],
    ),
    (
        "sink offset not an integer (topics.regex makes a Java class's connector a sink)",
        HEAD + "spec:\n  class: com.example.Archiver\n  config: {topics.regex: t.*}\n  offsets:\n    id: o1\n"
        + "    action: alter\n    offsets:\n      - partition: {kafka_topic: t, kafka_partition: 0}\n"
        + "        offset: {kafka_offset: 1.5}\n",
        [
            "13:32: spec.offsets.offsets[0].offset.kafka_offset: Failed to parse the following Kafka offset value"
            " in the provided offsets: '1.5'. Offset values for sink connectors need to be integers."
        ],
    ),
    (
        "source partition with a nested map",
        HEAD + "spec:\n  class: file-source\n  offsets:\n    id: o1\n    action: alter\n    offsets:\n"
        + "      - partition: {file: {path: a}}\n        offset: null\n"
        + "  config: {path: /a, topic: t}\n",
        [
            "11:27: spec.offsets.offsets[0].partition.file: Offsets may only contain primitive types as values,"
            " but field file contains MAP (hint: use a string, number, boolean or null)"
        ],
    ),
    (
        "bookkeeping keys in config point at each key",
        HEAD + "spec:\n  class: datagen\n  config:\n    name: other\n    tasks.max: 3\n    topic: t\n    count: 1\n",
        [
            "8:5: spec.config.name: `name` is derived from `metadata.name`; remove it from spec.config"
            " (hint: set `metadata.name` instead)",
            '9:5: spec.config["tasks.max"]: `tasks.max` is derived from `spec.tasksMax`; remove it from spec.config'
            " (hint: set `spec.tasksMax` instead)",
        ],
    ),
    (
        "nested config value",
        HEAD + "spec:\n  class: datagen\n  config:\n    a.b: [1, 2]\n    topic: t\n    count: 1\n",
        [
            '8:10: spec.config["a.b"]: expected a string, a number, a boolean or null, got a list'
            " (hint: Connect configs are flat: write the value as one string, e.g. comma-separated)"
        ],
    ),
    (
        "wrong apiVersion",
        "apiVersion: v1\nkind: Connector\nmetadata: {name: c1}\nspec: {class: datagen, config: {topic: t, count: 1}}\n",
        ["1:13: apiVersion: unsupported apiVersion 'v1' (hint: use `apiVersion: reconciler.io/v1`)"],
    ),
    (
        "wrong kind",
        "apiVersion: reconciler.io/v1\nkind: KafkaConnector\nmetadata: {name: c1}\nspec: {class: datagen, config: {topic: t, count: 1}}\n",
        ["2:7: kind: unsupported kind 'KafkaConnector' (hint: use `kind: Connector`)"],
    ),
    (
        "invalid connector name",
        "apiVersion: reconciler.io/v1\nkind: Connector\nmetadata: {name: a/b}\nspec: {class: datagen, config: {topic: t, count: 1}}\n",
        [
            "3:18: metadata.name: invalid connector name 'a/b' (hint: use letters, digits, '.', '_' and '-',"
            " starting with a letter or digit, at most 249 characters)"
        ],
    ),
    (
        "labels must be strings",
        HEAD + "  labels: {tier: 1}\nspec:\n  class: datagen\n" + CONFIG,
        ["5:18: metadata.labels.tier: expected a string, got an integer (1) (hint: quote the value to make it a string)"],
    ),
    (
        "not a mapping",
        "- a\n- b\n",
        [
            "1:1: expected a Connector manifest (a mapping), got a list"
            " (hint: each YAML document must start with `apiVersion: reconciler.io/v1` and `kind: Connector`)"
        ],
    ),
    (
        "explicit null document",
        "null\n",
        [
            "1:1: expected a Connector manifest (a mapping), got null"
            " (hint: each YAML document must start with `apiVersion: reconciler.io/v1` and `kind: Connector`)"
        ],
    ),
    (
        "empty file",
        "",
        ["1:1: empty file: no manifest in it (hint: add a Connector manifest or delete the file)"],
    ),
    (
        "only comments and empty documents",
        "# nothing here\n---\n---\n",
        ["1:1: empty file: no manifest in it (hint: add a Connector manifest or delete the file)"],
    ),
    (
        "duplicate key",
        HEAD + "spec:\n  class: datagen\n  class: other\n",
        ["7:3: spec.class: duplicate key `class` (first defined on line 6) (hint: remove one of them)"],
    ),
    (
        "merge keys are allowed and may be overridden",
        HEAD + "spec:\n  class: datagen\n  config:\n    <<: {topic: '1', count: '2'}\n    count: '3'\n",
        [],
    ),
    (
        "unsupported tag",
        HEAD + "spec:\n  class: !!python/name:os.system datagen\n",
        [
            "6:10: spec.class: unsupported YAML tag tag:yaml.org,2002:python/name:os.system"
            " (hint: remove the tag; manifests hold plain YAML values)"
        ],
    ),
    (
        "recursive alias",
        HEAD + "spec:\n  class: datagen\n  sensitive: &a [*a]\n",
        ["7:14: spec.sensitive: recursive YAML alias: a node cannot contain itself"],
    ),
    (
        "several problems in one document are all reported",
        HEAD + "spec:\n  class: ''\n  tasksMax: 0\n  state: gone\n  extra: 1\n",
        [
            "6:10: spec.class: must not be empty",
            "7:13: spec.tasksMax: must be at least 1, got 0",
            "8:10: spec.state: invalid value 'gone' (hint: one of running, paused, stopped)",
            "9:3: spec.extra: unknown field (hint: allowed fields: autoRestart, class, config, offsets, restart, sensitive, state, tasksMax, topicsReset)",
        ],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(tmp_path: Path, text: str, expected: list[str]) -> None:
    assert problems(tmp_path, text) == expected


def test_problems_in_several_documents_are_all_reported(tmp_path: Path) -> None:
    text = HEAD + "spec: {class: datagen, tasksMax: 0, config: {topic: t, count: 1}}\n---\n" + HEAD.replace("c1", "c2") + "spec: {class: ''}\n"
    assert problems(tmp_path, text) == [
        "5:34: spec.tasksMax: must be at least 1, got 0",
        "11:15: spec.class: must not be empty",
    ]


def test_documents_before_a_syntax_error_are_still_checked(tmp_path: Path) -> None:
    text = HEAD + "spec: {class: datagen, tasksMax: 0, config: {topic: t, count: 1}}\n---\nkey: [unclosed\n"
    assert problems(tmp_path, text) == [
        "5:34: spec.tasksMax: must be at least 1, got 0",
        "8:1: YAML syntax error: did not find expected ',' or ']'"
        " (hint: while parsing a flow sequence on line 7, column 6)",
    ]


def test_documents_after_a_syntax_error_are_still_checked(tmp_path: Path) -> None:
    """Reading goes on at the next `---` line (no YAML content can hold one at a line's start,
    so it starts a document whatever came before), one with a comment after it too."""
    broken = HEAD + "spec:\n  class: datagen\n  config: {topic: t, count: [1, 2\n"
    second = HEAD.replace("c1", "c2") + "spec: {class: datagen, tasksMax: -1, config: {topic: t, count: 1}}\n"
    third = HEAD.replace("c1", "c3") + "spec: {class: ''}\n"
    assert problems(tmp_path, broken + "---\n" + second + "--- # a comment\n" + third) == [
        "8:1: YAML syntax error: did not find expected ',' or ']' (hint: while parsing a flow sequence on line 7, column 29)",
        "13:34: spec.tasksMax: must be at least 1, got -1",
        "19:15: spec.class: must not be empty",
    ]
    # Two broken documents in a row: each is reported, and the one after them still checked.
    assert problems(tmp_path, broken + "---\n" + broken.replace("c1", "c2") + "---\n" + third) == [
        "8:1: YAML syntax error: did not find expected ',' or ']' (hint: while parsing a flow sequence on line 7, column 29)",
        "16:1: YAML syntax error: did not find expected ',' or ']' (hint: while parsing a flow sequence on line 15, column 29)",
        "21:15: spec.class: must not be empty",
    ]


def test_missing_env_variable_points_at_the_value(tmp_path: Path) -> None:
    text = HEAD + "spec:\n  class: datagen\n  config:\n    db.password: ${env:NOPE_PW}\n    b: x${env:NOPE_B}y\n    topic: t\n    count: 1\n"
    assert problems(tmp_path, text) == [
        '8:18: spec.config["db.password"]: environment variable `NOPE_PW` is not set'
        " (hint: export NOPE_PW=… before running the reconciler)",
        "9:8: spec.config.b: environment variable `NOPE_B` is not set (hint: export NOPE_B=… before running the reconciler)",
    ]


def test_env_provider_with_a_path_is_refused(tmp_path: Path) -> None:
    text = HEAD + "spec:\n  class: datagen\n  config:\n    pw: ${env:some/path:PW}\n    topic: t\n    count: 1\n"
    assert problems(tmp_path, text, env={"PW": "x"}) == [
        "8:9: spec.config.pw: `${env:some/path:PW}`: the env provider takes no path (hint: write `${env:PW}`)"
    ]


def test_a_document_with_problems_yields_no_connector_but_others_do(tmp_path: Path) -> None:
    file = tmp_path / "m.yaml"
    file.write_text(HEAD + "spec: {class: datagen, config: {topic: t, count: 1}}\n---\n" + HEAD.replace("c1", "c2") + "spec: {class: ''}\n")
    result = load_manifests([file], env={})
    assert [c.name for c in result.connectors] == ["c1"]
    assert len(result.diagnostics) == 1


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        # JSON Schema calls 2.0 an integer; the strict models do not, and say so the same way.
        ("  tasksMax: 2.0\n", "7:13: spec.tasksMax: expected an integer, got a number (2.0)"),
    ],
)
def test_pydantic_only_problems_read_like_schema_ones(tmp_path: Path, spec: str, expected: str) -> None:
    assert problems(tmp_path, HEAD + "spec:\n  class: datagen\n" + spec + CONFIG) == [expected]


def test_name_with_a_trailing_newline(tmp_path: Path) -> None:
    # Python's `$` matches before a final newline, so only the (Rust-regex) models catch this.
    text = "apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: |\n    abc\nspec: {class: datagen, config: {topic: t, count: 1}}\n"
    assert problems(tmp_path, text) == [
        "4:9: metadata.name: invalid connector name 'abc\\n' (hint: use letters, digits, '.', '_' and '-',"
        " starting with a letter or digit, at most 249 characters)"
    ]
