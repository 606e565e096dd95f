"""Finding a connector class by the name a manifest gives in `spec.class`.

A name is either an entry point in group `reconciler.connectors` (how plugins register,
including the built-ins) or a `module:Class` path (for code that is importable but not
packaged). A dotted Java class name (`org.apache.kafka.connect.file.FileStreamSourceConnector`)
names a connector that a Java Connect worker sharing the topics runs: there is no Python
plugin to load for it (`is_java_class_name`). Anything else is an error that lists the
registered names.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from reconciler.connectors.api import Connector
from reconciler.core.live import UNDEFINED_VERSION
from reconciler.core.kinds import Kind, class_kind, is_python_reference, runs_on_connect
from reconciler.errors import ReconcilerError

ENTRY_POINT_GROUP = "reconciler.connectors"
# A fully-qualified Java class name: package segments and a class, dot-separated (`$` for nested).
_JAVA_CLASS_NAME = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)+")


class UnknownConnector(ReconcilerError):
    """`spec.class` names no registered connector and no importable `module:Class`."""


@functools.cache
def _entry_points() -> dict[str, EntryPoint]:
    # Cached: scanning the installed distributions costs milliseconds, and `validate` looks
    # up a plugin per connector.
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


@functools.lru_cache(maxsize=1024)
def _registered(name: str) -> EntryPoint | None:
    found = _entry_points().get(name)
    if found is None:  # perhaps installed since the scan (a long-running `watch`): scan again, once per name
        _entry_points.cache_clear()
        found = _entry_points().get(name)
    return found


def available_connectors() -> list[str]:
    """Registered connector names, sorted."""
    return sorted(_entry_points())


def built_in_connectors() -> dict[str, type[Connector]]:
    """The plugins this package registers itself (its own entry points), by name: what the
    checked-in JSON Schema describes, whatever else happens to be installed."""
    own = [ep for ep in _entry_points().values() if ep.value.startswith("reconciler.")]
    return {ep.name: load_connector(ep.name) for ep in sorted(own, key=lambda ep: ep.name)}


def is_java_class_name(class_name: str) -> bool:
    """A dotted, fully-qualified Java class name that is not a registered plugin's name: a
    connector for a Java Connect worker sharing the topics, which no Python plugin implements."""
    name = class_name.strip()
    return bool(_JAVA_CLASS_NAME.fullmatch(name)) and _registered(name) is None


@functools.lru_cache(maxsize=1024)
def python_spelling(class_name: str) -> str | None:
    """`pkg.module:Class` when a dotted name (taken for a Java class) is in fact an importable
    Python connector class: written with a dot where `module:Class` wants a colon."""
    name = class_name.strip()
    module_name, _, attribute = name.rpartition(".")
    if not module_name or importlib.util.find_spec(module_name.split(".")[0]) is None:
        return None  # no Python package of that name (org, com, io…): a Java class
    try:
        target = getattr(importlib.import_module(module_name), attribute, None)
    except Exception:  # not importable after all: leave it to a Java worker
        return None
    is_connector = isinstance(target, type) and issubclass(target, Connector)
    return f"{module_name}:{attribute}" if is_connector else None


def load_connector(class_name: str) -> type[Connector]:
    """The connector class named by an entry point or a `module:Class` path."""
    name = class_name.strip()
    return _load(name)


@functools.lru_cache(maxsize=256)
def _load(name: str) -> type[Connector]:
    # Cached per name (successes only: lru_cache does not keep exceptions), so checking
    # 10,000 manifests imports and checks each plugin once.
    entry_point = _registered(name)
    if entry_point is not None:
        return _checked(name, _load_entry_point(entry_point))
    if ":" in name:
        return _checked(name, _import_path(name))
    if is_java_class_name(name):
        raise UnknownConnector(
            f"{name!r} is a Java connector class: a Java Connect worker sharing these topics runs it, "
            "not the reconciler"
        )
    raise UnknownConnector(
        f"unknown connector class {name!r}",
        hint="use a registered name ("
        + (", ".join(available_connectors()) or "none registered")
        + "), a 'module:Class' path, or a Java class name (run by a Java Connect worker)",
    )


@functools.lru_cache(maxsize=1)
def _registered_names() -> frozenset[str]:
    return frozenset(_entry_points())


def runs_on_connect_worker(class_name: str) -> bool:
    """A class our runtime leaves to the Kafka Connect workers of the group (`core.kinds`)."""
    return runs_on_connect(class_name, _registered_names())


@functools.lru_cache(maxsize=1024)
def plugin_kind(class_name: str) -> Kind | None:
    """The type a Python connector declares; None when `class_name` is not one we can load."""
    if not is_python_reference(class_name, _registered_names()):
        return None
    try:
        return load_connector(class_name).kind
    except Exception:  # unloadable or broken here: the caller falls back on the class name rule
        return None


@functools.lru_cache(maxsize=1024)
def plugin_version(class_name: str) -> str | None:
    """The version the statuses of a connector of `class_name` report (Connect's
    `Connector.version()`): the class's own `version`, else the version of the distribution
    that installed it, else Connect's "undefined" (`PluginDesc.UNDEFINED_VERSION`); None when
    no Python plugin of that name loads here (a Java class, a broken plugin)."""
    try:
        cls = load_connector(class_name)
    except Exception:
        return None
    if cls.version is not None:
        return cls.version
    entry_point = _registered(class_name.strip())
    if entry_point is not None and entry_point.dist is not None:
        return entry_point.dist.version
    return _distribution_version(cls.__module__.partition(".")[0]) or UNDEFINED_VERSION


def _distribution_version(top_level: str) -> str | None:
    """The version of the (first) installed distribution that provides package `top_level`."""
    for distribution in importlib.metadata.packages_distributions().get(top_level, ()):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def connector_kind(class_name: str, config: Mapping[str, object]) -> Kind:
    """Source or sink by the class, as Connect decides; `core.kinds.class_kind` when it cannot
    be loaded here (a Java class run by a Connect worker)."""
    return plugin_kind(class_name) or class_kind(class_name, config)


def _load_entry_point(entry_point: EntryPoint) -> object:
    try:
        return entry_point.load()
    except Exception as exc:  # a broken plugin must not look like a missing one
        raise UnknownConnector(
            f"connector {entry_point.name!r} ({entry_point.value}) failed to load: {exc}"
        ) from exc


def _import_path(path: str) -> object:
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise UnknownConnector(f"connector class {path!r}: expected 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError, TypeError) as exc:  # ValueError/TypeError: not a module name
        raise UnknownConnector(
            f"connector class {path!r}: cannot import module {module_name!r}: {exc}"
        ) from exc
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as exc:
            raise UnknownConnector(
                f"connector class {path!r}: module {module_name!r} has no {attribute!r}"
            ) from exc
    return target


def _checked(name: str, target: object) -> type[Connector]:
    if isinstance(target, type) and issubclass(target, Connector) and hasattr(target, "kind"):
        return target
    raise UnknownConnector(
        f"{name!r} is not a connector class (a SourceConnector or SinkConnector subclass)"
    )
