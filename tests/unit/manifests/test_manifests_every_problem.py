"""Every problem of a manifest in one load: a structural problem hides none of its config's.

Each test is a document with several problems, and the exact `line:col: path: message` lines
expected for it: the structural ones and those the connector's plugin finds, each once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reconciler.core.diagnostics import Severity
from reconciler.manifests import load_manifests

HEAD = "apiVersion: reconciler.io/v1\nkind: Connector\nmetadata:\n  name: c1\n"


def problems(tmp_path: Path, text: str, env: dict[str, str] | None = None) -> list[str]:
    file = tmp_path / "m.yaml"
    file.write_text(text)
    result = load_manifests([file], env={} if env is None else env, cache=False)
    assert not result.connectors
    prefix = f"{file}:"
    lines = [d.render() for d in result.diagnostics]
    assert all(line.startswith(prefix) for line in lines), lines
    return [line.removeprefix(prefix) for line in lines]


def test_a_refused_envelope_still_has_its_config_checked(tmp_path: Path) -> None:
    text = HEAD + (
        "  labels: {team: 7}\n"
        "spec:\n"
        "  class: datagen\n"
        "  tasksMax: two\n"
        "  state: Running\n"
        "  config:\n"
        "    topik: orders\n"
        "    count: abc\n"
    )
    assert problems(tmp_path, text) == [
        "5:18: metadata.labels.team: expected a string, got an integer (7) (hint: quote the value to make it a string)",
        "8:13: spec.tasksMax: expected an integer, got a string ('two')",
        "9:10: spec.state: invalid value 'Running' (hint: did you mean `running`? It is one of running, paused, stopped)",
        "10:3: spec.config.topic: is required",
        "11:5: spec.config.topik: unknown key: neither `datagen` nor Kafka Connect defines it"
        " (hint: did you mean `topic`?)",
        "12:12: spec.config.count: must be an integer; got 'abc'",
    ]


def test_connects_rules_and_placeholders_hide_no_other_config_problem(tmp_path: Path) -> None:
    text = HEAD + (
        "spec:\n"
        "  class: file-sink\n"
        "  config:\n"
        "    topics: orders\n"
        "    path: ${env:NOPE_PATH}\n"
        "    tasks.max: 2\n"
        "    fromat: json\n"
        "    transforms: mask\n"
    )
    assert problems(tmp_path, text) == [
        "9:11: spec.config.path: environment variable `NOPE_PATH` is not set"
        " (hint: export NOPE_PATH=… before running the reconciler)",
        '10:5: spec.config["tasks.max"]: `tasks.max` is derived from `spec.tasksMax`; remove it from spec.config'
        " (hint: set `spec.tasksMax` instead)",
        "11:5: spec.config.fromat: unknown key: neither `file-sink` nor Kafka Connect defines it"
        " (hint: did you mean `format`?)",
        "12:17: spec.config.transforms: is not applied: the reconciler's runtime runs no transformations (SMTs)"
        " on a Python connector's records, so every record would be written unchanged (hint: remove it; filter or"
        " mask the records in the plugin itself, or use a Java connector class: a Java Connect worker runs it, and"
        " applies its transforms)",
    ]


def test_a_value_the_schema_refuses_is_reported_once(tmp_path: Path) -> None:
    # `count` is no scalar: the schema says so, and the plugin (which would call it missing) does not.
    text = HEAD + "spec:\n  class: datagen\n  tasksMax: 0\n  config:\n    topic: t\n    count: {n: 1}\n    shard: 2\n"
    assert problems(tmp_path, text) == [
        "7:13: spec.tasksMax: must be at least 1, got 0",
        "10:12: spec.config.count: expected a string, a number, a boolean or null, got a mapping"
        " (hint: Connect configs are flat: write the value as one string, e.g. comma-separated)",
        "11:5: spec.config.shard: unknown key: neither `datagen` nor Kafka Connect defines it"
        " (hint: did you mean `shards`?)",
    ]


def test_a_reading_problem_hides_the_config_problems_only_when_in_what_the_plugin_reads(tmp_path: Path) -> None:
    text = HEAD + "  labels: {team: a, team: b}\nspec:\n  class: datagen\n  config: {topic: t, count: 1, shard: 2}\n"
    assert problems(tmp_path, text) == [
        "5:21: metadata.labels.team: duplicate key `team` (first defined on line 5) (hint: remove one of them)",
        "8:32: spec.config.shard: unknown key: neither `datagen` nor Kafka Connect defines it"
        " (hint: did you mean `shards`?)",
    ]
    # One in what the plugin reads: which `count` it would see is a guess, so no config check.
    in_config = HEAD + "spec:\n  class: datagen\n  tasksMax: 0\n  config:\n    count: 1\n    count: x\n"
    assert problems(tmp_path, in_config) == [
        "7:13: spec.tasksMax: must be at least 1, got 0",
        "10:5: spec.config.count: duplicate key `count` (first defined on line 9) (hint: remove one of them)",
    ]
    in_class = HEAD + "spec:\n  class: datagen\n  class: file-sink\n  config: {topik: t}\n"
    assert problems(tmp_path, in_class) == [
        "7:3: spec.class: duplicate key `class` (first defined on line 6) (hint: remove one of them)",
    ]


def test_no_config_check_without_a_readable_class_and_config(tmp_path: Path) -> None:
    # What the check needs is broken: its own problem is reported, nothing more about the config.
    no_class = HEAD + "spec:\n  tasksMax: 0\n  config: {topik: t}\n"
    assert problems(tmp_path, no_class) == [
        "5:1: spec.class: required field is missing"
        " (hint: a registered connector name (e.g. parquet-sink) or a 'module:Class' path)",
        "6:13: spec.tasksMax: must be at least 1, got 0",
    ]
    unknown_class = HEAD + "spec:\n  class: nosuch\n  tasksMax: 0\n  config: {topik: t}\n"
    assert problems(tmp_path, unknown_class) == [
        "6:10: spec.class: unknown connector class 'nosuch' (hint: use a registered name (datagen, delta-sink, file-sink,"
        " file-source, iceberg-sink, jdbc-sink, jdbc-source, parquet-sink), a 'module:Class' path, or a Java class name (run by a Java Connect worker))",
        "7:13: spec.tasksMax: must be at least 1, got 0",
    ]
    config_not_a_mapping = HEAD + "spec:\n  class: datagen\n  tasksMax: 0\n  config: [topic, t]\n"
    assert problems(tmp_path, config_not_a_mapping) == [
        "7:13: spec.tasksMax: must be at least 1, got 0",
        "8:11: spec.config: expected a mapping, got a list"
        " (hint: Connect configs are flat: write the value as one string, e.g. comma-separated)",
    ]
    java_class = HEAD + "spec:\n  class: com.example.AnySinkConnector\n  tasksMax: 0\n  config: {anything: 1}\n"
    assert problems(tmp_path, java_class) == ["7:13: spec.tasksMax: must be at least 1, got 0"]


def test_every_document_and_every_file_is_checked_in_one_load(tmp_path: Path) -> None:
    first = tmp_path / "a.yaml"
    first.write_text(HEAD + "spec:\n  class: datagen\n  state: gone\n  config: {topic: t}\n---\n- not a manifest\n")
    second = tmp_path / "b.yaml"
    second.write_text(HEAD.replace("c1", "c2") + "spec:\n  class: file-source\n  tasksMax: '1'\n  config: {pth: /in}\n")
    result = load_manifests([tmp_path], env={}, cache=False)
    assert [d.render().removeprefix(f"{tmp_path}/") for d in result.diagnostics] == [
        "a.yaml:7:10: spec.state: invalid value 'gone' (hint: one of running, paused, stopped)",
        "a.yaml:8:3: spec.config.count: is required (an integer)",
        "a.yaml:10:1: expected a Connector manifest (a mapping), got a list"
        " (hint: each YAML document must start with `apiVersion: reconciler.io/v1` and `kind: Connector`)",
        "b.yaml:7:13: spec.tasksMax: expected an integer, got a string ('1') (hint: remove the quotes)",
        "b.yaml:8:3: spec.config.path: is required",
        "b.yaml:8:3: spec.config.topic: is required",
        "b.yaml:8:12: spec.config.pth: unknown key: neither `file-source` nor Kafka Connect defines it"
        " (hint: did you mean `path`?)",
    ]


def test_the_java_class_note_points_at_spec_class(tmp_path: Path) -> None:
    file = tmp_path / "m.yaml"
    file.write_text(HEAD + "  labels: {team: a}\nspec:\n  state: paused\n  class: com.example.LegacySinkConnector\n")
    result = load_manifests([file], env={}, cache=False)
    assert (result.diagnostics, [c.name for c in result.connectors]) == ([], ["c1"])
    [note] = result.notes
    assert (note.severity, str(note.source), note.field_path) == (Severity.INFO, f"{file}:8:10", "spec.class")


def test_a_refused_documents_plugin_messages_quote_no_secret(tmp_path: Path) -> None:
    # The plugin quotes a bad value; one a placeholder gave (or a `spec.sensitive` key's) is masked.
    text = HEAD + (
        "spec:\n"
        "  class: datagen\n"
        "  tasksMax: two\n"
        "  sensitive: [batch.size]\n"
        "  config: {topic: t, count: 1, record.bytes: '${env:BYTES}', batch.size: hunter2}\n"
    )
    assert problems(tmp_path, text, env={"BYTES": "s3cret"}) == [
        "7:13: spec.tasksMax: expected an integer, got a string ('two')",
        "9:46: spec.config[\"record.bytes\"]: must be an integer; got '(sensitive)'",
        "9:74: spec.config[\"batch.size\"]: must be an integer; got '(sensitive)'",
    ]


def test_tasks_max_above_javas_int_is_refused(tmp_path: Path) -> None:
    """Connect's `tasks.max` is an INT: a Java worker sharing the topics could not parse more."""
    text = HEAD + "spec:\n  class: datagen\n  tasksMax: 2147483648\n  config: {topic: t, count: 1}\n"
    assert problems(tmp_path, text) == ["7:13: spec.tasksMax: must be at most 2147483647, got 2147483648"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        # datagen deals its ids into `shards` stripes, one task each at most (16 by default).
        ("class: datagen\n  tasksMax: 17\n  config: {topic: t, count: 1}\n",
         "spec.tasksMax: datagen uses at most 16 tasks with this config; got 17"),
        ("class: datagen\n  tasksMax: 40\n  config: {topic: t, count: 1, shards: 32}\n",
         "spec.tasksMax: datagen uses at most 32 tasks with this config; got 40"),
        ("class: file-sink\n  tasksMax: 100000\n  config: {topics: t, path: /tmp/x}\n",
         "spec.tasksMax: the runtime serves at most 10000 tasks per connector; got 100000"),
    ],
)
def test_a_tasks_max_that_cannot_be_served_names_the_limit(tmp_path: Path, spec: str, message: str) -> None:
    (found,) = problems(tmp_path, HEAD + "spec:\n  " + spec)
    assert found.endswith(message) and found.startswith("7:13: ")


def test_tasks_max_within_the_limits_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(HEAD + "spec:\n  class: datagen\n  tasksMax: 32\n  config: {topic: t, count: 1, shards: 32}\n")
    result = load_manifests([tmp_path / "m.yaml"], env={}, cache=False)
    assert (len(result.connectors), result.diagnostics) == (1, [])
