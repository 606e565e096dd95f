"""`reconciler validate` end to end: the broken-manifest fixtures, exit codes, JSON output, speed, imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from reconciler.manifests import load_manifests

ROOT = Path(__file__).resolve().parents[3]
BROKEN = "tests/fixtures/broken"
VALID = "tests/fixtures/valid"
UNSET = "RECONCILER_FIXTURE_UNSET_PASSWORD"

# Every problem in tests/fixtures/broken, exactly as printed (relative to the repository root).
EXPECTED = [
    "01-yaml-syntax.yaml:9:23: YAML syntax error: mapping values are not allowed in this context"
    " (hint: check this line's indentation, or quote a value containing ': ')",
    "02-unknown-field.yaml:7:3: spec.tasksmax: unknown field (hint: did you mean `tasksMax`?)",
    "03-wrong-type.yaml:7:13: spec.tasksMax: expected an integer, got a string ('two')",
    "04-bad-state.yaml:7:10: spec.state: invalid value 'sleeping' (hint: one of running, paused, stopped)",
    "05-tasks-max-zero.yaml:7:13: spec.tasksMax: must be at least 1, got 0",
    "06-restart-without-id.yaml:10:3: spec.restart.id: required field is missing"
    " (hint: restart, offsets and topics reset requests run once per `id`; give each new request a new id)",
    "07-offsets-without-id.yaml:11:3: spec.offsets.id: required field is missing"
    " (hint: restart, offsets and topics reset requests run once per `id`; give each new request a new id)",
    "08-sink-partition-keys.yaml:16:20: spec.offsets.offsets[0].partition: The partition for a sink connector offset"
    " must contain the keys 'kafka_topic' and 'kafka_partition' (hint: e.g. {kafka_topic: orders, kafka_partition: 0})",
    "09-sink-values-not-integers.yaml:15:59: spec.offsets.offsets[0].partition.kafka_partition: Failed to parse the"
    " following Kafka partition value in the provided offsets: 'one'. Partition values for sink connectors need to be"
    " integers.",
    "09-sink-values-not-integers.yaml:18:32: spec.offsets.offsets[1].offset.kafka_offset: Failed to parse the following"
    " Kafka offset value in the provided offsets: '12x'. Offset values for sink connectors need to be integers.",
    "09-sink-values-not-integers.yaml:20:17: spec.offsets.offsets[2].offset: The offset for a sink connector should"
    " either be null or contain the key 'kafka_offset' (hint: use `offset: null` to delete the committed offset)",
    "10-source-offsets-not-primitive.yaml:16:28: spec.offsets.offsets[0].offset.position: Offsets may only contain"
    " primitive types as values, but field position contains MAP (hint: use a string, number, boolean or null)",
    "10-source-offsets-not-primitive.yaml:17:20: spec.offsets.offsets[1].partition: The partition for a source connector"
    " offset must not be empty (hint: a source partition names where data comes from, e.g. {filename: /data/in.txt})",
    "11-alter-without-offsets.yaml:14:14: spec.offsets.offsets: Partitions / offsets need to be provided for an alter"
    " offsets request (hint: list the partitions to change)",
    '12-bookkeeping-keys.yaml:8:5: spec.config["connector.class"]: `connector.class` is derived from `spec.class`;'
    " remove it from spec.config (hint: set `spec.class` instead)",
    '12-bookkeeping-keys.yaml:10:5: spec.config["tasks.max"]: `tasks.max` is derived from `spec.tasksMax`;'
    " remove it from spec.config (hint: set `spec.tasksMax` instead)",
    "13-duplicate-name-b.yaml:5:9: metadata.name: duplicate connector name `twice`: also declared at"
    f" {BROKEN}/13-duplicate-name-a.yaml:4:9 (hint: connector names must be unique across all manifest files)",
    "14-empty.yaml:1:1: empty file: no manifest in it (hint: add a Connector manifest or delete the file)",
    "15-not-a-mapping.yaml:1:1: expected a Connector manifest (a mapping), got a list"
    " (hint: each YAML document must start with `apiVersion: reconciler.io/v1` and `kind: Connector`)",
    "16-wrong-api-version-and-kind.yaml:1:13: apiVersion: unsupported apiVersion 'reconciler.io/v2'"
    " (hint: use `apiVersion: reconciler.io/v1`)",
    "16-wrong-api-version-and-kind.yaml:2:7: kind: unsupported kind 'KafkaConnector' (hint: use `kind: Connector`)",
    f'17-missing-env-variable.yaml:9:18: spec.config["db.password"]: environment variable `{UNSET}` is not set'
    f" (hint: export {UNSET}=… before running the reconciler)",
    "18-several-problems.yaml:5:9: metadata.name: invalid connector name 'Not A Valid Name' (hint: use letters,"
    " digits, '.', '_' and '-', starting with a letter or digit, at most 249 characters)",
    "18-several-problems.yaml:6:18: metadata.labels.team: expected a string, got an integer (7)"
    " (hint: quote the value to make it a string)",
    "18-several-problems.yaml:8:10: spec.class: must not be empty",
    "18-several-problems.yaml:9:13: spec.tasksMax: expected an integer, got a string ('2') (hint: remove the quotes)",
    "18-several-problems.yaml:10:10: spec.state: invalid value 'Running'"
    " (hint: did you mean `running`? It is one of running, paused, stopped)",
    '18-several-problems.yaml:11:3: spec["connector.class"]: unknown field (hint: use `class` instead)',
    "18-several-problems.yaml:13:13: spec.config.nested: expected a string, a number, a boolean or null, got a mapping"
    " (hint: Connect configs are flat: write the value as one string, e.g. comma-separated)",
    "18-several-problems.yaml:15:9: spec.restart.id: invalid request id 'two words': it must not contain whitespace",
    "18-several-problems.yaml:16:19: spec.restart.includeTasks: expected a boolean, got a string ('yes please')",
    "18-several-problems.yaml:20:1: metadata.name: required field is missing",
    "18-several-problems.yaml:26:5: spec.config.a: duplicate key `a` (first defined on line 25)"
    " (hint: remove one of them)",
    "18-several-problems.yaml:28:1: expected a Connector manifest (a mapping), got a string"
    " (hint: each YAML document must start with `apiVersion: reconciler.io/v1` and `kind: Connector`)",
    # Checked against the connector's plugin (and the keys Kafka Connect defines).
    "19-unknown-class.yaml:6:10: spec.class: unknown connector class 'nosuch-connector' (hint: use a registered"
    " name (datagen, delta-sink, file-sink, file-source, iceberg-sink, jdbc-sink, jdbc-source, parquet-sink), a 'module:Class' path, or a Java class name (run by a Java"
    " Connect worker))",
    "20-bad-config-value.yaml:10:12: spec.config.count: must be an integer; got 'abc'",
    '20-bad-config-value.yaml:11:19: spec.config["record.bytes"]: must be at least 0; got -1',
    "21-typo-key.yaml:7:3: spec.config.topic: is required",
    "21-typo-key.yaml:8:5: spec.config.topik: unknown key: neither `datagen` nor Kafka Connect defines it"
    " (hint: did you mean `topic`?)",
    '22-java-client-setting.yaml:12:5: spec.config["consumer.override.ssl.truststore.location"]:'
    " `ssl.truststore.location` is a Java client setting librdkafka has no equivalent for (hint: use"
    " ssl.ca.location (a PEM file of CA certificates; export a JKS truststore with `keytool -exportcert -rfc`))",
    "23-python-class-with-a-dot.yaml:6:10: spec.class: 'reconciler.connectors.datagen.DatagenConnector' is a Python"
    " class written with a dot (hint: write `reconciler.connectors.datagen:DatagenConnector`: a dotted name is taken"
    " for a Java class)",
    "24-transforms-not-applied.yaml:11:17: spec.config.transforms: is not applied: the reconciler's runtime runs no"
    " transformations (SMTs) on a Python connector's records, so every record would be written unchanged (hint:"
    " remove it; filter or mask the records in the plugin itself, or use a Java connector class: a Java Connect"
    " worker runs it, and applies its transforms)",
    "25-file-sink-typo-key.yaml:10:5: spec.config.fromat: unknown key: neither `file-sink` nor Kafka Connect"
    " defines it (hint: did you mean `format`?)",
    '25-file-sink-typo-key.yaml:11:5: spec.config["flush.record"]: unknown key: neither `file-sink` nor Kafka'
    " Connect defines it (hint: did you mean `flush.records`?)",
    # Structural problems and config problems of the same documents, in one run.
    "26-structure-and-config.yaml:6:18: metadata.labels.team: expected a string, got an integer (7)"
    " (hint: quote the value to make it a string)",
    "26-structure-and-config.yaml:9:13: spec.tasksMax: expected an integer, got a string ('two')",
    "26-structure-and-config.yaml:10:3: spec.config.topic: is required",
    "26-structure-and-config.yaml:11:5: spec.config.topik: unknown key: neither `datagen` nor Kafka Connect"
    " defines it (hint: did you mean `topic`?)",
    "26-structure-and-config.yaml:12:12: spec.config.count: must be an integer; got 'abc'",
    '26-structure-and-config.yaml:13:5: spec.config["tasks.max"]: `tasks.max` is derived from `spec.tasksMax`;'
    " remove it from spec.config (hint: set `spec.tasksMax` instead)",
    "26-structure-and-config.yaml:19:21: metadata.labels.team: duplicate key `team` (first defined on line 19)"
    " (hint: remove one of them)",
    "26-structure-and-config.yaml:25:5: spec.config.fromat: unknown key: neither `file-sink` nor Kafka Connect"
    " defines it (hint: did you mean `format`?)",
    "26-structure-and-config.yaml:32:10: spec.class: unknown connector class 'nosuch-connector' (hint: use a"
    " registered name (datagen, delta-sink, file-sink, file-source, iceberg-sink, jdbc-sink, jdbc-source, parquet-sink), a 'module:Class' path, or a Java class name"
    " (run by a Java Connect worker))",
    "26-structure-and-config.yaml:33:13: spec.tasksMax: must be at least 1, got 0",
    # A converting sink's converter settings and Connect's error handling keys.
    '27-converter-and-errors-settings.yaml:12:37: spec.config["value.converter.schemas.enable"]: must be true or'
    " false; got 'maybe'",
    '27-converter-and-errors-settings.yaml:13:20: spec.config["key.converter"]: `io.confluent.connect.avro.'
    "AvroConverter` is not a converter the reconciler's runtime has (hint: use one of org.apache.kafka.connect.json."
    "JsonConverter, org.apache.kafka.connect.storage.StringConverter, org.apache.kafka.connect.converters."
    "ByteArrayConverter, or a Java connector class)",
    '27-converter-and-errors-settings.yaml:14:23: spec.config["errors.tolerance"]: must be one of none, all;'
    " got 'some'",
]


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != UNSET}
    env["ORDERS_DB_PASSWORD"] = "s3cret"  # used by tests/fixtures/valid/orders-archive.yaml
    return env


def reconciler(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    env = environment()
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "reconciler.cli.main", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done, time.perf_counter() - started


def test_broken_fixtures_one_problem_kind_per_file() -> None:
    files = sorted(p.name for p in (ROOT / BROKEN).iterdir())
    assert len(files) >= 12
    reported = {line.split(":", 1)[0] for line in EXPECTED}
    # 13-duplicate-name-a.yaml is valid on its own: the problem is reported at its twin, naming it.
    assert reported | {"13-duplicate-name-a.yaml"} == set(files), "every broken fixture must report a problem"


def test_validate_lists_every_problem_with_its_position() -> None:
    done, elapsed = reconciler("validate", BROKEN)
    lines = done.stderr.splitlines()
    assert done.returncode == 1
    assert done.stdout == ""
    assert lines[:-1] == [f"{BROKEN}/{line}" for line in EXPECTED]
    assert lines[-1] == f"error: {len(EXPECTED)} problem(s) in {len({line.split(':', 1)[0] for line in EXPECTED})} file(s)"
    # Includes interpreter start-up; measured ~0.45 s on the 2-core dev machine.
    assert elapsed < 2.0, f"reconciler validate took {elapsed:.2f} s"


def test_loading_the_broken_fixtures_in_process_takes_under_a_second() -> None:
    load_manifests([ROOT / BROKEN], env={})  # warm: imports, jsonschema validator
    started = time.perf_counter()
    result = load_manifests([ROOT / BROKEN], env={})
    elapsed = time.perf_counter() - started
    assert len(result.diagnostics) == len(EXPECTED)
    assert elapsed < 1.0, f"loading took {elapsed:.3f} s"  # measured ~0.02 s


def test_validate_json_format() -> None:
    done, _ = reconciler("validate", "--format", "json", BROKEN)
    assert done.returncode == 1
    records = json.loads(done.stdout)
    assert [r["text"] for r in records] == [f"{BROKEN}/{line}" for line in EXPECTED]
    first = records[1]
    assert first == {
        "severity": "error",
        "file": f"{BROKEN}/02-unknown-field.yaml",
        "line": 7,
        "column": 3,
        "path": "spec.tasksmax",
        "message": "unknown field",
        "hint": "did you mean `tasksMax`?",
        "connector": "unknown-field",
        "text": f"{BROKEN}/{EXPECTED[1]}",
    }


def test_validate_valid_manifests_exits_zero() -> None:
    done, _ = reconciler("validate", VALID, f"{BROKEN}/13-duplicate-name-a.yaml")
    # The verdict is the result (stdout); diagnostics, an info line too, are stderr's.
    assert (done.returncode, done.stdout) == (0, "5 connector(s) valid\n")
    # A Java connector class is accepted unchecked, and validate says so (info, not a warning).
    assert done.stderr.splitlines() == [
        f"info: {VALID}/nested/stopped.yml:6:10: spec.class: `com.example.connect.LegacyExportSinkConnector` is a Java"
        " connector class: accepted without config checks (a Java Connect worker sharing these topics runs it; no"
        " plugin here can check it)",
    ]


def test_validate_json_includes_the_java_class_note() -> None:
    done, _ = reconciler("validate", "--format", "json", VALID)
    assert done.returncode == 0
    [note] = json.loads(done.stdout)
    assert (note["severity"], note["connector"], note["path"]) == ("info", "legacy-export", "spec.class")


def test_validate_valid_json_is_an_empty_list() -> None:
    done, _ = reconciler("validate", "--format", "json", f"{BROKEN}/13-duplicate-name-a.yaml")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])
    assert done.stderr == "1 connector(s) valid\n", "beside JSON, the verdict goes to stderr"


def test_warnings_do_not_fail(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    done, _ = reconciler("validate", str(tmp_path / "empty"), f"{BROKEN}/13-duplicate-name-a.yaml")
    assert done.returncode == 0
    assert done.stderr.splitlines() == [f"warning: {tmp_path / 'empty'}: no *.yaml or *.yml files in this directory"]
    assert done.stdout.splitlines() == ["1 connector(s) valid, 1 warning(s)"]


def test_missing_path_fails() -> None:
    done, _ = reconciler("validate", "does/not/exist.yaml")
    assert done.returncode == 1
    assert done.stderr.splitlines() == ["does/not/exist.yaml: no such file or directory", "error: 1 problem(s)"]
    done, _ = reconciler("validate", "does/not/exist.yaml", f"{BROKEN}/01-yaml-syntax.yaml")
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "error: 2 problem(s), 1 of them in 1 file(s)"


def test_validate_never_imports_kafka_or_spark() -> None:
    code = (
        "import sys\n"
        "from reconciler.cli.main import main\n"
        f"rc = main(['validate', {BROKEN!r}, {VALID!r}])\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('confluent_kafka', 'pyspark', 'pyarrow'))\n"
        "print('RC', rc, 'HEAVY', heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environment(), capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "RC 1 HEAVY []", done.stderr
