"""`PUT /connector-plugins/{p}/config/validate` lists the keys a plugin's ConfigDef declares, as
Java's `AbstractHerder.generateResult` lists a connector's `config()`."""

from __future__ import annotations

from typing import Any

from reconciler.api import plugin_catalog as plugins
from reconciler.connectors.configdef import Type
from reconciler.connectors.datagen import DatagenConnector


class VaultedDatagen(DatagenConnector):
    config_def = DatagenConnector.config_def.define(  # type: ignore[union-attr]
        "vault.token", Type.PASSWORD, "Token for the vault.", default=None
    ).define("tags", Type.LIST, "Tags.", default=["a", "b"]).define("gzip", Type.BOOLEAN, "Compress.", default=False)


PLUGIN = f"{__name__}:VaultedDatagen"


def validated(**config: str) -> dict[str, Any]:
    body = plugins.validate(PLUGIN, {"connector.class": PLUGIN, "name": "v", "topic": "t", "count": "5", **config})
    return {info["value"]["name"]: info for info in body["configs"]}


def test_a_password_key_is_hidden_as_java_shows_it() -> None:
    info = validated(**{"vault.token": "s3cret-value"})["vault.token"]
    assert info["definition"]["type"] == "PASSWORD"
    assert info["value"]["value"] == "[hidden]"
    assert "s3cret-value" not in repr(plugins.validate(PLUGIN, {"connector.class": PLUGIN, "vault.token": "s3cret-value"}))


def test_defaults_and_values_are_texts_as_config_def_converts_them() -> None:
    infos = validated(gzip="TRUE", **{"batch.size": " 7 "})
    assert infos["tags"]["definition"]["default_value"] == "a,b" and infos["tags"]["value"]["value"] == "a,b"
    assert infos["gzip"]["value"]["value"] == "true"
    assert infos["batch.size"]["value"]["value"] == "7"
    assert infos["vault.token"]["value"]["value"] is None


def test_a_declared_key_with_a_problem_is_listed_once_with_its_definition() -> None:
    body = plugins.validate(PLUGIN, {"connector.class": PLUGIN, "name": "v", "topic": "t", "count": "-1"})
    counts = [info for info in body["configs"] if info["value"]["name"] == "count"]
    assert len(counts) == 1 and counts[0]["definition"] is not None
    assert counts[0]["value"]["value"] is None and counts[0]["value"]["errors"] == ["must be at least 0; got -1"]
    assert body["error_count"] == 1


def test_problems_are_those_reconciler_validate_reports_a_placeholder_left_to_the_worker() -> None:
    body = plugins.validate(PLUGIN, {"connector.class": PLUGIN, "name": "v", "topic": "t", "count": "${file:/s:count}",
                                     "cuont": "5", "tasks.max": "0"})
    errors = {info["value"]["name"]: info["value"]["errors"] for info in body["configs"] if info["value"]["errors"]}
    assert errors == {
        "cuont": [f"unknown key: neither `{PLUGIN}` nor Kafka Connect defines it (hint: did you mean `count`?)"],
        "tasks.max": ["Invalid value 0 for configuration tasks.max: Value must be at least 1"],
    }
    assert body["configs"][0]["definition"] is None, "a key without a definition is listed first"
    assert body["error_count"] == 2


def test_connects_keys_come_first_in_javas_groups_and_the_plugins_keys_after() -> None:
    body = plugins.validate(PLUGIN, {"connector.class": PLUGIN, "name": "v", "topic": "t", "count": "5"})
    definitions = [info["definition"] for info in body["configs"]]
    assert definitions[0]["name"] == "name" and definitions[0]["required"] and definitions[0]["group"] == "Common"
    assert {d["group"] for d in definitions[-8:]} == {None}, "the plugin's keys have no UI fields"
    assert body["groups"][:4] == ["Common", "Transforms", "Predicates", "Error Handling"]


def test_tasks_max_is_parsed_as_javas_int() -> None:
    def errors(tasks_max: str) -> list[str]:
        body = plugins.validate(PLUGIN, {"connector.class": PLUGIN, "name": "v", "topic": "t", "count": "5",
                                         "tasks.max": tasks_max})
        return next(info["value"]["errors"] for info in body["configs"] if info["value"]["name"] == "tasks.max")

    assert errors(" 2 ") == errors("+3") == []
    for not_an_int in ("2147483648", "1_000", "٣", "2.0"):
        assert errors(not_an_int) == [f"Invalid value {not_an_int} for configuration tasks.max: Not a number of type INT"]
    assert errors("0") == ["Invalid value 0 for configuration tasks.max: Value must be at least 1"]
