"""Finding a connector class by the name a manifest gives in `spec.class`.

A name is either an entry point in group `reconciler.connectors` (how plugins register,
including the built-ins) or a `module:Class` path (for code that is importable but not
packaged). Anything else is an error that lists the registered names.
"""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint, entry_points

from reconciler.connectors.api import Connector
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
