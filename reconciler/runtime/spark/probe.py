"""What the preflight runs in the executors' Python workers (`ship`).

Standard library only at import time, on purpose: Spark unpickles these functions in the
executor before they run, which imports this module, so it must import even in an executor
that lacks every dependency it is there to report.
"""

from __future__ import annotations

import importlib
import os
import socket
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExecutorReport:
    """What one Python worker of one executor found."""

    executor: str  # host and the executor's working directory
    python: str
    missing: dict[str, str] = field(default_factory=dict)  # module or class -> the error


def _here() -> str:
    return f"{socket.gethostname()}:{os.getcwd()}"


def probe(modules: Sequence[str]) -> ExecutorReport:
    """Import `modules` (warming them up for the first batch); what failed, and why."""
    missing: dict[str, str] = {}
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any import failure is what we came to report
            missing[module] = f"{type(exc).__name__}: {exc}"
    if not missing:
        import pyarrow as pa

        from reconciler.connectors.registry import available_connectors

        pa.array([b""], pa.binary())  # pyarrow sets its conversion machinery up on first use
        available_connectors()
    return ExecutorReport(_here(), sys.executable, missing)


def load_classes(classes: Sequence[str]) -> ExecutorReport:
    """Load each connector class; the full trace of each failure."""
    missing: dict[str, str] = {}
    for name in classes:
        try:
            from reconciler.connectors.registry import load_connector

            load_connector(name)
        except Exception:
            missing[name] = traceback.format_exc()
    return ExecutorReport(_here(), sys.executable, missing)
