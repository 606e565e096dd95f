"""`GET /connector-plugins` and `PUT /connector-plugins/{plugin}/config/validate`, in Connect's shapes.

Validation is the one mutation-shaped call KIP-304 keeps: it checks a config and changes
nothing. Connect answers with `ConfigInfos`: one entry per config key it knows (a definition
and the value checked against it), the groups of those keys, and an error count. Ours lists
the keys Connect defines for a connector of the plugin's kind, with a 4.3.1 worker's groups,
orders, widths and display names (`connectors.framework`), then every key the plugin's
`ConfigDef` declares (as `AbstractHerder.generateResult` lists a connector's `config()`), and,
first and without a definition, each other key with a problem. The problems are those
`reconciler validate` reports for the same config (`connectors.checks.judged_problems`: the
plugin's own, Connect's keys' values, unknown keys, keys the runtime would not apply), and
Java's messages for `name`, `connector.class` and `tasks.max`; a config this route accepts is
one `apply` accepts (docs/compatibility.md). Values are shown masked like every config
(`render.connect_rest.shown_config`); a PASSWORD key's as Java shows it, `[hidden]`.

We have no transformations, predicates or converters: `?connectorsOnly=false` lists the same
connectors.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from reconciler.connectors.checks import judged_problems
from reconciler.connectors.configdef import INTEGER_TEXT, ConfigDef, ConfigKey, Type, Value
from reconciler.connectors.framework import framework_def
from reconciler.connectors.registry import ENTRY_POINT_GROUP, load_connector, plugin_version
from reconciler.core.live import UNDEFINED_VERSION
from reconciler.core.normalize import config_value
from reconciler.render.connect_rest import shown_config
from reconciler.errors import ReconcilerError

LOG = logging.getLogger(__name__)
ALIAS_SUFFIX = "Connector"
Body = dict[str, Any]
# Required in Java's `ConnectorConfig`; ours take them from a manifest's `metadata.name` and
# `spec.class`, so our definitions give them no default rather than requiring them.
JAVA_REQUIRED = ("name", "connector.class")


class BadRequest(ReconcilerError):
    """Connect's `BadRequestException`: answered 400 with the message."""


class UnknownPlugin(ReconcilerError):
    """Java's `NotFoundException("Unknown plugin …")`: answered 404."""


def plugin_infos() -> list[Body]:
    """`PluginInfo`s of the registered connectors: sinks, then sources, each by class name (Java's order)."""
    infos = []
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            kind = load_connector(entry_point.name).kind
        except ReconcilerError as exc:  # a broken plugin is left out, as Java skips one it cannot load
            LOG.warning("connector plugin %s is not listed: %s", entry_point.name, exc.message)
            continue
        info: Body = {"class": entry_point.name, "type": kind}
        version = plugin_version(entry_point.name)  # what its statuses report
        if version not in (None, UNDEFINED_VERSION):  # Java leaves out an undefined version
            info["version"] = version
        infos.append(info)
    return sorted(infos, key=lambda info: (info["type"] != "sink", info["class"]))


def _importable_here(name: str) -> bool:
    """A registered plugin, or a `module:Class` whose module this process already imported (its
    manifests name it): a request never makes the server import code it names."""
    module = name.strip().partition(":")[0] if ":" in name else None
    return module is None or module in sys.modules


def _normalized(plugin: str) -> str:
    """Java's alias rule: `FileStreamSinkConnector` and `FileStreamSink` name one plugin."""
    return plugin[: -len(ALIAS_SUFFIX)] if plugin.endswith(ALIAS_SUFFIX) and len(plugin) > len(ALIAS_SUFFIX) else plugin


def config_from_body(body: object) -> dict[str, str | None]:
    """A request body as Connect's `Map<String, String>`: scalars become strings (Jackson's coercion)."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object of connector properties")
    config: dict[str, str | None] = {}
    for key, value in body.items():
        if isinstance(value, (dict, list)):
            raise BadRequest(f"the value of {key!r} must be a string, not a JSON {type(value).__name__}")
        config[key] = config_value(value)
    return config


def validate(plugin: str, config: dict[str, str | None]) -> Body:
    """`ConnectorPluginsResource.validateConfigs`; raises BadRequest where Java answers 400.

    A plugin the URL names that no registry entry or `module:Class` gives is UnknownPlugin (404),
    as Java's other plugin routes answer; Java's validate answers 500 there."""
    if not _importable_here(plugin):
        raise UnknownPlugin(f"Unknown plugin {plugin}.")
    try:
        load_connector(plugin)
    except ReconcilerError as exc:
        raise UnknownPlugin(f"Unknown plugin {plugin}.") from exc
    included = config.get("connector.class")
    if included is not None and not _normalized(included).endswith(_normalized(plugin)):
        raise BadRequest(f"Included connector type {included} does not match request type {plugin}")
    if included is None:
        shown = ", ".join(f"{k}={v}" for k, v in shown_config(config).items())
        raise BadRequest(f"Connector config {{{shown}}} contains no connector type")
    if not _importable_here(included):
        raise BadRequest(f"Unknown connector class {included}: not a plugin this process has loaded")
    try:
        cls = load_connector(included)
        cls()  # a plugin that cannot even be made is a 400 with its reason, as its loading
    except ReconcilerError as exc:
        raise BadRequest(exc.message + (f" ({exc.hint})" if exc.hint else "")) from exc
    errors: dict[str, list[str]] = {}
    for key, value in config.items():
        if value is None:
            errors.setdefault(key, []).append("Null value can not be supplied as the configuration value.")
    _check_bookkeeping(config, errors)
    for problem in judged_problems(included, cls, config):  # what `reconciler validate` finds
        errors.setdefault(problem.key, []).append(problem.message + (f" (hint: {problem.hint})" if problem.hint else ""))
    framework, own = framework_def(cls.kind), cls.config_def or ConfigDef()
    groups = list(dict.fromkeys([*framework.groups(), *own.groups()]))  # Java's `allGroups`
    return _config_infos(included, config, errors, {**framework.keys, **own.keys}, groups)


def _check_bookkeeping(config: dict[str, str | None], errors: dict[str, list[str]]) -> None:
    """Connect's keys that our manifests write from their own fields (`metadata.name`,
    `spec.class`, `spec.tasksMax`), with Java's messages: `check_config` leaves them to the
    manifest models."""
    for key in JAVA_REQUIRED:
        if config.get(key) is None:
            errors.setdefault(key, []).append(f'Missing required configuration "{key}" which has no default value.')
    tasks_max = config.get("tasks.max")
    if tasks_max is None:
        return
    text = tasks_max.strip()  # Java's `Integer.parseInt` of the trimmed value
    if not INTEGER_TEXT.fullmatch(text) or not -(2**31) <= int(text) < 2**31:
        errors.setdefault("tasks.max", []).append(
            f"Invalid value {tasks_max} for configuration tasks.max: Not a number of type INT")
    elif int(text) < 1:
        errors.setdefault("tasks.max", []).append(
            f"Invalid value {tasks_max} for configuration tasks.max: Value must be at least 1")


def _config_infos(
    connector_class: str,
    config: dict[str, str | None],
    errors: dict[str, list[str]],
    declared: Mapping[str, ConfigKey],
    groups: list[str],
) -> Body:
    """Java's `generateResult`: values without a definition first, then every definition: Connect's
    keys before the plugin's, a key both define where Connect's is, with the plugin's definition
    (its `LinkedHashMap` of the enriched definition, then `config()` put over it)."""
    shown = shown_config(config, [name for name, key in declared.items() if key.type is Type.PASSWORD])
    undefined = [_info(None, key, shown.get(key), messages) for key, messages in errors.items() if key not in declared]
    defined = [
        _info(_key_info(key), name, _value_text(key, config.get(name), shown.get(name)), errors.get(name, []))
        for name, key in declared.items()
    ]
    return {
        "name": connector_class,
        "error_count": sum(len(messages) for messages in errors.values()),
        "groups": groups,
        "configs": undefined + defined,
    }


def _key_info(key: ConfigKey) -> Body:
    """Java's `convertConfigKey`. A key defined without UI fields (`define(name, type, default,
    importance, doc)`, as plugins' keys mostly are): no group, order -1, width NONE, its name as
    display name. A key declaring no importance: HIGH when required, else MEDIUM (how Connect's
    own keys mostly are)."""
    display, required = key.display, key.required or key.name in JAVA_REQUIRED
    return {
        "name": key.name, "type": key.type.name, "required": required,
        "default_value": None if required else _java_text(key.default),  # type: ignore[arg-type]
        "importance": display.importance or ("HIGH" if required else "MEDIUM"), "documentation": key.doc,
        "group": display.group, "order_in_group": display.order, "width": display.width,
        "display_name": display.name or key.name, "dependents": [],
    }


def _value_text(key: ConfigKey, given: str | None, shown: str | None) -> str | None:
    """Java's `convertConfigValue`: the parsed value as text (its default when absent, null when
    it does not parse); a masked value stays masked."""
    if given is None or not given.strip():
        value: Value = None if key.required else key.default  # type: ignore[assignment]
    else:
        value, problem = key.parse(given)
        if problem is not None:
            return None
        if shown != given and key.type is not Type.PASSWORD:
            return shown
    if value is not None and key.type is Type.PASSWORD:
        return "[hidden]"
    return _java_text(value)


def _java_text(value: Value) -> str | None:
    """`ConfigDef.convertToString`: a list comma-joined, a scalar as Connect stores it."""
    return ",".join(value) if isinstance(value, list) else config_value(value)


def _info(definition: Body | None, key: str, value: str | None, messages: list[str]) -> Body:
    return {
        "definition": definition,
        "value": {"name": key, "value": value, "recommended_values": [], "errors": messages, "visible": True},
    }
