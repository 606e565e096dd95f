"""A sink plugin that imports a helper only the driver has (`needs_driver_only:Sink`).

The driver ships a `module:Class` plugin's own module to the executors, not what it imports:
`driver_only_helper` lives next to it on the driver's path and nowhere on a cluster's
executors, so there this class cannot be loaded, and its connector's tasks must fail with a
trace naming the module while other connectors go on.
"""

from __future__ import annotations

import driver_only_helper  # noqa: F401  (present on the driver only)
from unpackaged import PickySink


class Sink(PickySink):
    pass
