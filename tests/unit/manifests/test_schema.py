"""schemas/connector.schema.json: generated from the models, checked in, and in agreement with them."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from reconciler.core.models import ConnectorManifest
from reconciler.manifests.schema import REGENERATE_COMMAND, SCHEMA_FILE, generate_schema, main, render_schema

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"


def test_checked_in_schema_matches_the_models() -> None:
    checked_in = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert checked_in == generate_schema(), (
        f"{SCHEMA_FILE.relative_to(ROOT)} is out of date with reconciler/core/models.py; "
        f"run `{REGENERATE_COMMAND}` and commit the result"
    )
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render_schema(), f"formatting differs; run `{REGENERATE_COMMAND}`"


def test_schema_is_valid_json_schema_2020_12() -> None:
    schema = generate_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_check_mode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--check"]) == 0
    stale = tmp_path / "schema.json"
    stale.write_text("{}\n")
    assert main(["--check", "--out", str(stale)]) == 1
    assert REGENERATE_COMMAND in capsys.readouterr().err
    assert main(["--out", str(stale)]) == 0
    assert main(["--check", "--out", str(stale)]) == 0


def test_module_runs_as_a_script(tmp_path: Path) -> None:
    out = tmp_path / "s.json"
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "reconciler.manifests.schema", "--out", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text()) == generate_schema()


def fixture_documents() -> list[Any]:
    documents: list[Any] = []
    for file in sorted(FIXTURES.rglob("*.y*ml")):
        try:
            documents.extend(d for d in yaml.safe_load_all(file.read_text()) if d is not None)
        except yaml.YAMLError:
            continue  # the syntax-error fixture
    return documents


BASE: dict[str, Any] = {
    "apiVersion": "reconciler.io/v1",
    "kind": "Connector",
    "metadata": {"name": "c"},
    "spec": {"class": "datagen"},
}


def variant(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(BASE)
    node = document
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return document


# Values where a lax validator and JSON Schema could disagree.
TRICKY = [
    variant(("spec", "tasksMax"), value)
    for value in ["2", 2.0, 2.5, True, None, 0, 10**20]
] + [
    variant(("spec", "restart"), {"id": "r", "includeTasks": value}) for value in ["true", 1, 0, "yes", None]
] + [
    variant(("spec", "state"), value) for value in ["RUNNING", "running", None, 1]
] + [
    variant(("metadata", "name"), value) for value in ["a\n", "", "a" * 250, "a" * 249, 12, "-a"]
] + [
    variant(("spec", "config"), value) for value in [{"a": [1]}, {"a": {"b": 1}}, {"a": None}, {"a": 1.5}, []]
] + [
    variant(("spec", "restart"), {"id": value}) for value in ["", "a b", "x" * 201, 5]
] + [
    variant(("spec", "offsets"), value)
    for value in [
        {"id": "o", "action": "alter", "offsets": [{"partition": {"a": [1]}, "offset": None}]},
        {"id": "o", "action": "alter", "offsets": [{"partition": {"a": 1}}]},
        {"id": "o", "action": "alter", "offsets": [{"partition": None, "offset": None}]},
        {"id": "o", "action": "reset", "offsets": None},
    ]
] + [
    variant(("spec", "sensitive"), value) for value in [["a"], "a", [1]]
] + [
    variant(("metadata", "labels"), value) for value in [{"a": "b"}, {"a": 1}, None]
]


@pytest.mark.parametrize("document", fixture_documents() + TRICKY)
def test_what_the_models_accept_the_schema_accepts(document: Any) -> None:
    """The loader skips jsonschema for documents pydantic accepts (it is 40x slower); that is
    only sound if the models are at least as strict as the schema (the part the loader uses:
    without the built-in connectors' configs, which the plugins check)."""
    try:
        ConnectorManifest.model_validate(document)
    except ValidationError:
        return
    errors = [e.message for e in jsonschema.Draft202012Validator(generate_schema(plugins=False)).iter_errors(document)]
    assert errors == []


def test_the_tricky_table_exercises_schema_errors() -> None:
    lax_schema_violations = [
        d for d in TRICKY if list(jsonschema.Draft202012Validator(generate_schema(plugins=False)).iter_errors(d))
    ]
    assert len(lax_schema_violations) > 20  # the table does exercise schema errors


def config_variant(cls: str, config: dict[str, Any]) -> dict[str, Any]:
    return {**BASE, "spec": {"class": cls, "config": config}}


# Built-in connector configs: (document, whether `reconciler validate` accepts it).
PLUGIN_CONFIGS = [
    (config_variant("datagen", {"topic": "t", "count": 10}), True),
    (config_variant("datagen", {"topic": "t", "count": "10", "record.bytes": " 40 ", "shards": None}), True),
    (config_variant("datagen", {"topic": "t", "count": "${env:COUNT}"}), True),
    (config_variant("datagen", {"topic": "t", "count": 1, "errors.tolerance": "all", "transforms": " "}), True),
    (config_variant("datagen", {"topic": "t", "count": 1, "transforms": "a,b"}), False),  # not applied
    (config_variant("datagen", {"topic": "t", "count": 1, "predicates": "p"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "transforms": "${file:/t.properties:list}"}), True),
    (config_variant("datagen", {"topic": "t", "count": 1,
                                "value.converter": " org.apache.kafka.connect.converters.ByteArrayConverter",
                                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                                "header.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"}), True),
    # datagen and parquet-sink convert (JsonConverter's envelope); file-sink does not.
    (config_variant("datagen", {"topic": "t", "count": 1,
                                "value.converter": "org.apache.kafka.connect.json.JsonConverter"}), True),
    (config_variant("file-sink", {"topics": "a", "path": "/out",
                                  "value.converter": "org.apache.kafka.connect.json.JsonConverter"}), False),
    (config_variant("parquet-sink", {"topics": "a", "path": "/out",
                                     "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                                     "value.converter.schemas.enable": False, "errors.tolerance": "all",
                                     "errors.deadletterqueue.topic.name": "dlq"}), True),
    (config_variant("datagen", {"topic": "t", "count": 1,
                                "key.converter": "org.apache.kafka.connect.storage.SimpleHeaderConverter"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "exactly.once.support": "REQUIRED"}), True),
    (config_variant("datagen", {"topic": "t", "count": 1, "producer.override.linger.ms": 5}), True),
    (config_variant("datagen", {"topic": "t", "count": 1, "key.converter.schemas.enable": False}), True),
    (config_variant("datagen", {"topic": "t", "count": "abc"}), False),
    (config_variant("datagen", {"topic": "t", "count": -1}), False),
    (config_variant("datagen", {"topic": "t"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "topik": "t"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "topics": "t"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "errors.tolerance": "some"}), False),
    (config_variant("datagen", {"topic": "t", "count": 1, "tasks.max.enforce": "maybe"}), False),
    (config_variant("datagen", {"topic": "bad topic", "count": 1}), False),  # Kafka's topic-name rule
    (config_variant("datagen", {"topic": "x" * 250, "count": 1}), False),
    (config_variant("datagen", {"topic": 2024, "count": 1}), True),  # the name "2024"
    (config_variant("datagen", {"topic": "${env:COUNT}", "count": 1}), True),
    (config_variant("file-source", {"path": "/in", "topic": "t", "format": "csv", "errors.tolerance": "all"}), True),
    (config_variant("file-source", {"path": "/in", "topic": "t", "format": "xml"}), False),
    (config_variant("parquet-sink", {"topics": "a,b", "path": "/out", "flush.records": 100}), True),
    (config_variant("parquet-sink", {"topics": " a , b.c_d-1 ", "path": "/out"}), True),
    (config_variant("parquet-sink", {"topics": "a,,b,", "path": "/out"}), True),  # empty items dropped
    (config_variant("parquet-sink", {"topics": "a, b c", "path": "/out"}), False),
    (config_variant("parquet-sink", {"topics": "a", "path": "/out", "compression": "lzo"}), False),
    (config_variant("parquet-sink", {"topics": "a", "path": "/out", "offsets.storage.topic": "x"}), False),
    (config_variant("parquet-sink", {"path": "/out"}), False),
    (config_variant("file-sink", {"topics": "a,b", "path": "/out", "format": "json", "flush.records": 10}), True),
    (config_variant("file-sink", {"topics": "a", "path": "/out", "fromat": "json"}), False),
    (config_variant("file-sink", {"topics": "a", "path": "/out", "flush.record": 10}), False),
    (config_variant("file-sink", {"topics": "a", "path": "/out", "format": "csv"}), False),
    (config_variant("file-sink", {"topics": "a", "path": "/out", "flush.records": 0}), False),
    (config_variant("file-sink", {"path": "/out"}), False),
    (config_variant("file-sink", {"topics": "a", "path": "/out", "transforms": "dropall",
                                  "transforms.dropall.type": "org.apache.kafka.connect.transforms.Filter"}), False),
    (config_variant("com.example.AnyConnector", {"anything": 1}), True),
]


@pytest.mark.parametrize(("document", "accepted"), PLUGIN_CONFIGS)
def test_published_schema_knows_the_built_in_configs(document: Any, accepted: bool) -> None:
    """What the loader accepts, the published schema accepts; and for the built-ins' keys it
    refuses what the loader refuses (types, choices, limits, unknown and wrong-kind keys)."""
    from reconciler.core.models import SourceRef
    from reconciler.manifests.validate import clean_connector

    loaded = clean_connector(document, SourceRef(file="m.yaml", line=1, column=1), {"COUNT": "3"})
    assert (loaded is not None) == accepted
    errors = list(jsonschema.Draft202012Validator(generate_schema()).iter_errors(document))
    assert (errors == []) == accepted, [e.message for e in errors]


@pytest.mark.parametrize("document", fixture_documents() + TRICKY)
def test_what_the_loader_accepts_the_published_schema_accepts(document: Any) -> None:
    from reconciler.core.models import SourceRef
    from reconciler.manifests.validate import clean_connector

    if clean_connector(document, SourceRef(file="m.yaml", line=1, column=1), {"ORDERS_DB_PASSWORD": "x"}) is None:
        return
    assert [e.message for e in jsonschema.Draft202012Validator(generate_schema()).iter_errors(document)] == []
