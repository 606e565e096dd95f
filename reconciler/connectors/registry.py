"""Finding a connector class by the name a manifest gives in `spec.class`.

A name is either an entry point in group `reconciler.connectors` (how plugins register,
including the built-ins) or a `module:Class` path (for code that is importable but not
packaged). Anything else is an error that lists the registered names.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points

from reconciler.connectors.api import Connector
from reconciler.core.kinds import Kind, class_kind, is_python_reference, runs_on_connect
from reconciler.errors import ReconcilerError

ENTRY_POINT_GROUP = "reconciler.connectors"


class UnknownConnector(ReconcilerError):
    """`spec.class` names no registered connector and no importable `module:Class`."""


def _entry_points() -> dict[str, EntryPoint]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def available_connectors() -> list[str]:
    """Registered connector names, sorted."""
    return sorted(_entry_points())


def load_connector(class_name: str) -> type[Connector]:
    """The connector class named by an entry point or a `module:Class` path."""
    name = class_name.strip()
    registered = _entry_points()
    if name in registered:
        return _checked(name, _load_entry_point(registered[name]))
    if ":" in name:
        return _checked(name, _import_path(name))
    raise UnknownConnector(
        f"unknown connector class {name!r}",
        hint="use a registered name ("
        + (", ".join(sorted(registered)) or "none registered")
        + ") or a 'module:Class' path",
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
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
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
