"""Connect keys the runtime does not apply to a Python connector's records, where that would
change the data: refused by `reconciler validate` rather than silently ignored.

A Java Connect worker passes each record through converters and transformations; the
reconciler's runtime runs a Python connector itself and does neither (docs/plugins.md):

- `transforms` (SMTs such as Filter or MaskField) and the `predicates` they use: every record
  would be written unchanged, kept where Filter would drop it, unmasked where MaskField would
  mask it;
- `key.converter`, `value.converter`, `header.converter`: a plugin's bytes go to Kafka as they
  are and a sink is given Kafka's bytes as they are, which is what ByteArrayConverter does
  (StringConverter too, for UTF-8 text; SimpleHeaderConverter for text headers). Any other
  converter (JsonConverter, AvroConverter…) would not convert anything. A plugin that converts
  keys or values itself (`Connector.converters`) takes the converters it knows
  (`connectors.converters.settings`: JsonConverter too), with their settings checked.

Connect's `errors.*` keys are left alone: their tolerance, logging and dead letter queue cover
the converter stages, which a plugin that converts applies itself (`connectors.errant`, as
parquet-sink does); for one that does not, nothing they would act on can happen. A plugin that declares one of
these keys itself (`file-source`'s `errors.tolerance`) gives it its own meaning and is not
checked here. A Java connector class is never checked: a Java worker runs it, and applies all.
"""

from __future__ import annotations

from collections.abc import Collection

from reconciler.connectors.configdef import ConfigProblem, ConnectorConfig
from reconciler.connectors.converters.settings import KINDS, read_converter

NOT_APPLIED_LISTS = ("transforms", "predicates")

_BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
_STRING = "org.apache.kafka.connect.storage.StringConverter"
# Per converter key, the classes that leave a Python connector's bytes as they are.
UNCHANGING_CONVERTERS: dict[str, tuple[str, ...]] = {
    "key.converter": (_BYTES, _STRING),
    "value.converter": (_BYTES, _STRING),
    "header.converter": (_BYTES, _STRING, "org.apache.kafka.connect.storage.SimpleHeaderConverter"),
}


def _elsewhere(what: str) -> str:
    return f"or use a Java connector class: a Java Connect worker runs it, and applies its {what}"


def unapplied_problems(config: ConnectorConfig, own_keys: Collection[str] = (),
                       converts: Collection[str] = ()) -> list[ConfigProblem]:
    """A problem for each key of `config` set to something the runtime would silently not apply
    (unless the plugin declares the key itself, among `own_keys`). For the parts the plugin
    `converts` ("key", "value"), the problems with their converter and its settings instead."""
    problems = []
    for key in NOT_APPLIED_LISTS:
        if key not in own_keys and _set(config, key):
            problems.append(_list_problem(key))
    for key, unchanging in UNCHANGING_CONVERTERS.items():
        role = key.split(".")[0]
        if key not in own_keys and role in converts and role in ("key", "value"):
            problems += read_converter(config, "key" if role == "key" else "value")[1]
            continue
        value = _set(config, key)
        if key not in own_keys and value and value not in unchanging:
            problems.append(_converter_problem(key, value))
    return problems


def accepted_converters(key: str, converts: Collection[str]) -> tuple[str, ...]:
    """The classes `key` may name for a plugin that converts `converts` (the JSON Schema's list)."""
    return tuple(KINDS) if key.split(".")[0] in converts and key != "header.converter" else UNCHANGING_CONVERTERS[key]


def _set(config: ConnectorConfig, key: str) -> str:
    return (config.get(key) or "").strip()


def _list_problem(key: str) -> ConfigProblem:
    if key == "transforms":
        message = ("is not applied: the reconciler's runtime runs no transformations (SMTs) on a Python "
                   "connector's records, so every record would be written unchanged")
    else:
        message = "is not applied: the reconciler's runtime runs no transformations, so no predicates either"
    hint = f"remove it; filter or mask the records in the plugin itself, {_elsewhere('transforms')}"
    return ConfigProblem(key, message, hint)


def _converter_problem(key: str, value: str) -> ConfigProblem:
    what = key.split(".")[0] + "s"
    message = (f"is not applied: the reconciler's runtime moves a Python connector's {what} to and from Kafka "
               f"as bytes, unchanged, so `{value}` would convert nothing")
    hint = f"remove it (or set {_BYTES}); convert in the plugin itself, {_elsewhere('converters')}"
    return ConfigProblem(key, message, hint)
