"""Which names a Kafka topic may have: Apache Kafka's rule (`Topic.validate`), in one place.

Every config key that names a topic to produce to or consume from is checked with it
(`reconciler.connectors.configdef.topic_names`), so a name the broker would refuse is refused
by `reconciler validate`, at the key, rather than by the task at run time.

Pure: a name in, the reason it is not valid (or None) out.
"""

from __future__ import annotations

import re
from typing import Final

MAX_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")


def topic_name_problem(name: str) -> str | None:
    """Why `name` cannot be a topic's name, worded as Kafka words it; None when it can be."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_LENGTH:
        return f"it is {len(name)} characters long, longer than the max allowed length {MAX_LENGTH}"
    if not _LEGAL.fullmatch(name):
        return f"{name!r} contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None
