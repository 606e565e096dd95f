"""`PUT /connector-plugins/{plugin}/config/validate`: our answer against a Java worker's, for the
keys Connect itself defines for every connector (`reconciler.connectors.framework`).

Java's FileStream connectors and ours are different plugins, so their own keys differ; Connect's
keys are the same for every sink and every source. Each must be listed with Java's definition
(type, default, importance, group, order, width, display name), in Java's order, under Java's
groups. Not compared: the documentation (ours is in our words) and the defaults a Java worker
takes from its own config and version (converters, plugin versions), which we do not have.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.api import plugin_catalog as plugins
from reconciler.connectors.registry import load_connector
from reconciler.devtools.connect import RunningConnect

# The worker's converters and its version: Java's `enrich` puts them in as defaults.
WORKERS_DEFAULTS = frozenset({
    "connector.plugin.version", "key.converter", "key.converter.plugin.version", "value.converter",
    "value.converter.plugin.version", "header.converter", "header.converter.plugin.version",
})
SINKS = (
    ("FileStreamSink", {"name": "v", "topics": "t", "file": "/tmp/v.txt"}),
    ("file-sink", {"name": "v", "topics": "t", "path": "/tmp/v"}),
)
SOURCES = (
    ("FileStreamSource", {"name": "v", "topic": "t", "file": "/tmp/v.txt"}),
    ("file-source", {"name": "v", "topic": "t", "path": "/tmp/v"}),
)


def definitions(body: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {info["definition"]["name"]: info["definition"] for info in body["configs"] if info["definition"]}


def comparable(definition: dict[str, Any]) -> dict[str, Any]:
    left_out = {"documentation"} | ({"default_value"} if definition["name"] in WORKERS_DEFAULTS else set())
    return {field: value for field, value in definition.items() if field not in left_out}


@pytest.mark.parametrize(("java", "ours"), [SINKS, SOURCES], ids=["sink", "source"])
def test_connects_own_keys_are_defined_and_grouped_as_a_java_worker_defines_them(
    java_connect: RunningConnect, java: tuple[str, dict[str, str]], ours: tuple[str, dict[str, str]]
) -> None:
    (java_plugin, java_config), (our_plugin, our_config) = java, ours
    code, theirs = java_connect.rest(
        "PUT", f"/connector-plugins/{java_plugin}/config/validate", {"connector.class": java_plugin, **java_config}
    )
    assert code == 200, theirs
    mine = plugins.validate(our_plugin, {"connector.class": our_plugin, **our_config})
    assert (theirs["error_count"], mine["error_count"]) == (0, 0), mine
    assert mine["groups"][: len(theirs["groups"])] == theirs["groups"]

    own_keys = load_connector(our_plugin).config_def.keys  # type: ignore[union-attr]
    javas = {name: d for name, d in definitions(theirs).items() if d["group"] is not None and name not in own_keys}
    assert len(javas) >= 19, sorted(javas)  # Connect's common and error-handling keys at least
    ours_by_name = definitions(mine)
    assert [comparable(ours_by_name[name]) for name in javas] == [comparable(d) for d in javas.values()]
    order = [name for name in ours_by_name if name in javas]
    assert order == list(javas), "Connect's keys in Java's order"


def test_a_config_apply_would_refuse_is_refused_here_too(java_connect: RunningConnect) -> None:
    """Java takes keys no plugin defines; our validate reports what `reconciler validate` does
    (an unknown key, a transformation the runtime would not apply), each at its key."""
    config = {"connector.class": "file-sink", "name": "v", "topics": "t", "path": "/tmp/v", "pth": "/tmp/w",
              "transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.Filter"}
    mine = plugins.validate("file-sink", config)
    errors = {info["value"]["name"]: info["value"]["errors"] for info in mine["configs"] if info["value"]["errors"]}
    assert set(errors) >= {"pth", "transforms"}, errors
    assert "did you mean `path`?" in errors["pth"][0]
    assert mine["error_count"] == sum(map(len, errors.values()))
    java_config = {**config, "connector.class": "FileStreamSink", "file": "/tmp/v.txt"}
    code, theirs = java_connect.rest("PUT", "/connector-plugins/FileStreamSink/config/validate", java_config)
    assert (code, theirs["error_count"]) == (200, 0), "Java takes the same config: the difference is ours, by design"
