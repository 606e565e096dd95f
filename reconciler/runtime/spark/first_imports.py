"""What a batch's Python workers will import first, asked of the prefork before it forks them
(`prefork.ask_to_import`): sent when the batch begins, while a `run --once`'s Spark is still
starting, so that the imports happen beside the JVM's start instead of in every worker's first
task. A local session's only; nothing happens where no prefork waits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from reconciler.connectors.registry import load_connector
from reconciler.runtime.spark import prefork

# Every sink task reads its records into Arrow batches, and pyarrow loads pandas at its first
# conversion from Python objects: 0.6-0.7 CPU s of each worker's first task otherwise.
SINK_MODULES = ("numpy", "pyarrow", "pandas")


def modules_for(connectors: Iterable[tuple[str, Mapping[str, str | None]]], *, sinks: bool) -> list[str]:
    """The modules the tasks of `connectors` (`connector.class` and config) import first: Arrow's
    when there are `sinks` among them, each connector's module and its `task_imports`."""
    modules = list(SINK_MODULES) if sinks else []
    for name, config in connectors:
        try:
            connector = load_connector(name)
            modules += [connector.__module__, *connector().task_imports(config)]
        except Exception:  # noqa: S112 — a class that does not load is the batch's to report
            continue
    return list(dict.fromkeys(modules))


def ask_for(connectors: Iterable[tuple[str, Mapping[str, str | None]]], *, sinks: bool) -> None:
    """Ask this process's prefork, if one waits, to import what those tasks will."""
    prefork.ask_to_import(modules_for(connectors, sinks=sinks))
